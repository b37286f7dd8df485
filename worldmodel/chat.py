"""Chat backends and their response cache, shared by every world that asks an LLM in words.

All backends answer ``ask(prompts) -> responses``:

* :class:`OpenAIChatBackend` — any OpenAI-compatible ``/chat/completions`` endpoint
  (OpenAI, Together, vLLM, Ollama, llama.cpp server), standard library only. The API
  key is read from an environment variable and sent only in the ``Authorization``
  header; it is never stored in results, caches, logs or error messages.
  Temperature 0; bounded retries with exponential backoff on 429, 5xx, timeouts,
  dropped connections and malformed bodies; at most ``concurrency`` requests in
  flight (a thread pool).
* :class:`HFChatBackend` — a local ``transformers`` chat model loaded from a folder:
  the tokenizer's chat template, greedy decoding, batched.

:class:`CachedBackend` wraps any of them with a :class:`ResponseCache`: prompts
already answered are never sent again, and answers are written as they arrive, so an
interrupted run resumes where it stopped.

**The cache** holds one JSON object per line: ``{"key", "backend", "model", "prompt",
"response"}`` where ``key`` is the SHA-256 of backend name, model name and prompt.
Entries are appended (and flushed) as responses arrive, from any thread; a run killed
mid-write leaves at most one partial last line, which is dropped when the file is
next opened. A malformed line anywhere else is an error naming the file and line,
never skipped silently. Nothing secret is ever written: API keys are not part of any
entry.

:class:`ChatReport` is the outcome of one run of questions in words (per metric a result,
the unparseable and all answers, every trial); a world's protocol plans its trials, then
:meth:`ChatReport.ask` (on its subclass) asks every prompt in one batch and scores the
answers with the world's scorer; the commands write its ``summary()`` and ``write_trials()``.

World-specific responders (the true world model and a random one, which answer from
the world's automaton) live with their worlds (``worlds/seating/responders.py``,
``worlds/textworld/llm.py``).
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import random
import socket
import threading
import time
import urllib.error
import urllib.request
from abc import ABC, abstractmethod
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from tqdm.auto import tqdm

from .errors import WorldModelError
from .results import MetricResult, aggregate

class Backend(ABC):
    """Something that answers chat prompts. ``backend`` and ``model`` name it in caches and results."""

    backend: str = "backend"
    model: str = ""

    @abstractmethod
    def ask(self, prompts: Sequence[str]) -> list[str]:
        """One response per prompt, in order."""

    #: how many prompts :class:`CachedBackend` hands over at a time (each batch is cached when done)
    batch_size: int = 64

    def describe(self) -> dict:
        """Settings safe to write into results (never a secret)."""
        return {"backend": self.backend, "model": self.model}

    def close(self) -> None:
        pass


class PromptByPromptBackend(Backend):
    """A backend that answers each prompt on its own (:meth:`answer`); ``ask`` maps it over a batch."""

    @abstractmethod
    def answer(self, prompt: str) -> str:
        """The response to one prompt."""

    def ask(self, prompts: Sequence[str]) -> list[str]:
        return [self.answer(p) for p in prompts]


class SeededRandomBackend(PromptByPromptBackend):
    """Base of the random responders: each answer is drawn from a generator seeded by (seed, prompt).

    So an answer is a function of the seed and the prompt only, the same however the
    prompts are ordered, batched or cached.
    """

    backend = "random"
    batch_size = 4096

    def __init__(self, seed: int = 0):
        self.seed = int(seed)
        self.model = f"uniform-seed{self.seed}"

    def rng(self, prompt: str) -> random.Random:
        return random.Random(hashlib.sha256(f"{self.seed}\x00{prompt}".encode()).digest())


# ---------------------------------------------------------------------------
# Responders that need no model
# ---------------------------------------------------------------------------

def cache_key(backend: str, model: str, prompt: str) -> str:
    h = hashlib.sha256()
    for part in (backend, model, prompt):
        h.update(part.encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()


class ResponseCache:
    """Prompt/response pairs keyed by (backend, model, prompt); ``path=None`` keeps them in memory."""

    def __init__(self, path: str | Path | None):
        self.path = Path(path) if path else None
        self._data: dict[str, str] = {}
        self._lock = threading.Lock()
        self._fh = None
        if self.path is not None and self.path.exists():
            self._load()

    def _load(self) -> None:
        raw = self.path.read_bytes()
        if raw and not raw.endswith(b"\n"):
            # a run killed mid-write: drop the partial last line
            cut = raw.rfind(b"\n") + 1
            raw = raw[:cut]
            with self.path.open("r+b") as f:
                f.truncate(cut)
        for lineno, line in enumerate(raw.decode("utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                self._data[str(entry["key"])] = str(entry["response"])
            except (json.JSONDecodeError, KeyError, TypeError):
                raise WorldModelError(f"response cache {self.path}:{lineno} is not a cache entry") from None

    def __len__(self) -> int:
        return len(self._data)

    def get(self, backend: str, model: str, prompt: str) -> str | None:
        return self._data.get(cache_key(backend, model, prompt))

    def put(self, backend: str, model: str, prompt: str, response: str) -> None:
        key = cache_key(backend, model, prompt)
        with self._lock:
            if key in self._data:
                return
            self._data[key] = response
            if self.path is None:
                return
            if self._fh is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._fh = self.path.open("a", encoding="utf-8")
            entry = {"key": key, "backend": backend, "model": model, "prompt": prompt, "response": response}
            self._fh.write(json.dumps(entry) + "\n")
            self._fh.flush()

    def close(self) -> None:
        with self._lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None


# ---------------------------------------------------------------------------
# OpenAI-compatible HTTP endpoint
# ---------------------------------------------------------------------------


class _Retry(Exception):
    def __init__(self, why: str, wait: float | None = None):
        super().__init__(why)
        self.why = why
        self.wait = wait


RETRY_STATUS = frozenset({408, 409, 425, 429}) | frozenset(range(500, 600))


class OpenAIChatBackend(Backend):
    """An OpenAI-compatible chat-completions endpoint.

    ``base_url`` is the API root (``https://api.openai.com/v1``,
    ``http://localhost:8000/v1`` for vLLM, ``http://localhost:11434/v1`` for Ollama);
    requests go to ``<base_url>/chat/completions``. The key is read from the
    environment variable ``api_key_env`` (no ``Authorization`` header when it is
    unset or empty, as local servers expect). A request is retried up to
    ``max_retries`` times with exponential backoff (``backoff * 2**attempt`` seconds,
    capped at ``max_backoff``; a ``Retry-After`` header is honoured within the cap)
    on 408/409/425/429, 5xx, timeouts, connection errors and bodies that are not a
    chat completion; other HTTP errors stop the run with one line naming the status.
    """

    backend = "openai"
    #: sampling temperature of every request; 0 (greedy) unless a protocol that draws several
    #: independent answers to one prompt sets it (the block-drop generator's trials)
    temperature: float = 0.0

    def __init__(self, base_url: str, model: str, api_key_env: str = "OPENAI_API_KEY", *,
                 max_tokens: int = 1000, timeout: float = 120.0, max_retries: int = 6,
                 backoff: float = 1.0, max_backoff: float = 60.0, concurrency: int = 4,
                 sleep: Callable[[float], None] = time.sleep):
        if not base_url or not base_url.startswith(("http://", "https://")):
            raise WorldModelError(f"--base-url must start with http:// or https://, got {base_url!r}")
        if not model:
            raise WorldModelError("the openai backend needs --model NAME")
        if concurrency < 1:
            raise WorldModelError(f"concurrency must be at least 1, got {concurrency}")
        if max_retries < 0:
            raise WorldModelError(f"max_retries must be >= 0, got {max_retries}")
        self.base_url = base_url.rstrip("/")
        self.url = self.base_url + "/chat/completions"
        self.model = model
        self.api_key_env = api_key_env
        self.__key = os.environ.get(api_key_env, "") if api_key_env else ""
        self.max_tokens = int(max_tokens)
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.concurrency = int(concurrency)
        self.batch_size = max(16, 4 * self.concurrency)
        self._sleep = sleep
        self.requests_sent = 0
        self.retries = 0
        self._count_lock = threading.Lock()

    def __repr__(self) -> str:  # never show the key
        return f"OpenAIChatBackend(base_url={self.base_url!r}, model={self.model!r})"

    def describe(self):
        return {"backend": self.backend, "model": self.model, "base_url": self.base_url,
                "api_key_env": self.api_key_env, "temperature": self.temperature, "max_tokens": self.max_tokens}

    def _headers(self) -> dict[str, str]:
        h = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.__key:
            h["Authorization"] = f"Bearer {self.__key}"
        return h

    def _once(self, prompt: str) -> str:
        payload = {"model": self.model, "messages": [{"role": "user", "content": prompt}],
                   "temperature": self.temperature}
        if self.max_tokens > 0:  # 0 leaves the limit to the server (some models refuse max_tokens)
            payload["max_tokens"] = self.max_tokens
        body = json.dumps(payload).encode()
        req = urllib.request.Request(self.url, data=body, headers=self._headers(), method="POST")
        with self._count_lock:
            self.requests_sent += 1
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            status = exc.code
            wait = None
            retry_after = exc.headers.get("Retry-After") if exc.headers else None
            if retry_after:
                try:
                    wait = float(retry_after)
                except ValueError:
                    wait = None
            detail = _short(exc.read() if exc.fp else b"")
            exc.close()
            if status in RETRY_STATUS:
                raise _Retry(f"HTTP {status}", wait) from None
            raise WorldModelError(f"{self.url} answered HTTP {status} for model {self.model!r}: {detail}") from None
        except (urllib.error.URLError, http.client.HTTPException, ConnectionError, socket.timeout, TimeoutError) as exc:
            reason = getattr(exc, "reason", exc)
            raise _Retry(f"{type(exc).__name__}: {reason}") from None
        try:
            data = json.loads(raw)
            message = data["choices"][0]["message"]
            content = message.get("content")
        except (json.JSONDecodeError, UnicodeDecodeError, KeyError, IndexError, TypeError, AttributeError):
            raise _Retry(f"malformed response body: {_short(raw)}") from None
        if content is None:
            return ""
        if not isinstance(content, str):
            raise _Retry("malformed response body: content is not a string")
        return content

    def ask_one(self, prompt: str) -> str:
        last = ""
        for attempt in range(self.max_retries + 1):
            try:
                return self._once(prompt)
            except _Retry as r:
                last = r.why
                if attempt == self.max_retries:
                    break
                with self._count_lock:
                    self.retries += 1
                delay = min(self.max_backoff, self.backoff * (2 ** attempt))
                if r.wait is not None:
                    delay = min(self.max_backoff, max(delay, r.wait))
                self._sleep(delay)
        raise WorldModelError(
            f"{self.url} failed {self.max_retries + 1} times for model {self.model!r} (last: {last}); "
            "answers so far are cached, rerun to resume"
        )

    def ask(self, prompts):
        if not prompts:
            return []
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            return list(pool.map(self.ask_one, prompts))


def _short(raw: bytes | str, limit: int = 200) -> str:
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    text = " ".join(text.split())
    return text[:limit] + ("..." if len(text) > limit else "")


# ---------------------------------------------------------------------------
# Local transformers chat model
# ---------------------------------------------------------------------------


class HFChatBackend(Backend):
    """A local chat model (``AutoModelForCausalLM`` + tokenizer with a chat template), greedy."""

    backend = "hf"
    #: 0: greedy decoding; above 0, sampling at this temperature (seeded by ``torch.manual_seed``)
    temperature: float = 0.0

    def __init__(self, path: str | Path, max_new_tokens: int = 512, batch_size: int = 8, device: str = "cpu"):
        import torch  # noqa: F401  (fail early with the import error if torch is missing)
        from transformers import AutoModelForCausalLM, AutoTokenizer

        folder = Path(path)
        if not folder.is_dir():
            raise WorldModelError(f"--model-path {folder} does not exist or is not a folder")
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(folder)
            self.lm = AutoModelForCausalLM.from_pretrained(folder).to(device).eval()
        except (OSError, ValueError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise WorldModelError(f"--model-path {folder}: cannot load a chat model ({first})") from None
        if not getattr(self.tokenizer, "chat_template", None):
            raise WorldModelError(f"--model-path {folder}: the tokenizer has no chat template")
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            if self.tokenizer.eos_token is None:
                raise WorldModelError(f"--model-path {folder}: the tokenizer has neither a pad nor an eos token")
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.model = str(folder.resolve())
        self.max_new_tokens = int(max_new_tokens)
        self.batch_size = int(batch_size)
        self.device = device
        cfg = self.lm.config
        self.context = int(getattr(cfg, "n_positions", 0) or getattr(cfg, "max_position_embeddings", 0) or 1 << 30)

    def describe(self):
        decoding = "greedy" if self.temperature <= 0 else f"sampled at temperature {self.temperature}"
        return {"backend": self.backend, "model": self.model, "decoding": decoding,
                "max_new_tokens": self.max_new_tokens}

    def ask(self, prompts):
        import torch

        out: list[str] = []
        for i in range(0, len(prompts), self.batch_size):
            chunk = prompts[i:i + self.batch_size]
            texts = [self.tokenizer.apply_chat_template([{"role": "user", "content": p}], tokenize=False,
                                                        add_generation_prompt=True) for p in chunk]
            enc = self.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.device)
            width = enc["input_ids"].shape[1]
            new = min(self.max_new_tokens, self.context - width)
            if new < 1:
                raise WorldModelError(
                    f"model {self.model}: a prompt of {width} tokens leaves no room in its context of {self.context}"
                )
            with torch.no_grad():
                sample = {"do_sample": True, "temperature": self.temperature, "top_k": 0} \
                    if self.temperature > 0 else {"do_sample": False}
                gen = self.lm.generate(**enc, **sample, max_new_tokens=new,
                                       pad_token_id=self.tokenizer.pad_token_id)
            out += self.tokenizer.batch_decode(gen[:, width:], skip_special_tokens=True)
        return out


# ---------------------------------------------------------------------------
# Caching wrapper
# ---------------------------------------------------------------------------


class CachedBackend(Backend):
    """Answers from ``cache`` when it can; asks ``inner`` only for new prompts and caches them.

    ``asked`` counts the prompts actually sent to the inner backend.
    """

    def __init__(self, inner: Backend, cache: ResponseCache, progress: bool = True):
        self.inner = inner
        self.cache = cache
        self.backend = inner.backend
        self.model = inner.model
        self.progress = progress
        self.asked = 0

    def describe(self):
        return self.inner.describe()

    def ask(self, prompts):
        answers: dict[str, str] = {}
        todo: list[str] = []
        for p in prompts:
            if p in answers:
                continue
            hit = self.cache.get(self.backend, self.model, p)
            if hit is None:
                if p not in todo:
                    todo.append(p)
            else:
                answers[p] = hit
        todo = list(dict.fromkeys(todo))
        bar = tqdm(total=len(todo), desc=f"asking {self.backend}:{_short(self.model, 40)}", unit="prompt",
                   disable=not self.progress or not todo)
        step = max(1, self.inner.batch_size)
        for i in range(0, len(todo), step):
            chunk = todo[i:i + step]
            got = self.inner.ask(chunk)
            if len(got) != len(chunk):
                raise RuntimeError(f"backend {self.backend} returned {len(got)} answers for {len(chunk)} prompts")
            for p, r in zip(chunk, got):
                self.cache.put(self.backend, self.model, p, r)
                answers[p] = r
            self.asked += len(chunk)
            bar.update(len(chunk))
        bar.close()
        return [answers[p] for p in prompts]

    def close(self):
        self.inner.close()
        self.cache.close()


# ---------------------------------------------------------------------------
# The report of a run of questions in words
# ---------------------------------------------------------------------------


@dataclass
class ChatReport:
    """The outcome of one run of questions in words, whatever the world.

    Per metric: a :class:`~worldmodel.results.MetricResult`, the answers that did not
    parse (``unparseable``) and all answers (``answers``); ``trials`` holds every trial
    record (with its prompts). ``settings`` is the world's settings dataclass; a world
    whose settings need adjusting before they are written overrides :meth:`settings_dict`.
    """

    settings: Any
    backend: dict
    metrics: dict[str, MetricResult]
    unparseable: dict[str, int]
    answers: dict[str, int]
    trials: dict[str, list[dict]] = field(repr=False, default_factory=dict)

    @classmethod
    def ask(cls, backend: Backend, settings: Any, trials: dict[str, list[dict]],
            score: Callable[[str, dict, list[str]], int]) -> ChatReport:
        """Ask ``backend`` the prompts of every planned trial, in one batch, and score the answers.

        ``trials`` maps each metric to its trial records; a record whose ``status`` is
        ``"ok"`` holds its ``prompts``. ``score(metric, trial, responses)`` records the
        trial's score in it (or marks it skipped) and returns how many of its responses
        did not parse. Each metric is then aggregated by :func:`~worldmodel.results.aggregate`.
        """
        prompts = [p for ts in trials.values() for t in ts if t["status"] == "ok" for p in t["prompts"]]
        responses = dict(zip(prompts, backend.ask(prompts))) if prompts else {}
        metrics, unparseable, answers = {}, {}, {}
        for m, ts in trials.items():
            bad = total = 0
            for t in ts:
                if t["status"] != "ok":
                    continue
                rs = [responses[p] for p in t["prompts"]]
                total += len(rs)
                bad += score(m, t, rs)
            metrics[m] = aggregate(m, ts)
            unparseable[m], answers[m] = bad, total
        return cls(settings, backend.describe(), metrics, unparseable, answers, trials)

    def settings_dict(self) -> dict[str, Any]:
        """The settings as :meth:`summary` writes them."""
        return asdict(self.settings)

    def summary(self) -> dict[str, Any]:
        """``{"settings", "backend", "metrics"}``; each metric's result with ``n_unparseable`` and ``n_answers``."""
        return {"settings": self.settings_dict(), "backend": self.backend,
                "metrics": {name: {**m.to_dict(), "n_unparseable": self.unparseable[name],
                                   "n_answers": self.answers[name]} for name, m in self.metrics.items()}}

    def write_trials(self, path: str | Path) -> None:
        """Every trial as one JSON line, ``{"metric": ..., **trial}`` without its prompts; replaced whole."""
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        with tmp.open("w") as f:
            for metric, trials in self.trials.items():
                for t in trials:
                    f.write(json.dumps({"metric": metric, **{k: v for k, v in t.items() if k != "prompts"}}) + "\n")
        tmp.replace(path)


# ---------------------------------------------------------------------------
# A tiny chat model, for tests and for proving the local path end to end
# ---------------------------------------------------------------------------

TINY_CHAT_TEMPLATE = (
    "{% for message in messages %}<|{{ message['role'] }}|> {{ message['content'] }} <|end|> {% endfor %}"
    "{% if add_generation_prompt %}<|assistant|> {% endif %}"
)


def make_word_chat_model(folder: str | Path, texts: Sequence[str], example: Callable | None = None, *,
                         seed: int = 0, train_steps: int = 0, n_layer: int = 1, n_embd: int = 32,
                         n_positions: int = 512, extra_words: Sequence[str] = (), desc: str = "") -> Path:
    """Build and save a tiny word-level GPT-2 chat model that :class:`HFChatBackend` can load.

    The vocabulary is every whitespace-separated word of ``texts`` plus ``extra_words``
    (other words read as ``[UNK]``); the tokenizer carries a chat template. With
    ``train_steps = 0`` the network is random. Otherwise ``example(rng)`` (``rng`` a
    NumPy generator seeded by ``seed``) returns one ``(prompt, answer)`` pair, and the
    model takes ``train_steps`` AdamW steps on batches of 8 such chats — a world passes
    prompts with *random* well-formed answers, so the model learns the answer format,
    not the world. Returns the folder.
    """
    import numpy as np
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    import shutil

    folder = Path(folder)
    if folder.exists() and any(folder.iterdir()):
        raise WorldModelError(f"{folder} exists and is not empty: not overwriting it with a tiny chat model")
    words = {w for s in texts for w in s.split()} | set(extra_words)
    specials = ["[PAD]", "[UNK]", "<|end|>", "<|user|>", "<|assistant|>"]
    vocab = {w: i for i, w in enumerate(specials + sorted(words - set(specials)))}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tk.decoder = decoders.WordPiece(prefix="##", cleanup=False)
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]", pad_token="[PAD]", eos_token="<|end|>")
    tok.chat_template = TINY_CHAT_TEMPLATE
    torch.manual_seed(seed)
    cfg = GPT2Config(vocab_size=len(vocab), n_positions=n_positions, n_embd=n_embd, n_layer=n_layer, n_head=2,
                     bos_token_id=vocab["<|end|>"], eos_token_id=vocab["<|end|>"], pad_token_id=vocab["[PAD]"])
    lm = GPT2LMHeadModel(cfg)
    if train_steps > 0:
        if example is None:
            raise WorldModelError("make_word_chat_model: train_steps > 0 needs an example(rng) function")
        rng = np.random.default_rng(seed)
        opt = torch.optim.AdamW(lm.parameters(), lr=3e-3)
        lm.train()
        for _ in tqdm(range(train_steps), desc=desc or "teaching the tiny chat model the answer format", leave=False):
            chats = []
            for _ in range(8):
                prompt, answer = example(rng)
                chat = tok.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False,
                                               add_generation_prompt=True)
                chats.append(chat + answer + " <|end|>")
            enc = tok(chats, return_tensors="pt", padding=True, add_special_tokens=False)
            labels = enc["input_ids"].masked_fill(enc["attention_mask"] == 0, -100)
            loss = lm(**enc, labels=labels).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
    lm.eval()
    tmp = folder.with_name(folder.name + ".partial")  # written whole, then renamed: never half a model
    shutil.rmtree(tmp, ignore_errors=True)
    lm.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    if folder.exists():
        folder.rmdir()
    tmp.rename(folder)
    return folder
