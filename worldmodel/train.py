"""Training a GPT-2 from scratch on a task's sequences (nanoGPT-style loop).

One plain loop: batches of whole sequences (``<bos> x1 … xn``, right-padded),
next-token cross-entropy, AdamW with linear warm-up and cosine decay to 10% of the
peak rate, periodic validation. It runs through :mod:`accelerate`, so the same code
trains on the CPU, on one GPU, or on several processes or machines with
``accelerate launch -m worldmodel.cli train …`` (each process draws its own batches;
gradients are averaged).

**Data.** ``data = "file"`` (default) samples sequences with replacement from the
dataset's ``train.txt``, held as one packed numpy array
(:class:`~worldmodel.datastream.PackedSequences`); ``data = "stream"`` draws fresh
sequences every step from the domain's seeded
:class:`~worldmodel.datastream.SequenceStream` (synthetic Othello games, navigation
rides), generated ahead of the GPU by ``data_workers`` worker processes. Validation
always reads the fixed ``val.txt``.

**Speed.** On CUDA: bf16 autocast by default (``precision``: ``fp32``, ``bf16`` or
``fp16`` with loss scaling), TF32 matmuls, fused AdamW, PyTorch's scaled-dot-product
attention (the model is called without a padding mask: padding is only ever on the
right, so causal attention never reads it and the real positions' outputs are
unchanged), no host synchronisation between log steps, optional ``torch.compile``.
``grad_accum = K`` splits each batch into K micro-batches (the same update, less
memory). The training log reports tokens/s and model FLOPs utilisation
(``6 × parameters × positions/s ÷ peak``; the peak is ``peak_flops`` or measured once
by a matmul probe, :func:`matmul_peak_flops`).

**Budget and resuming.** ``time_budget`` (seconds, counted from the start of
:func:`train`) stops training at the first step past the budget and saves the model as
a normal checkpoint; without an explicit ``steps`` the number of steps is fitted to
the budget once the step rate is known, so the learning-rate schedule completes. Every
``save_every`` steps (default: every validation), and on Ctrl-C or SIGTERM, the full
training state (model, optimiser, scheduler, loss scaler, random generators, data
position, log) is written to ``<out>.partial/resume.pt``; rerunning the same command
resumes from it and ends with the same weights as an uninterrupted run on the same
device. A different command (other task file, seed, steps, batch size, precision…)
starts afresh.

The output folder is a ``save_pretrained`` checkpoint plus ``vocab.json`` (the
domain tokens), ``training.json`` (task, dataset, settings, losses, speed) and
``train_log.jsonl`` (one line per logged step). It is written to ``<out>.partial``
and renamed at the end, so a killed run never leaves a folder that looks complete.

``[train]`` settings: ``steps``, ``batch_size``, ``lr``, ``weight_decay`` (0.01),
``warmup`` (steps), ``eval_every``, ``log_every``, ``keep`` (``"last"`` or ``"best"``
validation loss, as the paper keeps the best checkpoint for shortest paths),
``data`` (``"file"`` or ``"stream"``), ``precision``, ``grad_accum``, ``compile``,
``save_every``, ``data_workers``, ``cpu_threads`` (CPU intra-op threads while training,
default 1, so a seed gives the same weights whatever the thread count: see
:func:`fixed_cpu_threads`). Command-line options override them.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import shutil
import signal
import threading
import time
from dataclasses import asdict, dataclass, fields
from itertools import count
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from .datastream import PackedSequences, SequenceStream, token_lut
from .errors import WorldModelError
from .models import Vocabulary, gpt2_config, quiet_transformers
from .tasks import Task

PRECISIONS = ("fp32", "bf16", "fp16")
DATA_MODES = ("file", "stream")
#: Sequences generated together by a stream worker (bigger blocks amortise numpy's per-call cost).
STREAM_CHUNK = 1024
#: Validation sequences used (the first ones of ``val.txt``).
VAL_SEQUENCES = 2000
RESUME_FILE = "resume.pt"


# ---------------------------------------------------------------------------
# Settings
# ---------------------------------------------------------------------------


@dataclass
class TrainConfig:
    """Every training setting, from the task's ``[train]`` section and overrides."""

    steps: int | None = 1000          # None: fitted to time_budget
    batch_size: int = 32
    lr: float = 1e-3
    weight_decay: float = 0.01
    warmup: int | None = None
    eval_every: int | None = None
    log_every: int | None = None
    keep: str = "last"
    seed: int = 0
    data: str = "file"
    precision: str | None = None       # None: bf16 on CUDA, fp32 elsewhere
    grad_accum: int = 1
    compile: bool = False
    time_budget: float | None = None
    save_every: int | None = None
    data_workers: int | None = None    # None: 0 on CPU, several on CUDA
    peak_flops: float | None = None
    cpu_threads: int = 1               # CPU intra-op threads while training (0: PyTorch's); fixed_cpu_threads

    @classmethod
    def from_task(cls, task: Task, steps: int | None = None, seed: int | None = None,
                  overrides: dict | None = None) -> "TrainConfig":
        where = f"task {task.path} [train]"
        raw = {**task.section("train"), **{k: v for k, v in (overrides or {}).items() if v is not None}}
        known = {f.name for f in fields(cls)}
        bad = sorted(set(raw) - known)
        if bad:
            raise WorldModelError(f"{where}: unknown setting(s) {', '.join(bad)} (known: {', '.join(sorted(known))})")
        cfg = cls(**{"seed": task.seed, **raw})
        if seed is not None:
            cfg.seed = int(seed)
        if steps is not None:
            cfg.steps = steps
        elif cfg.time_budget is not None and "steps" not in (overrides or {}):
            cfg.steps = None            # fit the schedule to the budget
        cfg.check(where)
        return cfg

    def check(self, where: str) -> None:
        def whole(name, low):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < low:
                raise WorldModelError(f"{where}: {name} must be a whole number >= {low}, got {v!r}")

        if self.steps is not None:
            if not isinstance(self.steps, int) or isinstance(self.steps, bool) or self.steps < 1:
                raise WorldModelError(f"--steps must be at least 1, got {self.steps!r}")
        for name in ("batch_size", "grad_accum"):
            whole(name, 1)
        whole("cpu_threads", 0)
        for name in ("warmup", "eval_every", "log_every", "save_every", "data_workers"):
            if getattr(self, name) is not None:
                whole(name, 0 if name in ("warmup", "data_workers") else 1)
        if self.batch_size % self.grad_accum:
            raise WorldModelError(f"{where}: batch_size {self.batch_size} is not a multiple of grad_accum {self.grad_accum}")
        if self.keep not in ("last", "best"):
            raise WorldModelError(f"{where}: keep must be 'last' or 'best', got {self.keep!r}")
        if self.data not in DATA_MODES:
            raise WorldModelError(f"{where}: data must be 'file' or 'stream', got {self.data!r}")
        if self.precision is not None and self.precision not in PRECISIONS:
            raise WorldModelError(f"{where}: precision must be one of {', '.join(PRECISIONS)}, got {self.precision!r}")
        for name in ("lr", "weight_decay"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
                raise WorldModelError(f"{where}: {name} must be a number >= 0, got {v!r}")
        for name in ("time_budget", "peak_flops"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0):
                raise WorldModelError(f"--{name.replace('_', '-')} must be a positive number, got {v!r}")
        if self.steps is None and self.time_budget is None:
            raise WorldModelError("give --steps, or --time-budget to fit the steps to a time budget")
        if not isinstance(self.compile, bool):
            raise WorldModelError(f"{where}: compile must be true or false, got {self.compile!r}")

    def fingerprint(self, task: Task, dataset: str, processes: int) -> str:
        """What must match for a rerun to resume: every setting that changes the weights."""
        keep = {k: v for k, v in asdict(self).items()
                if k not in ("time_budget", "data_workers", "peak_flops", "compile", "save_every", "log_every")}
        text = json.dumps({"task": task.config, "dataset": dataset, "processes": processes, **keep},
                          sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


# ---------------------------------------------------------------------------
# Batches
# ---------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------
# Loss, validation, peak FLOPs
# ---------------------------------------------------------------------------


def lm_loss(logits: torch.Tensor, ids: torch.Tensor, pad: int) -> torch.Tensor:
    """Mean next-token cross-entropy over real target tokens (padding ignored), in fp32.

    Computed exactly as transformers' causal-LM loss (labels shifted left, padding and
    the last position ignored), so the same batch gives the same number.
    """
    labels = F.pad(ids.masked_fill(ids == pad, -100), (0, 1), value=-100)[:, 1:]
    return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=-100)


@torch.no_grad()
def validation_loss(model, val: np.ndarray, pad: int, device, autocast, rows: int = 256) -> float:
    """Token-weighted mean next-token loss over the rows of ``val`` (model ids, padded)."""
    was = model.training
    model.eval()
    total, n = 0.0, 0
    for b in range(0, len(val), rows):
        x = torch.from_numpy(val[b:b + rows]).to(device)
        with autocast():
            logits = model(input_ids=x).logits
        k = int((x[:, 1:] != pad).sum())
        total += float(lm_loss(logits, x, pad)) * k
        n += k
    model.train(was)
    return total / max(n, 1)


_PEAK_CACHE: dict[tuple[str, str], float] = {}


def matmul_peak_flops(device: torch.device | str, precision: str = "fp32", seconds: float = 0.5) -> float:
    """Measured FLOP/s of a large square matmul on ``device`` in ``precision`` (cached per process).

    fp32 on CUDA runs with TF32 enabled, as training does. The figure stands in for the
    device's peak when none is given; it is what the chip actually sustains on the
    kind of kernel a transformer spends its time in. On a CPU the time is the process's
    CPU time divided by its thread count when that is shorter than the wall clock, so
    other work on a shared machine does not lower the peak (and inflate the MFU).
    """
    device = torch.device(device)
    key = (str(device), precision)
    if key in _PEAK_CACHE:
        return _PEAK_CACHE[key]
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]
    n = 8192 if device.type == "cuda" else 1024
    if device.type == "cpu":
        dtype = torch.float32           # the CPU probe measures what fp32 training uses
    g = torch.Generator(device="cpu").manual_seed(0)
    a = torch.randn(n, n, generator=g).to(device, dtype)
    b = torch.randn(n, n, generator=g).to(device, dtype)

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    for _ in range(3):
        a @ b
    sync()
    done, t0, c0 = 0, time.perf_counter(), time.process_time()
    while True:
        for _ in range(5):
            a @ b
        done += 5
        sync()
        if time.perf_counter() - t0 >= seconds:
            break
    elapsed = time.perf_counter() - t0
    if device.type == "cpu":
        elapsed = min(elapsed, (time.process_time() - c0) / max(1, torch.get_num_threads()))
    rate = 2.0 * n ** 3 * done / elapsed
    _PEAK_CACHE[key] = rate
    return rate


# ---------------------------------------------------------------------------
# Interrupts
# ---------------------------------------------------------------------------


class _StopFlag:
    """Ctrl-C / SIGTERM ask the loop to stop at the next step boundary (a second Ctrl-C kills)."""

    def __init__(self):
        self.set = False
        self._old = {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._old[sig] = signal.getsignal(sig)
                signal.signal(sig, self._handle)
        return self

    def _handle(self, signum, frame):
        if self.set and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.set = True

    def __exit__(self, *exc):
        for sig, old in self._old.items():
            signal.signal(sig, old)
        return False


# ---------------------------------------------------------------------------
# The loop
# ---------------------------------------------------------------------------


def _atomic_torch_save(obj, path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    torch.save(obj, tmp)
    tmp.replace(path)


def fixed_cpu_threads(fn):
    """Run a training function with a fixed number of CPU intra-op threads.

    PyTorch's CPU kernels split reductions by thread, so the same seed gives different
    weights under different thread counts (measured on toy-dfa: OMP_NUM_THREADS=1 and 2
    differ by up to 1.5e-6 after 20 steps, and the runs drift apart from there).
    ``[train] cpu_threads`` (default 1) fixes the count while training on the CPU, so a
    seed gives the same weights whatever ``OMP_NUM_THREADS`` says; 0 keeps PyTorch's own
    setting (faster on many cores, not reproducible across thread counts). The previous
    setting is restored afterwards. CPUs with other instruction sets may still round
    differently; this removes only the thread-count dependence.
    """
    @functools.wraps(fn)
    def run(task: Task, *args, **kwargs):
        given = {k: v for k, v in (kwargs.get("overrides") or {}).items() if v is not None}
        n = {**task.section("train"), **given}.get("cpu_threads", 1)
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise WorldModelError(f"task {task.path} [train]: cpu_threads must be a whole number >= 0, got {n!r}")
        if n == 0 or torch.cuda.is_available():
            return fn(task, *args, **kwargs)
        before = torch.get_num_threads()
        torch.set_num_threads(n)
        try:
            return fn(task, *args, **kwargs)
        finally:
            torch.set_num_threads(before)
    return run


@fixed_cpu_threads
def train(task: Task, out: str | Path, dataset: str | None = None, steps: int | None = None,
          data_dir: str | Path | None = None, seed: int | None = None, progress: bool = True,
          overrides: dict | None = None, echo=None) -> dict:
    """Train a model for ``task`` on ``dataset`` and save it to ``out``; returns the summary.

    ``overrides`` replaces ``[train]`` settings (any :class:`TrainConfig` field, e.g.
    ``{"precision": "bf16", "time_budget": 240, "data": "stream"}``). ``echo``, if
    given, is called with every training-log record (a dict) as it is written.
    """
    from accelerate import Accelerator

    t_start = time.time()
    cfg = TrainConfig.from_task(task, steps, seed, overrides)
    domain = task.domain
    world = domain.world
    dataset = dataset or domain.datasets()[0]
    mcfg = task.section("model")

    cuda = torch.cuda.is_available()
    accelerator = Accelerator(cpu=not cuda, mixed_precision="no")
    device = accelerator.device
    rank, processes = accelerator.process_index, accelerator.num_processes
    on_cuda = device.type == "cuda"
    precision = cfg.precision or ("bf16" if on_cuda and torch.cuda.is_bf16_supported() else "fp32")
    if on_cuda:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    amp_dtype = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]

    def autocast():
        if amp_dtype is None:
            return torch.autocast(device.type, enabled=False)
        return torch.autocast(device.type, dtype=amp_dtype)

    # -- data ---------------------------------------------------------------------
    folder = domain.ensure_data(dataset, data_dir)
    vocab = Vocabulary(world.tokens, world.name)
    lut = token_lut(world.tokens, vocab)
    val_packed = PackedSequences.read(folder / "val.txt", world.tokens)
    val_packed = val_packed.take(np.arange(min(len(val_packed), VAL_SEQUENCES)))
    stream = train_packed = None
    if cfg.data == "stream":
        stream = domain.stream(dataset)
        if stream is None:
            raise WorldModelError(f"dataset {dataset!r} of task {task.name} exists only as files; "
                                  "train it with data = \"file\" (--data file)")
        longest = stream.max_len
        n_train = None
    else:
        train_packed = PackedSequences.read(folder / "train.txt", world.tokens)
        if not len(train_packed):
            raise WorldModelError(f"{folder / 'train.txt'} holds no sequences")
        longest = train_packed.max_len()
        n_train = len(train_packed)
    longest = max(longest, val_packed.max_len()) + 1          # + <bos>
    config = gpt2_config(vocab, **mcfg)
    if longest > config.n_positions:
        raise WorldModelError(
            f"task {task.path}: sequences need {longest} positions but [model] n_positions = {config.n_positions}"
        )
    val_ids = model_ids(val_packed.padded(), lut, vocab.bos_id, vocab.pad_id) if len(val_packed) else None

    # -- schedule --------------------------------------------------------------------
    plan = {"steps": cfg.steps if cfg.steps is not None else 10 ** 9, "fitted": cfg.steps is None}
    known_steps = cfg.steps or 1000
    warmup = cfg.warmup if cfg.warmup is not None else min(100, known_steps // 10)
    eval_every = cfg.eval_every or max(1, known_steps // 5)
    log_every = cfg.log_every or max(1, min(50, known_steps // 20))
    save_every = cfg.save_every or eval_every

    def schedule(step):
        if step < warmup:
            return (step + 1) / max(1, warmup)
        frac = (step - warmup) / max(1, plan["steps"] - warmup)
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, frac)))

    # -- model and optimiser ------------------------------------------------------------
    from transformers import GPT2LMHeadModel

    quiet_transformers()
    torch.manual_seed(cfg.seed)
    raw = GPT2LMHeadModel(config)
    n_params = sum(p.numel() for p in raw.parameters())
    decay = [p for p in raw.parameters() if p.dim() >= 2]
    no_decay = [p for p in raw.parameters() if p.dim() < 2]
    model = accelerator.prepare(raw)
    raw = accelerator.unwrap_model(model)
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": float(cfg.weight_decay)},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=float(cfg.lr), betas=(0.9, 0.95), fused=True if on_cuda else None)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule)
    scaler = torch.amp.GradScaler(device.type) if precision == "fp16" else None
    forward = model
    compile_note = None
    if cfg.compile:
        forward = torch.compile(model)

    # -- the run folder and resume state ------------------------------------------------
    out = Path(out)
    partial = out.with_name(out.name + ".partial")
    resume_path = partial / RESUME_FILE
    fingerprint = cfg.fingerprint(task, dataset, processes)
    state = None
    if resume_path.exists():
        try:
            state = torch.load(resume_path, map_location="cpu", weights_only=False)
        except (RuntimeError, EOFError, OSError):
            state = None
        if state is not None and state.get("fingerprint") != fingerprint:
            if accelerator.is_main_process:
                tqdm.write(f"{partial}: resume state is from a different command; starting afresh")
            state = None
    accelerator.wait_for_everyone()
    if accelerator.is_main_process and state is None:
        if partial.exists():
            shutil.rmtree(partial)
        partial.mkdir(parents=True)
    accelerator.wait_for_everyone()
    log_path = partial / "train_log.jsonl"

    step, best, history = 0, float("inf"), []
    tokens_seen, positions_seen, elapsed_before = 0, 0, 0.0
    file_state = None
    if state is not None:
        raw.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        sched.load_state_dict(state["scheduler"])
        if scaler is not None and state.get("scaler"):
            scaler.load_state_dict(state["scaler"])
        torch.set_rng_state(state["rng"]["torch"])
        if on_cuda and state["rng"].get("cuda") is not None:
            torch.cuda.set_rng_state(state["rng"]["cuda"][rank % len(state["rng"]["cuda"])], device)
        step, best, history = state["step"], state["best"], state["history"]
        tokens_seen, positions_seen = state["tokens_seen"], state["positions_seen"]
        elapsed_before = state["elapsed"]
        plan.update(state["plan"])
        file_state = state["data"][rank] if state.get("data") else None
        if accelerator.is_main_process:
            with log_path.open("w") as f:     # drop lines logged after the saved step
                for rec in history:
                    f.write(json.dumps(rec) + "\n")
            tqdm.write(f"resuming {partial} at step {step}")

    width = longest - 1 if cfg.compile else None     # fixed shapes avoid recompiling
    workers = cfg.data_workers
    if workers is None:
        workers = 0 if not on_cuda else max(1, min(8, (os.cpu_count() or 2) // max(1, torch.cuda.device_count()) - 2))
    if stream is not None:
        batches = StreamBatches(stream, cfg.batch_size, rank, processes, lut, vocab.bos_id, vocab.pad_id,
                                width=width, workers=workers, start_step=step)
    else:
        workers = 0
        batches = FileBatches(train_packed, cfg.batch_size, cfg.seed, rank, lut, vocab.bos_id, vocab.pad_id, width)
        if file_state is not None:
            batches.restore(file_state)

    peak = float(cfg.peak_flops) if cfg.peak_flops else matmul_peak_flops(device, precision)
    peak_source = "given" if cfg.peak_flops else f"measured by a {precision} matmul probe"

    def save_state():
        data_states = [batches.state()]
        if processes > 1:
            from accelerate.utils import gather_object

            data_states = gather_object(data_states)
        cuda_rng = None
        if on_cuda:
            cuda_rng = [torch.cuda.get_rng_state(device)]
            if processes > 1:
                from accelerate.utils import gather_object

                cuda_rng = gather_object(cuda_rng)
        if accelerator.is_main_process:
            _atomic_torch_save({
                "fingerprint": fingerprint, "step": step, "model": raw.state_dict(), "optimizer": opt.state_dict(),
                "scheduler": sched.state_dict(), "scaler": scaler.state_dict() if scaler is not None else None,
                "rng": {"torch": torch.get_rng_state(), "cuda": cuda_rng},
                "data": data_states if any(s is not None for s in data_states) else None,
                "best": best, "history": history, "tokens_seen": tokens_seen, "positions_seen": positions_seen,
                "elapsed": elapsed_before + (time.time() - t_loop), "plan": dict(plan),
            }, resume_path)
        accelerator.wait_for_everyone()

    def agreed(value: float, how: str) -> float:
        """The max or min of ``value`` over processes (so that every process takes the same branch)."""
        if processes == 1:
            return value
        sign = 1.0 if how == "max" else -1.0           # accelerate reduces by max or sum, not min
        flag = torch.tensor([sign * float(value)], device=device)
        return sign * float(accelerator.reduce(flag, reduction="max").item())

    def spent() -> float:
        return time.time() - t_start + elapsed_before

    def speed(iv) -> dict:
        """Throughput of the steps since the last log line (validation and saving excluded)."""
        dt = max(time.perf_counter() - iv["t"], 1e-9)
        return {"seconds": dt, "cpu_seconds": time.process_time() - iv["cpu"], "tokens_per_s": iv["tokens"] / dt,
                "mfu": 6.0 * n_params * iv["positions"] / dt / (peak * processes), "data_wait": iv["wait"] / dt}

    # -- loop --------------------------------------------------------------------------
    micro = cfg.batch_size // cfg.grad_accum
    model.train()
    bar = tqdm(total=plan["steps"] if not plan["fitted"] else None, initial=step,
               desc=f"train {task.name}/{dataset}", disable=not (progress and accelerator.is_main_process))
    last_loss = float("nan")
    loss_dev = None
    stopped = None
    t_loop = time.time()
    interval = {"t": time.perf_counter(), "cpu": time.process_time(), "tokens": 0, "positions": 0,
                            "wait": 0.0, "steps": 0}
    rate_mark = None          # (step, time) after warm-up, for fitting steps to the budget
    first_step = step
    with _StopFlag() as stop:
        while step < plan["steps"]:
            if stop.set:
                stopped = "interrupted"
                break
            # with several processes, budget and plan are agreed on at log steps only (one all-reduce)
            check = (processes == 1 or step % log_every == 0) and step > first_step   # at least one step per run
            if cfg.time_budget is not None and check and agreed(spent() >= cfg.time_budget, "max"):
                stopped = "time budget"
                break
            t_wait = time.perf_counter()
            ids_np = batches.next()
            n_real = int((ids_np != vocab.pad_id).sum())
            ids = torch.from_numpy(ids_np)
            if on_cuda:
                ids = ids.pin_memory().to(device, non_blocking=True)
            interval["wait"] += time.perf_counter() - t_wait
            targets = (ids_np[:, 1:] != vocab.pad_id).sum(axis=1)
            total_targets = max(int(targets.sum()), 1)
            for k in range(cfg.grad_accum):
                part = ids[k * micro:(k + 1) * micro]
                share = float(targets[k * micro:(k + 1) * micro].sum()) / total_targets
                sync_ctx = accelerator.no_sync(model) if k < cfg.grad_accum - 1 else _nullcontext()
                with sync_ctx:
                    with autocast():
                        try:
                            logits = forward(input_ids=part).logits
                        except Exception as exc:  # torch.compile may fail on a machine without a compiler
                            if forward is model:
                                raise
                            compile_note = f"torch.compile failed, ran eagerly: {type(exc).__name__}: {exc}"[:500]
                            tqdm.write(f"worldmodel: {compile_note}")
                            forward = model
                            logits = forward(input_ids=part).logits
                        loss = lm_loss(logits, part, vocab.pad_id)
                    scaled = loss * share if cfg.grad_accum > 1 else loss
                    if scaler is not None:
                        scaler.scale(scaled).backward()
                    else:
                        scaled.backward()
                loss_dev = scaled.detach() if k == 0 else loss_dev + scaled.detach()
            if scaler is not None:
                scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            if scaler is not None:
                scaler.step(opt)
                scaler.update()
            else:
                opt.step()
            sched.step()
            opt.zero_grad(set_to_none=True)
            step += 1
            bar.update(1)
            tokens_seen += n_real * processes
            positions_seen += ids_np.size * processes
            interval["tokens"] += n_real * processes
            interval["positions"] += ids_np.size * processes
            interval["steps"] += 1

            if plan["fitted"] and (processes == 1 or step % log_every == 0):
                # fit the schedule to the budget once the step rate after warm-up (compilation) is known
                now = time.time()
                if rate_mark is None and step >= first_step + 5:
                    rate_mark = (step, now)
                elif rate_mark is not None and agreed(step - rate_mark[0] >= 10 and spent() >= 0.1 * cfg.time_budget, "max"):
                    rate = (step - rate_mark[0]) / max(now - rate_mark[1], 1e-9)
                    planned = step + max(1, int(rate * (cfg.time_budget - spent()) * 0.97))
                    plan.update(steps=int(agreed(planned, "min")), fitted=False)
                    bar.total = plan["steps"]
                    bar.refresh()

            is_eval = step % eval_every == 0 or step == plan["steps"]
            if step % log_every == 0 or is_eval:
                last_loss = float(loss_dev)             # the only host sync between logs
                rec = {"step": step, "loss": last_loss, "lr": sched.get_last_lr()[0], **speed(interval)}
                if is_eval and val_ids is not None:
                    if accelerator.is_main_process:
                        rec["val_loss"] = validation_loss(raw, val_ids, vocab.pad_id, device, autocast)
                        if cfg.keep == "best" and rec["val_loss"] < best:
                            best = rec["val_loss"]
                            rec["saved"] = True
                            raw.save_pretrained(partial)
                    accelerator.wait_for_everyone()
                if accelerator.is_main_process:
                    history.append(rec)
                    with log_path.open("a") as f:
                        f.write(json.dumps(rec) + "\n")
                    if echo is not None:
                        echo(rec)
                    bar.set_postfix(loss=f"{last_loss:.3f}", val=f"{rec.get('val_loss', float('nan')):.3f}",
                                    mfu=f"{rec['mfu']:.1%}")
                if step % save_every == 0 and step < plan["steps"]:
                    save_state()
                interval = {"t": time.perf_counter(), "cpu": time.process_time(), "tokens": 0, "positions": 0,
                            "wait": 0.0, "steps": 0}
        if stopped == "interrupted":
            save_state()
            bar.close()
            if hasattr(batches, "close"):
                batches.close()
            raise WorldModelError(f"interrupted at step {step}; rerun the same command to resume from {partial}")
    bar.close()
    if hasattr(batches, "close"):
        batches.close()
    if loss_dev is not None:
        last_loss = float(loss_dev)
    final_val = next((h["val_loss"] for h in reversed(history) if "val_loss" in h), None)
    if stopped == "time budget" and val_ids is not None and accelerator.is_main_process:
        rec = {"step": step, "loss": last_loss, "lr": sched.get_last_lr()[0],
               **(speed(interval) if interval["steps"] else {}),
               "val_loss": validation_loss(raw, val_ids, vocab.pad_id, device, autocast), "stopped": stopped}
        if cfg.keep == "best" and rec["val_loss"] < best:
            best = rec["val_loss"]
            rec["saved"] = True
            raw.save_pretrained(partial)
        history.append(rec)
        with log_path.open("a") as f:
            f.write(json.dumps(rec) + "\n")
        if echo is not None:
            echo(rec)
        final_val = rec["val_loss"]
    accelerator.wait_for_everyone()
    seconds = elapsed_before + (time.time() - t_loop)
    train_logs = [h for h in history if "tokens_per_s" in h]
    summary = {
        "task": task.name, "task_file": str(task.path), "dataset": dataset, "steps": step,
        "planned_steps": plan["steps"] if plan["steps"] < 10 ** 9 else None,
        "stopped": stopped, "batch_size": cfg.batch_size, "grad_accum": cfg.grad_accum, "lr": cfg.lr,
        "keep": cfg.keep, "seed": cfg.seed, "n_params": n_params,
        "model": {k: v for k, v in mcfg.items()}, "final_loss": last_loss,
        "final_val_loss": final_val, "best_val_loss": best if cfg.keep == "best" else None,
        "data": cfg.data, "train_sequences": n_train, "sequences_seen": step * cfg.batch_size * processes,
        "precision": precision, "tf32": on_cuda, "compile": cfg.compile, "compile_note": compile_note,
        "attention": getattr(raw.config, "_attn_implementation", None), "device": _device_name(device),
        "processes": processes, "data_workers": workers, "time_budget": cfg.time_budget,
        "seconds": seconds, "tokens_per_s": tokens_seen / max(seconds, 1e-9),
        "train_tokens_per_s": _median([h["tokens_per_s"] for h in train_logs]),
        "mfu": _median([h["mfu"] for h in train_logs]),
        "data_wait": _median([h["data_wait"] for h in train_logs]),
        "peak_flops": peak, "peak_flops_source": peak_source,
        "versions": {"torch": torch.__version__, "transformers": _version("transformers"),
                     "accelerate": _version("accelerate")},
    }
    if accelerator.is_main_process:
        if cfg.keep == "last" or not (partial / "config.json").exists():
            raw.save_pretrained(partial)
        vocab.save(partial)
        (partial / "training.json").write_text(json.dumps(summary, indent=2))
        shutil.copy(task.path, partial / "task.toml")
        if resume_path.exists():
            resume_path.unlink()
        if out.exists():
            shutil.rmtree(out)
        partial.rename(out)
    accelerator.wait_for_everyone()
    return summary


class _nullcontext:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def _median(values):
    values = [v for v in values if v is not None]
    return float(np.median(values)) if values else None


def _version(name: str) -> str | None:
    try:
        from importlib.metadata import version

        return version(name)
    except Exception:  # noqa: BLE001 - a missing distribution is not an error here
        return None


def _device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    import platform

    return f"cpu ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)"
