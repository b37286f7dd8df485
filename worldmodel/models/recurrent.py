"""Recurrent language models (LSTM, GRU) and the decoding state the engine runs them on.

:class:`RecurrentLM` is a plain torch module: token embedding, a multi-layer
``nn.LSTM`` or ``nn.GRU`` (batch first), a linear output head. It takes the same
call as a Hugging Face causal LM (``model(input_ids=…, attention_mask=…,
output_hidden_states=…)`` returning ``.logits`` and ``.hidden_states``), so the
trainer, the probe and the importers treat it like one, and it saves as a
``save_pretrained``-style folder: ``config.json`` (plain JSON, ``model_type``
``"lstm"`` or ``"gru"``, checked key by key when read) and ``model.safetensors``.
Nothing read from such a folder runs code.

**The recurrent state is the cache.** The metric engine (:class:`~.hf.HFModel`)
runs a few prefixes, then feeds many short continuations after each; for a
transformer it keeps every prefix's keys and values. A recurrent network needs
only its state after the prefix: :class:`RecurrentState` holds one state per row
(``[layers, rows, width]`` tensors), :meth:`RecurrentState.rows` branches it
(an index select: one row per sampled history, as the GPT-2 path branches its
cache rows) and :meth:`RecurrentState.feed` advances every row by the fed tokens
in one batched call. Any network that offers the three methods of
:class:`RecurrentEngine` (``prefill``, ``step``, ``select``) decodes this way:
:class:`RecurrentLM` itself, and the state-space model through
:class:`~.mamba.LeanMamba`. :func:`recurrent_engine` finds the engine of a
network (``None`` for a transformer).

Right padding never changes a real position's output (the recurrence runs
forward), so whole sequences run right-padded; prefixes are packed
(``pack_padded_sequence``) so that each row's final state is the state after its
own last token. ``tests/test_families.py`` holds the engine's logits within 1e-5 of
a full forward pass.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Protocol

import torch
from torch import nn

from ..errors import WorldModelError

#: the ``model_type`` values of :class:`RecurrentConfig` (``config.json``)
RNN_TYPES = ("lstm", "gru")
WEIGHTS_FILE = "model.safetensors"


@dataclass
class RecurrentConfig:
    """What ``config.json`` of a :class:`RecurrentLM` holds (Hugging Face-like names)."""

    model_type: str = "lstm"          #: "lstm" or "gru"
    vocab_size: int = 0
    embedding_size: int = 64           #: token embedding width
    hidden_size: int = 64              #: recurrent state width (the probe reads the top layer's)
    num_layers: int = 1
    dropout: float = 0.0               #: between recurrent layers, while training
    bos_token_id: int | None = None
    pad_token_id: int | None = None
    architectures: tuple = ("RecurrentLM",)

    def __post_init__(self):
        if self.model_type not in RNN_TYPES:
            raise WorldModelError(f"recurrent model_type must be one of {', '.join(RNN_TYPES)}, not {self.model_type!r}")
        for name in ("vocab_size", "embedding_size", "hidden_size", "num_layers"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise WorldModelError(f"recurrent config {name} must be a whole number >= 1, got {v!r}")
        if not isinstance(self.dropout, (int, float)) or not 0 <= self.dropout < 1:
            raise WorldModelError(f"recurrent config dropout must be in [0, 1), got {self.dropout!r}")
        self.architectures = tuple(self.architectures)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["architectures"] = list(self.architectures)
        return d

    @classmethod
    def from_dict(cls, d: dict, where: str = "config.json") -> "RecurrentConfig":
        if not isinstance(d, dict):
            raise WorldModelError(f"{where}: expected a JSON object")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise WorldModelError(f"{where}: unknown recurrent config key(s) {unknown}")
        try:
            return cls(**d)
        except TypeError as exc:
            raise WorldModelError(f"{where}: {exc}") from None

    @staticmethod
    def is_recurrent_folder(folder: str | Path) -> bool:
        """Whether ``folder/config.json`` names a recurrent ``model_type`` (lstm, gru)."""
        path = Path(folder) / "config.json"
        if not path.is_file():
            return False
        try:
            return json.loads(path.read_text()).get("model_type") in RNN_TYPES
        except (json.JSONDecodeError, AttributeError, UnicodeDecodeError):
            return False


@dataclass
class RecurrentOutput:
    """What :meth:`RecurrentLM.forward` returns (the attributes the project reads of an HF output)."""

    logits: torch.Tensor
    hidden_states: tuple | None = None
    state: tuple | None = None

    def __getitem__(self, key):  # ``out["logits"]`` as on a ModelOutput
        return getattr(self, key)


class RecurrentEngine(Protocol):
    """The three operations :class:`RecurrentState` needs of a recurrent network."""

    def prefill(self, ids: torch.Tensor, lens: torch.Tensor) -> tuple[tuple, torch.Tensor]:
        """Right-padded ``ids [B, P]`` of real lengths ``lens``: (state after each row's last token, its logits ``[B, V]``)."""

    def step(self, state: tuple, ids: torch.Tensor) -> tuple[torch.Tensor, tuple]:
        """Feed ``ids [R, S]`` after ``state``: (logits ``[R, S, V]``, the state after them)."""

    def select(self, state: tuple, idx: torch.Tensor) -> tuple:
        """The state of rows ``idx`` (rows may repeat or go)."""

    def state_bytes(self) -> int:
        """Bytes one row's state takes."""


class RecurrentLM(nn.Module):
    """Embedding → ``nn.LSTM`` / ``nn.GRU`` → linear head; a causal LM in the Hugging Face calling convention."""

    def __init__(self, config: RecurrentConfig):
        super().__init__()
        self.config = config
        c = config
        self.embed = nn.Embedding(c.vocab_size, c.embedding_size)
        cell = nn.LSTM if c.model_type == "lstm" else nn.GRU
        self.rnn = cell(c.embedding_size, c.hidden_size, c.num_layers, batch_first=True,
                        dropout=float(c.dropout) if c.num_layers > 1 else 0.0)
        self.head = nn.Linear(c.hidden_size, c.vocab_size)

    # -- the Hugging Face calling convention -------------------------------------------
    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                output_hidden_states: bool = False, state: tuple | None = None, **_ignored) -> RecurrentOutput:
        """Logits ``[B, S, V]`` of (right-padded) ``input_ids``; ``attention_mask`` is not needed.

        Padding on the right never reaches a real position (the recurrence runs
        forward), so the mask is accepted and not read; left padding is not
        supported (the engine packs its prefixes instead). ``hidden_states`` is
        ``(embeddings, top-layer outputs)`` when asked for.
        """
        x = self.embed(input_ids)
        out, new_state = self.rnn(x, self._hx(state))
        hidden = (x, out) if output_hidden_states else None
        return RecurrentOutput(self.head(out), hidden, self._tuple(new_state))

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    # -- folders -------------------------------------------------------------------------
    def save_pretrained(self, folder: str | Path, safe_serialization: bool = True, **_ignored) -> None:
        """``config.json`` + ``model.safetensors`` (the tensors only; nothing that runs)."""
        from safetensors.torch import save_file

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "config.json").write_text(json.dumps(self.config.to_dict(), indent=1))
        save_file({k: v.detach().contiguous().cpu() for k, v in self.state_dict().items()}, str(folder / WEIGHTS_FILE))

    @classmethod
    def from_pretrained(cls, folder: str | Path) -> "RecurrentLM":
        """Read a folder written by :meth:`save_pretrained` (strictly: every tensor present, of its shape)."""
        from safetensors import SafetensorError
        from safetensors.torch import load_file

        folder = Path(folder)
        try:
            cfg = RecurrentConfig.from_dict(json.loads((folder / "config.json").read_text()), str(folder / "config.json"))
        except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise WorldModelError(f"checkpoint {folder}: config.json is unreadable ({exc})") from None
        try:
            sd = load_file(str(folder / WEIGHTS_FILE))
        except (OSError, SafetensorError) as exc:
            raise WorldModelError(f"checkpoint {folder} is incomplete or corrupt: {exc}") from None
        model = cls(cfg)
        model.load_weights(sd, str(folder))
        return model.eval()

    def load_weights(self, sd: dict, where: str) -> None:
        """Load a state dict in this module's names, refusing missing, unexpected or misshapen tensors."""
        own = self.state_dict()
        missing = sorted(set(own) - set(sd))
        extra = sorted(set(sd) - set(own))
        if missing or extra:
            raise WorldModelError(f"{where}: weights do not match the {self.config.model_type} config "
                                  f"(missing {missing[:4]}, unexpected {extra[:4]})")
        for k, v in own.items():
            if tuple(sd[k].shape) != tuple(v.shape):
                raise WorldModelError(f"{where}: weight {k} has shape {tuple(sd[k].shape)}, the config needs {tuple(v.shape)}")
        self.load_state_dict({k: sd[k].to(v.dtype) for k, v in own.items()})

    # -- the recurrent engine (see RecurrentEngine) --------------------------------------
    def _hx(self, state):
        if state is None:
            return None
        return (state[0], state[1]) if self.config.model_type == "lstm" else state[0]

    @staticmethod
    def _tuple(state):
        return tuple(state) if isinstance(state, tuple) else (state,)

    def prefill(self, ids: torch.Tensor, lens: torch.Tensor):
        x = self.embed(ids)
        packed = nn.utils.rnn.pack_padded_sequence(x, lens.cpu(), batch_first=True, enforce_sorted=False)
        _, state = self.rnn(packed)
        state = self._tuple(state)
        return state, self.head(state[0][-1])

    def step(self, state: tuple, ids: torch.Tensor):
        out, new = self.rnn(self.embed(ids), self._hx(state))
        return self.head(out), self._tuple(new)

    @staticmethod
    def select(state: tuple, idx: torch.Tensor) -> tuple:
        return tuple(s.index_select(1, idx) for s in state)

    def state_bytes(self) -> int:
        c = self.config
        n = 2 if c.model_type == "lstm" else 1
        return n * c.num_layers * c.hidden_size * self.head.weight.element_size()


def recurrent_engine(model) -> RecurrentEngine | None:
    """The recurrent engine of ``model``: itself for a :class:`RecurrentLM`, :class:`~.mamba.LeanMamba`
    for a Hugging Face ``MambaForCausalLM``; ``None`` for anything else (a transformer)."""
    if isinstance(model, RecurrentLM):
        return model
    from .mamba import LeanMamba

    return LeanMamba.wrap(model)


class RecurrentState:
    """Rows of continuations after prefixes, for a recurrent engine: one state per row.

    Offers what the engine's decoder asks of a cache (:class:`~.lean.LeanState`,
    :class:`~.lean.HFState`): :meth:`rows` and :meth:`feed`.
    """

    def __init__(self, engine: RecurrentEngine, state: tuple):
        self.engine, self.state = engine, state

    @classmethod
    @torch.no_grad()
    def start(cls, engine: RecurrentEngine, seqs: list[list[int]], pad_id: int, device):
        """Run the prefixes ``seqs`` (token ids, each at least one); returns (state, last logits ``[B, V]``).

        Each distinct prefix runs once; its state is then shared by every row that
        continues it (an index select, which copies a few hundred numbers per row).
        """
        keys = [tuple(x) for x in seqs]
        uniq = list(dict.fromkeys(keys))
        where = {k: g for g, k in enumerate(uniq)}
        group = torch.tensor([where[k] for k in keys], dtype=torch.long, device=device)
        P = max(len(k) for k in uniq)
        ids = torch.full((len(uniq), P), pad_id, dtype=torch.long, device=device)
        for g, k in enumerate(uniq):
            ids[g, :len(k)] = torch.tensor(k, dtype=torch.long, device=device)
        lens = torch.tensor([len(k) for k in uniq], dtype=torch.long)
        state, last = engine.prefill(ids, lens)
        return cls(engine, engine.select(state, group)), last.index_select(0, group)

    def rows(self, idx: torch.Tensor, keep: bool = False) -> "RecurrentState":
        """A state whose row ``j`` continues row ``idx[j]`` (a copy: this state stays usable)."""
        return RecurrentState(self.engine, self.engine.select(self.state, idx))

    @torch.no_grad()
    def feed(self, tokens: torch.Tensor, tok_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Feed ``tokens [R, S]`` (right padding allowed); returns logits ``[R, S, V]``.

        After right padding the state is that of the padding (the scorer never
        continues such a row).
        """
        logits, self.state = self.engine.step(self.state, tokens)
        return logits


def rnn_param_count(model_type: str, vocab_size: int, embedding_size: int, hidden_size: int, num_layers: int) -> int:
    """Parameters of a :class:`RecurrentLM` of this shape (without building it)."""
    gates = 4 if model_type == "lstm" else 3
    n = vocab_size * embedding_size + hidden_size * vocab_size + vocab_size
    for layer in range(num_layers):
        inp = embedding_size if layer == 0 else hidden_size
        n += gates * hidden_size * (inp + hidden_size + 2)
    return n

