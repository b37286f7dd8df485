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
from concurrent.futures import ThreadPoolExecutor, as_completed
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

    def answers(self, prompts: Sequence[str]):
        """``(index, response)`` pairs as the answers arrive (any order); :class:`CachedBackend` caches each at once.

        The default asks the whole batch with :meth:`ask`; a backend that answers prompts one by
        one (HTTP) overrides it.
        """
        got = self.ask(prompts)
        if len(got) != len(prompts):
            raise RuntimeError(f"backend {self.backend} returned {len(got)} answers for {len(prompts)} prompts")
        yield from enumerate(got)

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
    """Prompt/response pairs keyed by (backend, model, prompt); ``path=None`` keeps them in memory.

    A cache file has one writer: opening it claims it (:func:`worldmodel.safety.claim`), so two
    runs given the same ``--cache`` do not interleave their lines; the second stops with one
    line naming the first. A torn last line is dropped by writing the good lines to a new file
    renamed over the old one. A key cached twice with different answers, a response over
    :data:`MAX_RESPONSE_BYTES`, or a line that is not an entry is an error naming the line.
    """

    def __init__(self, path: str | Path | None):
        from .safety import claim

        self.path = Path(path) if path else None
        self._data: dict[str, str] = {}
        self._lock = threading.Lock()
        self._fh = None
        self._claim = None
        if self.path is not None:
            self._claim = claim(self.path, "response cache")
            try:
                if self.path.exists():
                    self._load()
            except BaseException:
                self._claim.release()
                raise

    def _load(self) -> None:
        from .safety import decode_utf8, loads_json, read_bytes, rewrite_lines

        raw = read_bytes(self.path, "log", "response cache")
        torn = bool(raw) and not raw.endswith(b"\n")
        if torn:   # a run killed mid-write: drop the partial last line (a new file, renamed over the old)
            raw = raw[:raw.rfind(b"\n") + 1]
        lines = decode_utf8(raw, f"response cache {self.path}").splitlines()
        for lineno, line in enumerate(lines, 1):
            if not line.strip():
                continue
            where = f"response cache {self.path}:{lineno}"
            entry = loads_json(line, where)
            if not isinstance(entry, dict) or not isinstance(entry.get("key"), str) \
                    or not isinstance(entry.get("response"), str):
                raise WorldModelError(f"{where} is not a cache entry")
            key, response = entry["key"], entry["response"]
            if len(response.encode("utf-8", "surrogatepass")) > MAX_RESPONSE_BYTES:
                raise WorldModelError(f"{where} holds a response of more than {MAX_RESPONSE_BYTES:,} bytes")
            if key in self._data and self._data[key] != response:
                raise WorldModelError(f"{where} caches a second, different answer to one prompt "
                                      "(two runs wrote this cache?)")
            self._data[key] = response
        if torn:
            rewrite_lines(self.path, lines, "response cache")

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
            from .safety import writing

            with writing(self.path, "response cache"):
                if self._fh is None:
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                    self._fh = self.path.open("a", encoding="utf-8")
                entry = {"key": key, "backend": backend, "model": model, "prompt": prompt, "response": response}
                self._fh.write(json.dumps(entry) + "\n")
                self._fh.flush()

    def close(self) -> None:
        with self._lock:
            if self._fh is not None:
                try:
                    self._fh.close()
                except OSError:
                    pass
                self._fh = None
            if self._claim is not None:
                self._claim.release()
                self._claim = None


# ---------------------------------------------------------------------------
# OpenAI-compatible HTTP endpoint
# ---------------------------------------------------------------------------


class _Retry(Exception):
    def __init__(self, why: str, wait: float | None = None):
        super().__init__(why)
        self.why = why
        self.wait = wait


class _Cancelled(Exception):
    """The run has failed or was interrupted: requests still in flight stop without retrying."""


RETRY_STATUS = frozenset({408, 409, 425, 429}) | frozenset(range(500, 600))
#: The most bytes one answer may take (the HTTP body, and a cached response); more is refused.
MAX_RESPONSE_BYTES = 4 << 20


class _Request:
    """One HTTP request in flight: its sockets, so that a deadline or a cancel can cut them.

    The socket itself is kept (not the connection object): once the headers are read,
    ``http.client`` hands the socket to the response and drops it from the connection.
    """

    def __init__(self):
        self.socks: list = []
        self.expired = False
        self.cancelled = False
        self._lock = threading.Lock()

    def add(self, sock) -> None:
        with self._lock:
            self.socks.append(sock)
            cut = self.expired or self.cancelled
        if cut:
            self._cut(sock)

    def cut(self, expired: bool = False) -> None:
        with self._lock:
            if expired:
                self.expired = True
            else:
                self.cancelled = True
            socks = list(self.socks)
        for sock in socks:
            self._cut(sock)

    @staticmethod
    def _cut(sock) -> None:
        try:
            sock.shutdown(socket.SHUT_RDWR)   # a recv blocked in another thread returns at once
        except OSError:
            pass


_current = threading.local()


def _tracked(cls):
    """A connection class whose sockets join the calling thread's :class:`_Request` as they connect."""

    def make(*args, **kwargs):
        conn = cls(*args, **kwargs)
        req = getattr(_current, "request", None)
        if req is not None:
            connect = conn.connect

            def tracked_connect():
                connect()
                if conn.sock is not None:
                    req.add(conn.sock)

            conn.connect = tracked_connect
        return conn

    return make


class _HTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req):
        return self.do_open(_tracked(http.client.HTTPConnection), req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req):
        return self.do_open(_tracked(http.client.HTTPSConnection), req, context=self._context)


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

    Bounds: ``timeout`` is the whole request's deadline (connecting, sending, and every
    byte of the answer: a server that drips bytes is cut off when it passes), and an
    answer of more than ``max_response_bytes`` stops the run with one line (nothing of it
    is cached). When one prompt fails for good, or the run is interrupted (Ctrl-C), every
    request in flight is cut and no prompt is retried again: the run stops at once.
    """

    backend = "openai"
    #: sampling temperature of every request; 0 (greedy) unless a protocol that draws several
    #: independent answers to one prompt sets it (the block-drop generator's trials)
    temperature: float = 0.0

    def __init__(self, base_url: str, model: str, api_key_env: str = "OPENAI_API_KEY", *,
                 max_tokens: int = 1000, timeout: float = 120.0, max_retries: int = 6,
                 backoff: float = 1.0, max_backoff: float = 60.0, concurrency: int = 4,
                 max_response_bytes: int = MAX_RESPONSE_BYTES,
                 sleep: Callable[[float], None] = time.sleep):
        if not base_url or not base_url.startswith(("http://", "https://")):
            raise WorldModelError(f"--base-url must start with http:// or https://, got {base_url!r}")
        if not model:
            raise WorldModelError("the openai backend needs --model NAME")
        if concurrency < 1:
            raise WorldModelError(f"concurrency must be at least 1, got {concurrency}")
        if max_retries < 0:
            raise WorldModelError(f"max_retries must be >= 0, got {max_retries}")
        if not timeout > 0:
            raise WorldModelError(f"--timeout must be positive, got {timeout}")
        if max_response_bytes < 1:
            raise WorldModelError(f"--max-response-bytes must be at least 1, got {max_response_bytes}")
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
        self.max_response_bytes = int(max_response_bytes)
        # answers are cached one by one as they arrive and the pool bounds what is in flight: no batching needed
        self.batch_size = 1 << 16
        self._sleep = sleep
        self.requests_sent = 0
        self.retries = 0
        self._count_lock = threading.Lock()
        self._opener = urllib.request.build_opener(_HTTPHandler, _HTTPSHandler)
        self._inflight: set[_Request] = set()
        self._inflight_lock = threading.Lock()

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

    def _too_big(self, got: int | str) -> WorldModelError:
        return WorldModelError(f"{self.url} answered more than {self.max_response_bytes:,} bytes ({got}) for one "
                               f"prompt to model {self.model!r}; refused (raise --max-response-bytes if that is meant)")

    def _read_body(self, resp, request: _Request) -> bytes:
        length = resp.headers.get("Content-Length")
        if length and length.strip().isdigit() and int(length) > self.max_response_bytes:
            raise self._too_big(f"Content-Length {int(length):,}")
        chunks, got = [], 0
        while True:
            chunk = resp.read1(1 << 16)
            if not chunk:
                break
            got += len(chunk)
            if got > self.max_response_bytes:
                raise self._too_big(f"{got:,} so far")
            chunks.append(chunk)
        if request.expired or request.cancelled:
            raise OSError("cut")
        raw = b"".join(chunks)
        if length and length.strip().isdigit() and len(raw) < int(length):
            raise _Retry(f"the connection closed after {len(raw)} of {int(length)} bytes")
        return raw

    def _once(self, prompt: str, cancel: threading.Event | None = None) -> str:
        payload = {"model": self.model, "messages": [{"role": "user", "content": prompt}],
                   "temperature": self.temperature}
        if self.max_tokens > 0:  # 0 leaves the limit to the server (some models refuse max_tokens)
            payload["max_tokens"] = self.max_tokens
        body = json.dumps(payload).encode()
        req = urllib.request.Request(self.url, data=body, headers=self._headers(), method="POST")
        with self._count_lock:
            self.requests_sent += 1
        request = _Request()
        timer = threading.Timer(self.timeout, request.cut, kwargs={"expired": True})
        timer.daemon = True
        with self._inflight_lock:
            self._inflight.add(request)
        if cancel is not None and cancel.is_set():
            request.cut()
        _current.request = request
        timer.start()
        try:
            with self._opener.open(req, timeout=self.timeout) as resp:
                raw = self._read_body(resp, request)
        except urllib.error.HTTPError as exc:
            status = exc.code
            wait = None
            retry_after = exc.headers.get("Retry-After") if exc.headers else None
            if retry_after:
                try:
                    wait = float(retry_after)
                except ValueError:
                    wait = None
            try:
                detail = _short(exc.read(4096) if exc.fp else b"")
            except (OSError, http.client.HTTPException):
                detail = ""
            exc.close()
            if status in RETRY_STATUS:
                raise _Retry(f"HTTP {status}", wait) from None
            raise WorldModelError(f"{self.url} answered HTTP {status} for model {self.model!r}: {detail}") from None
        except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
            if request.cancelled:
                raise _Cancelled() from None
            if request.expired:
                raise _Retry(f"no complete answer within {self.timeout:g} s") from None
            reason = getattr(exc, "reason", exc)
            raise _Retry(f"{type(exc).__name__}: {reason}") from None
        finally:
            timer.cancel()
            _current.request = None
            with self._inflight_lock:
                self._inflight.discard(request)
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

    def _wait(self, delay: float, cancel: threading.Event | None) -> None:
        if self._sleep is not time.sleep:       # an injected clock (tests)
            self._sleep(delay)
        elif cancel is not None:
            cancel.wait(delay)
        else:
            time.sleep(delay)
        if cancel is not None and cancel.is_set():
            raise _Cancelled()

    def ask_one(self, prompt: str, cancel: threading.Event | None = None) -> str:
        """One prompt's answer, retried; stops without retrying once ``cancel`` is set (the run has failed)."""
        last = ""
        for attempt in range(self.max_retries + 1):
            if cancel is not None and cancel.is_set():
                raise _Cancelled()
            try:
                return self._once(prompt, cancel)
            except _Retry as r:
                last = r.why
                if attempt == self.max_retries:
                    break
                with self._count_lock:
                    self.retries += 1
                delay = min(self.max_backoff, self.backoff * (2 ** attempt))
                if r.wait is not None:
                    delay = min(self.max_backoff, max(delay, r.wait))
                self._wait(delay, cancel)
        raise WorldModelError(
            f"{self.url} failed {self.max_retries + 1} times for model {self.model!r} (last: {last}); "
            "answers so far are cached, rerun to resume"
        )

    def _cut_all(self) -> None:
        with self._inflight_lock:
            live = list(self._inflight)
        for request in live:
            request.cut()

    def answers(self, prompts):
        """``(index, response)`` for each prompt as its answer arrives (up to ``concurrency`` in flight).

        The first prompt that fails for good, an interrupt, or the caller stopping early
        cuts every request in flight and cancels the rest; no thread is left behind.
        """
        if not prompts:
            return
        cancel = threading.Event()
        pool = ThreadPoolExecutor(max_workers=self.concurrency)
        try:
            futures = {}
            for i, p in enumerate(prompts):
                futures[pool.submit(self.ask_one, p, cancel)] = i
            for fut in as_completed(futures):
                yield futures[fut], fut.result()
        except BaseException:
            cancel.set()          # nothing retries any more, waits end at once
            self._cut_all()       # requests in flight are cut
            raise
        finally:
            pool.shutdown(wait=False, cancel_futures=True)

    def ask(self, prompts):
        got: dict[int, str] = dict(self.answers(prompts))
        return [got[i] for i in range(len(prompts))]


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
        try:
            for i in range(0, len(todo), step):
                chunk = todo[i:i + step]
                for j, r in self.inner.answers(chunk):   # each answer is cached the moment it arrives
                    p = chunk[j]
                    self.cache.put(self.backend, self.model, p, r)
                    answers[p] = r
                    self.asked += 1
                    bar.update(1)
            missing = [p for p in todo if p not in answers]
            if missing:
                raise RuntimeError(f"backend {self.backend} gave no answer for {len(missing)} prompts")
        finally:
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
        from .safety import atomic_write

        atomic_write(Path(path), (json.dumps({"metric": metric, **{k: v for k, v in t.items() if k != "prompts"}})
                                  + "\n" for metric, trials in self.trials.items() for t in trials), "trials")


def yes_no_pairs(parse: Callable[[str], bool | None]) -> Callable[[str, dict, list[str]], int]:
    """A :meth:`ChatReport.ask` scorer for probes asked as pairs of yes/no questions, ``parse`` reading one answer.

    A trial's responses come in pairs (the question after prefix 1, then after prefix 2); a pair
    counts when both answers parse. Compression precision: 1 when every counted pair agrees.
    Distinction (recall): the share of counted pairs answered *yes* then *no* (the proposed
    continuation valid after the first prefix only). A trial with no counted pair is skipped.
    Returns the number of answers that did not parse.
    """
    import numpy as np

    def score(metric: str, trial: dict, responses: list[str]) -> int:
        pairs = [(parse(responses[j]), parse(responses[j + 1])) for j in range(0, len(responses), 2)]
        trial["answers"] = [[a, b] for a, b in pairs]
        counted = [(a, b) for a, b in pairs if a is not None and b is not None]
        if not counted:
            trial.update(status="skipped", reason="all answers unparseable")
        elif metric == "compression_precision":
            trial["score"] = float(all(a == b for a, b in counted))
        else:
            trial["score"] = float(np.mean([a is True and b is False for a, b in counted]))
        return sum((a is None) + (b is None) for a, b in pairs)

    return score


def probe_table(summaries: dict[str, dict], metrics: Sequence[str], extra_head: Sequence[str] = (),
                extra: Callable[[str], list[str]] | None = None) -> str:
    """Markdown: one row per responder of a probe in words (its :meth:`ChatReport.summary`).

    Per metric two cells: the mean (standard error) with the trials scored, and the
    unparseable answers out of all answers. ``extra_head`` names further columns and
    ``extra(label)`` gives a row's cells for them (a world's capability measures).
    """
    names = {"compression_precision": "Compr. P", "distinction_precision": "Dist. P", "distinction_recall": "Dist. R"}
    head = "| Model | " + " | ".join(f"{names.get(m, m)} | unparseable" for m in metrics) + " |"
    head += "".join(f" {h} |" for h in extra_head)
    lines = [head, "|---" * (1 + 2 * len(metrics) + len(extra_head)) + "|"]
    for label, rep in summaries.items():
        cells = []
        for m in metrics:
            r = rep["metrics"][m]
            mean = "—" if not r.get("n") else f"{r['mean']:.2f} ({r['stderr']:.2f})"
            cells += [f"{mean}, n={r['n']}", f"{r['n_unparseable']}/{r['n_answers']}"]
        if extra_head:
            cells += extra(label)
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


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
