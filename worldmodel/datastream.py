"""Training data as numpy arrays: packed sequence files and seeded sequence streams.

Two sources feed :func:`worldmodel.training.train`:

* :class:`PackedSequences`: many sequences held as **one** flat integer array plus
  offsets (sequence ``i`` is ``tokens[offsets[i]:offsets[i + 1]]``). Files (the fixed
  validation and test splits, and data that exist only as files, such as championship
  Othello games) are read into this form once; a batch is then built by numpy indexing
  (:meth:`PackedSequences.padded`), never row by row in Python.
* :class:`SequenceStream`: an endless seeded stream of fresh training sequences drawn
  block by block (random Othello games, navigation random walks and shortest paths).
  Block ``i`` is a pure function of the stream's seed and ``i``, so a run sees new
  sequences at every step and a resumed run picks the stream up exactly where it was.

Values are *token indices*: positions in the world's ``tokens`` tuple. Model ids exist
only inside model adapters; :func:`token_lut` maps indices to a vocabulary's ids.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Sequence

import numpy as np

from .errors import WorldModelError


class PackedSequences:
    """Sequences of token indices as one flat array and ``len + 1`` offsets."""

    def __init__(self, tokens: np.ndarray, offsets: np.ndarray):
        tokens = np.asarray(tokens)
        offsets = np.asarray(offsets, dtype=np.int64)
        if offsets.ndim != 1 or len(offsets) < 1 or offsets[0] != 0 or offsets[-1] != len(tokens):
            raise ValueError("offsets must start at 0 and end at len(tokens)")
        if np.any(np.diff(offsets) < 0):
            raise ValueError("offsets must not decrease")
        self.tokens = tokens
        self.offsets = offsets

    # -- construction --------------------------------------------------------------
    @classmethod
    def from_lists(cls, seqs: Sequence[Sequence[int]], dtype=np.int32) -> "PackedSequences":
        lengths = np.fromiter((len(s) for s in seqs), dtype=np.int64, count=len(seqs))
        offsets = np.zeros(len(seqs) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        flat = np.fromiter((t for s in seqs for t in s), dtype=dtype, count=int(offsets[-1]))
        return cls(flat, offsets)

    @classmethod
    def from_padded(cls, rows: np.ndarray, pad: int = -1) -> "PackedSequences":
        """From a 2-D array whose rows are sequences followed only by ``pad`` values."""
        rows = np.asarray(rows)
        keep = rows != pad
        lengths = keep.sum(axis=1)
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        return cls(rows[keep], offsets)          # row-major: each row's tokens in order

    @classmethod
    def from_tokens(cls, seqs: Sequence[Sequence[str]], tokens: Sequence[str], what: str = "sequences") -> "PackedSequences":
        """Encode token strings by their index in ``tokens``; an unknown token is an error naming ``what``."""
        index = {t: i for i, t in enumerate(tokens)}
        try:
            return cls.from_lists([[index[t] for t in s] for s in seqs], dtype=_dtype(len(tokens)))
        except KeyError as exc:
            raise WorldModelError(f"{what}: unknown token {exc.args[0]!r}") from None

    @classmethod
    def read(cls, path: str | Path, tokens: Sequence[str]) -> "PackedSequences":
        """Read a sequence file (one sequence per line, tokens separated by spaces; blank lines skipped)."""
        from .safety import decode_utf8, read_bytes

        path = Path(path)
        if not path.exists():
            raise WorldModelError(f"sequence file {path} does not exist (run `worldmodel data TASK` first?)")
        index = {t: i for i, t in enumerate(tokens)}
        text = decode_utf8(read_bytes(path, "sequences", "sequence file"), f"sequence file {path}")
        if "\x00" in text:
            raise WorldModelError(f"sequence file {path} is not a text file (it holds NUL bytes)")
        lines = [line.split() for line in text.splitlines()]
        numbered = [(n, toks) for n, toks in enumerate(lines, 1) if toks]
        flat: list[int] = []
        try:
            for _, toks in numbered:
                flat.extend(index[t] for t in toks)
        except KeyError as exc:
            bad = next(n for n, toks in numbered if exc.args[0] in toks)
            raise WorldModelError(f"{path}:{bad}: unknown token {exc.args[0]!r}") from None
        offsets = np.zeros(len(numbered) + 1, dtype=np.int64)
        np.cumsum([len(toks) for _, toks in numbered], out=offsets[1:])
        return cls(np.asarray(flat, dtype=_dtype(len(tokens))), offsets)

    # -- access --------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.offsets) - 1

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def max_len(self) -> int:
        return int(self.lengths.max()) if len(self) else 0

    def __getitem__(self, i: int) -> np.ndarray:
        return self.tokens[self.offsets[i]:self.offsets[i + 1]]

    def to_lists(self) -> list[list[int]]:
        return [self[i].tolist() for i in range(len(self))]

    def padded(self, idx: np.ndarray | None = None, pad: int = -1, width: int | None = None) -> np.ndarray:
        """Rows ``idx`` (default: all) as a 2-D int64 array, right-padded with ``pad``.

        ``width`` defaults to the longest selected row; a row longer than ``width``
        is an error (never silently cut).
        """
        idx = np.arange(len(self)) if idx is None else np.asarray(idx, dtype=np.int64)
        starts = self.offsets[idx]
        lens = self.offsets[idx + 1] - starts
        longest = int(lens.max()) if len(idx) else 0
        width = longest if width is None else int(width)
        if longest > width:
            raise ValueError(f"a sequence of {longest} tokens does not fit width {width}")
        cols = np.arange(width)
        inside = cols[None, :] < lens[:, None]
        pos = np.where(inside, starts[:, None] + cols[None, :], 0)
        if len(self.tokens) == 0:
            return np.full((len(idx), width), pad, dtype=np.int64)
        return np.where(inside, self.tokens[pos].astype(np.int64), pad)

    def take(self, idx: np.ndarray) -> "PackedSequences":
        return PackedSequences.from_padded(self.padded(idx, pad=-1), pad=-1)


def _dtype(n_tokens: int):
    return np.int16 if n_tokens < 2 ** 15 else np.int32


def token_lut(tokens: Sequence[str], vocab) -> np.ndarray:
    """Model id of each token index (``vocab.stoi`` of ``tokens[i]``)."""
    return np.asarray([vocab.stoi[t] for t in tokens], dtype=np.int64)


class SequenceStream(ABC):
    """An endless, seeded stream of training sequences, drawn in blocks.

    :meth:`block` must be a pure function of the stream's settings and ``index``:
    the same block always holds the same sequences, in any process, in any order of
    calls. Training asks for block ``step * processes + rank`` of ``batch_size``
    sequences, so each process of each step sees fresh sequences and a resumed run
    continues the stream exactly.
    """

    #: The longest sequence the stream can produce (tokens), for padding and context checks.
    max_len: int

    @abstractmethod
    def block(self, index: int, size: int) -> PackedSequences:
        """``size`` sequences, the ``index``-th block of the stream."""
