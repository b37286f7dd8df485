"""Training batches: sampled from a packed file, or drawn fresh from a domain's seeded stream."""

from __future__ import annotations

from itertools import count

import numpy as np
import torch

from ..datastream import PackedSequences, SequenceStream

#: Sequences generated together by a stream worker (bigger blocks amortise numpy's per-call cost).
STREAM_CHUNK = 1024


def model_ids(rows: np.ndarray, lut: np.ndarray, bos: int, pad: int) -> np.ndarray:
    """Token-index rows (-1 = padding) -> model ids ``<bos> x1 … xn <pad> …`` (int64)."""
    out = np.empty((rows.shape[0], rows.shape[1] + 1), dtype=np.int64)
    out[:, 0] = bos
    out[:, 1:] = np.where(rows >= 0, lut[np.maximum(rows, 0)], pad)
    return out


class FileBatches:
    """Batches sampled with replacement from a packed file: the old loop's exact draws.

    Step ``t`` of process ``r`` takes the next ``batch_size`` indices of
    ``default_rng([seed, r])``; the generator's state is the data position.
    """

    def __init__(self, data: PackedSequences, batch_size: int, seed: int, rank: int, lut, bos, pad,
                 width: int | None = None):
        self.data, self.batch_size = data, batch_size
        self.rng = np.random.default_rng([seed, rank])
        self.lut, self.bos, self.pad, self.width = lut, bos, pad, width

    def state(self) -> dict:
        return self.rng.bit_generator.state

    def restore(self, state: dict) -> None:
        self.rng.bit_generator.state = state

    def next(self) -> np.ndarray:
        idx = self.rng.integers(0, len(self.data), size=self.batch_size)
        return model_ids(self.data.padded(idx, width=self.width), self.lut, self.bos, self.pad)


class _StreamChunks(torch.utils.data.Dataset):
    """Chunk ``c`` = the ``per_chunk`` batches of steps ``c*per_chunk …`` for one process."""

    def __init__(self, stream: SequenceStream, batch_size: int, per_chunk: int, rank: int, processes: int,
                 lut, bos, pad, width: int | None):
        self.stream, self.batch_size, self.per_chunk = stream, batch_size, per_chunk
        self.rank, self.processes = rank, processes
        self.lut, self.bos, self.pad, self.width = lut, bos, pad, width

    def __len__(self):  # endless; DataLoader only needs this for len(loader)
        return 2 ** 62

    def __getitem__(self, chunk: int) -> list[np.ndarray]:
        block = self.stream.block(chunk * self.processes + self.rank, self.per_chunk * self.batch_size)
        B = self.batch_size
        return [model_ids(block.padded(np.arange(i * B, (i + 1) * B), width=self.width), self.lut, self.bos, self.pad)
                for i in range(self.per_chunk)]


def _identity(x):
    return x


class StreamBatches:
    """Batches of a :class:`SequenceStream`, generated ahead by worker processes.

    Step ``t`` of process ``r`` (of ``P``) takes rows ``(t mod K)·B …`` of stream block
    ``(t div K)·P + r`` of ``K·B`` sequences, ``K = max(1, STREAM_CHUNK // B)``: a pure
    function of ``t``, so the data position is the step.
    """

    def __init__(self, stream: SequenceStream, batch_size: int, rank: int, processes: int, lut, bos, pad,
                 width: int | None = None, workers: int = 0, pin: bool = False, start_step: int = 0):
        self.per_chunk = max(1, STREAM_CHUNK // batch_size)
        self.dataset = _StreamChunks(stream, batch_size, self.per_chunk, rank, processes, lut, bos, pad, width)
        self.workers, self.pin = workers, pin
        self._start(start_step)

    def _start(self, step: int) -> None:
        first = step // self.per_chunk
        if self.workers > 0:
            loader = torch.utils.data.DataLoader(
                self.dataset, batch_size=None, sampler=count(first), num_workers=self.workers,
                prefetch_factor=2, persistent_workers=False, pin_memory=False,
                collate_fn=_identity)
            self._chunks = iter(loader)
        else:
            self._chunks = (self.dataset[c] for c in count(first))
        self._buffer: list[np.ndarray] = []
        skip = step - first * self.per_chunk
        if skip:
            self._buffer = next(self._chunks)[skip:]

    def state(self) -> None:
        return None  # the position is the step

    def next(self) -> np.ndarray:
        if not self._buffer:
            self._buffer = list(next(self._chunks))
        return self._buffer.pop(0)

    def close(self) -> None:
        self._chunks = None
