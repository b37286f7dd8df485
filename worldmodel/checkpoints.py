"""Checkpoints: load one, say what it was trained on, reuse it or train it.

A checkpoint is the folder :func:`worldmodel.training.train` writes: a
``save_pretrained`` model, ``vocab.json``, ``training.json`` (task, dataset, steps,
losses, time) and ``task.toml`` (the task file it was trained from).

* :func:`load` — an :class:`~worldmodel.models.HFModel` for a world (vocabulary checked);
* :func:`trained_dataset` — the dataset named in ``training.json``;
* :func:`choose_dataset` — the one rule every command uses: the dataset given
  explicitly, else the checkpoint's, else the task's first;
* :func:`mismatch` — ``None`` when a folder is a finished checkpoint of a task, a
  dataset and a step count; otherwise why not;
* :func:`reuse_or_train` — the checkpoint a reproduction needs: reused when it
  matches, trained (or refused) when it does not.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from . import safety
from .errors import WorldModelError

#: sections of a task file that decide what a checkpoint learnt (``[train] steps`` is checked on its own)
TRAINING_SECTIONS = ("world", "data", "model", "train")


def load(folder: str | Path, world, device: str = "cpu", missing: str = "error"):
    """The checkpoint at ``folder`` as a model over ``world``'s tokens (vocabulary checked; with
    ``missing="zero"`` a vocabulary lacking world tokens is scored with them at probability 0).

    A folder written by ``worldmodel train`` or ``worldmodel import``, or a foreign
    checkpoint (the paper's, Li et al.'s, nanoGPT's, a Hugging Face folder), imported on
    the fly with its format detected (:func:`worldmodel.models.importers.load_checkpoint`).
    """
    from .models.importers import load_checkpoint

    model = load_checkpoint(folder, world, device=device, missing=missing)
    model.trained_len = trained_len(folder)
    model.fingerprint = weights_fingerprint(folder)
    return model


#: file endings of the weights a checkpoint folder may hold (ours, Hugging Face's, torch's)
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt")


def weights_fingerprint(folder: str | Path) -> str | None:
    """SHA-256 (16 hex digits) over the weight files directly in ``folder``, by name; ``None`` if it has none.

    Two trainings into one folder give different fingerprints even with the same label,
    so a trial log written for the first is never resumed for the second.
    """
    import hashlib

    folder = Path(folder)
    if not folder.is_dir():
        return None
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix in WEIGHT_SUFFIXES)
    if not files:
        return None
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode() + b"\0")
        with path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()[:16]


def trained_len(folder: str | Path) -> int | None:
    """The longest sequence (world tokens) a checkpoint was trained on, from ``training.json``.

    ``None`` for a checkpoint without that record (an imported one: its context is then
    the only bound the metrics know).
    """
    record = training_record(folder) if Path(folder).is_dir() else None
    value = record.get("trained_len") if record else None
    return int(value) if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def training_record(folder: str | Path) -> dict | None:
    """``training.json`` of a checkpoint as a dict; ``None`` when missing or unreadable."""
    path = Path(folder) / "training.json"
    if not path.exists():
        return None
    try:
        record = safety.read_json(path, "json", "training record")   # bounded, a regular file, strict JSON
    except WorldModelError:
        return None
    return record if isinstance(record, dict) else None


def trained_dataset(folder: str | Path) -> str | None:
    """The dataset a checkpoint was trained on, from its ``training.json`` (``None`` if unknown)."""
    record = training_record(folder)
    return record.get("dataset") if record else None


def choose_dataset(datasets: list[str], dataset: str | None = None, checkpoint: str | Path | None = None) -> str:
    """The dataset to use: ``dataset`` if given, else the checkpoint's, else the first of ``datasets``."""
    if dataset:
        return dataset
    if checkpoint:
        got = trained_dataset(checkpoint)
        if got:
            return got
    return datasets[0]


def training_settings(config: dict) -> dict:
    """The parts of a task config that decide a checkpoint: world, data, model, train (steps apart), seed."""
    out = {key: config.get(key, {}) for key in TRAINING_SECTIONS}
    out["train"] = {k: v for k, v in out["train"].items() if k != "steps"}
    out["seed"] = config.get("seed", 0)
    return out


def mismatch(folder: str | Path, task, dataset: str, steps: int) -> str | None:
    """``None`` when ``folder`` is a finished checkpoint of ``task``/``dataset`` with ``steps``; else why not."""
    folder = Path(folder)
    info_path, toml_path = folder / "training.json", folder / "task.toml"
    if not info_path.exists() or not toml_path.exists():
        return "no finished checkpoint"
    try:
        info = safety.read_json_object(info_path, "json", "training record")
        saved = tomllib.loads(safety.read_text(toml_path, "task", "task file"))
    except (WorldModelError, tomllib.TOMLDecodeError) as exc:
        return f"unreadable training record ({exc})"
    if info.get("task") != task.name or info.get("dataset") != dataset:
        return f"trained for {info.get('task')}/{info.get('dataset')}"
    if "trained_len" not in info:
        return "trained before checkpoints recorded their trained length"
    if int(info.get("steps", -1)) != int(steps):
        return f"trained for {info.get('steps')} steps, want {steps}"
    if training_settings(saved) != training_settings(task.config):
        return "task settings changed since it was trained"
    return None


def reuse_or_train(task, dataset: str, folder: str | Path, steps: int | None = None,
                   data_dir: str | Path | None = None, train: bool = True,
                   progress: bool = True) -> tuple[Path, dict]:
    """A checkpoint of ``task`` on ``dataset`` in ``folder``: reused when it matches, else trained.

    ``steps`` defaults to the task's ``[train] steps`` (1000 if unset). With
    ``train=False`` a folder that cannot be reused is an error instead. Returns the
    folder and its ``training.json`` record.
    """
    folder = Path(folder)
    want = int(steps if steps is not None else task.section("train").get("steps", 1000))  # train()'s default
    why = mismatch(folder, task, dataset, want)
    if why is None:
        info = safety.read_json_object(folder / "training.json", "json", "training record")
        info.pop("resume_fingerprint", None)       # what marks a finished run's folder, not part of its summary
        print(f"reusing {folder} ({info['steps']} steps, trained in {info['seconds']:.0f} s)")
        return folder, info
    if not train:
        raise WorldModelError(f"{folder} cannot be reused ({why}) and training is off")
    from .training import train as run_training

    print(f"training {task.name}/{dataset} into {folder} ({why})")
    info = run_training(task, folder, dataset=dataset, steps=want, data_dir=data_dir, progress=progress)
    print(f"  {info['n_params']:,} parameters, {info['steps']} steps in {info['seconds']:.0f} s, "
          f"val loss {info['final_val_loss']}")
    return folder, info
