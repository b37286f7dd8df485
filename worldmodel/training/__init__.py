"""Training a model from scratch on a task's sequences (nanoGPT-style loop).

Modules: :mod:`.config` (:class:`TrainConfig`, the ``[train]`` settings), :mod:`.batches` (file and stream
batches), :mod:`.state` (resumable state, interrupts, the final swap), :mod:`.speed` (peak FLOP/s probe and
speed records), :mod:`.loop` (:func:`train`).

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

import importlib

_EXPORTS = {
    "STREAM_CHUNK": ".batches", "FileBatches": ".batches", "StreamBatches": ".batches", "model_ids": ".batches",
    "DATA_MODES": ".config", "PRECISIONS": ".config", "TrainConfig": ".config",
    "VAL_SEQUENCES": ".loop", "fixed_cpu_threads": ".loop", "lm_loss": ".loop", "train": ".loop",
    "validation_loss": ".loop",
    "matmul_peak_flops": ".speed",
    "RESUME_FILE": ".state",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    # imported on first use: the settings (.config) load without torch
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'worldmodel.training' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
