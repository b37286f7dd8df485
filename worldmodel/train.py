"""Training a GPT-2 from scratch on a task's sequences (nanoGPT-style loop).

One plain loop: random batches of whole sequences (``<bos> x1 … xn``, right-padded),
next-token cross-entropy, AdamW with linear warm-up and cosine decay, periodic
validation. It runs through :mod:`accelerate`, so the same code trains on the CPU,
on one GPU, or on several processes with ``accelerate launch -m worldmodel.cli train …``.

The output folder is a ``save_pretrained`` checkpoint plus ``vocab.json`` (the
domain tokens), ``training.json`` (task, dataset, settings, final losses) and
``train_log.jsonl`` (one line per logged step). It is written to ``<out>.partial``
and renamed at the end, so a killed run never leaves a folder that looks complete.

``[train]`` settings: ``steps``, ``batch_size``, ``lr``, ``weight_decay`` (0.01),
``warmup`` (steps), ``eval_every``, ``keep`` (``"last"`` or ``"best"`` validation
loss, as the paper keeps the best checkpoint for shortest paths), ``log_every``.
"""

from __future__ import annotations

import json
import math
import shutil
import time
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from .errors import WorldModelError
from .models import Vocabulary, gpt2_config, quiet_transformers
from .tasks import Task, read_sequences


def _batches(data: list[list[int]], batch_size: int, pad: int, rng: np.random.Generator):
    """Endless random batches: (input_ids, attention_mask, labels)."""
    while True:
        idx = rng.integers(0, len(data), size=batch_size)
        rows = [data[i] for i in idx]
        L = max(len(r) for r in rows)
        ids = torch.full((batch_size, L), pad, dtype=torch.long)
        mask = torch.zeros((batch_size, L), dtype=torch.long)
        for r, x in enumerate(rows):
            ids[r, :len(x)] = torch.tensor(x)
            mask[r, :len(x)] = 1
        labels = ids.masked_fill(mask == 0, -100)
        yield ids, mask, labels


@torch.no_grad()
def _val_loss(model, data, batch_size, pad, device) -> float:
    model.eval()
    total, count = 0.0, 0
    for b in range(0, len(data), batch_size):
        rows = data[b:b + batch_size]
        L = max(len(r) for r in rows)
        ids = torch.full((len(rows), L), pad, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for r, x in enumerate(rows):
            ids[r, :len(x)] = torch.tensor(x)
            mask[r, :len(x)] = 1
        labels = ids.masked_fill(mask == 0, -100)
        out = model(input_ids=ids.to(device), attention_mask=mask.to(device), labels=labels.to(device))
        n = int((labels[:, 1:] != -100).sum())
        total += float(out.loss) * n
        count += n
    model.train()
    return total / max(count, 1)


def train(task: Task, out: str | Path, dataset: str | None = None, steps: int | None = None,
          data_dir: str | Path | None = None, seed: int | None = None, progress: bool = True,
          overrides: dict | None = None) -> dict:
    """Train a model for ``task`` on ``dataset`` and save it to ``out``; returns the summary."""
    from accelerate import Accelerator

    domain = task.domain
    world = domain.world
    dataset = dataset or domain.datasets()[0]
    tcfg = {**task.section("train"), **(overrides or {})}
    mcfg = task.section("model")
    steps = int(steps if steps is not None else tcfg.get("steps", 1000))
    if steps < 1:
        raise WorldModelError("--steps must be at least 1")
    batch_size = int(tcfg.get("batch_size", 32))
    lr = float(tcfg.get("lr", 1e-3))
    warmup = int(tcfg.get("warmup", min(100, steps // 10)))
    eval_every = int(tcfg.get("eval_every", max(1, steps // 5)))
    log_every = int(tcfg.get("log_every", max(1, min(50, steps // 20))))
    keep = str(tcfg.get("keep", "last"))
    if keep not in ("last", "best"):
        raise WorldModelError(f"task {task.path}: [train] keep must be 'last' or 'best'")
    seed = task.seed if seed is None else int(seed)

    out = Path(out)
    folder = domain.ensure_data(dataset, data_dir)
    vocab = Vocabulary(world.tokens, world.name)
    train_seqs = read_sequences(folder / "train.txt", world, check=False)
    val_seqs = read_sequences(folder / "val.txt", world, check=False)
    if not train_seqs:
        raise WorldModelError(f"{folder / 'train.txt'} holds no sequences")
    train_ids = [vocab.encode(s) for s in train_seqs]
    val_ids = [vocab.encode(s) for s in val_seqs][:2000]
    longest = max(len(x) for x in train_ids + val_ids)
    config = gpt2_config(vocab, **mcfg)
    if longest > config.n_positions:
        raise WorldModelError(
            f"task {task.path}: sequences need {longest} positions but [model] n_positions = {config.n_positions}"
        )

    from transformers import GPT2LMHeadModel

    quiet_transformers()
    torch.manual_seed(seed)
    accelerator = Accelerator(cpu=not torch.cuda.is_available())
    model = GPT2LMHeadModel(config)
    n_params = sum(p.numel() for p in model.parameters())
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": float(tcfg.get("weight_decay", 0.01))},
         {"params": no_decay, "weight_decay": 0.0}], lr=lr, betas=(0.9, 0.95))

    def schedule(step):
        if step < warmup:
            return (step + 1) / max(1, warmup)
        frac = (step - warmup) / max(1, steps - warmup)
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, frac)))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule)
    model, opt, sched = accelerator.prepare(model, opt, sched)
    device = accelerator.device
    # each process draws its own batches
    rng = np.random.default_rng([seed, accelerator.process_index])
    batches = _batches(train_ids, batch_size, vocab.pad_id, rng)

    partial = out.with_name(out.name + ".partial")
    if accelerator.is_main_process:
        if partial.exists():
            shutil.rmtree(partial)
        partial.mkdir(parents=True)
    accelerator.wait_for_everyone()
    log_path = partial / "train_log.jsonl"
    best = float("inf")
    history = []
    t0 = time.time()
    tokens_seen = 0
    model.train()
    bar = tqdm(range(steps), desc=f"train {task.name}/{dataset}", disable=not (progress and accelerator.is_main_process))
    last_loss = float("nan")
    for step in bar:
        ids, mask, labels = next(batches)
        tokens_seen += int(mask.sum()) * accelerator.num_processes
        outp = model(input_ids=ids.to(device), attention_mask=mask.to(device), labels=labels.to(device))
        accelerator.backward(outp.loss)
        accelerator.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        last_loss = float(outp.loss.detach())
        is_eval = (step + 1) % eval_every == 0 or step + 1 == steps
        if accelerator.is_main_process and ((step + 1) % log_every == 0 or is_eval):
            rec = {"step": step + 1, "loss": last_loss, "lr": sched.get_last_lr()[0],
                   "tokens_per_s": tokens_seen / max(time.time() - t0, 1e-9)}
            if is_eval and val_ids:
                rec["val_loss"] = _val_loss(accelerator.unwrap_model(model), val_ids, 64, vocab.pad_id, device)
                if keep == "best" and rec["val_loss"] < best:
                    best = rec["val_loss"]
                    rec["saved"] = True
                    accelerator.unwrap_model(model).save_pretrained(partial)
            history.append(rec)
            with log_path.open("a") as f:
                f.write(json.dumps(rec) + "\n")
            bar.set_postfix(loss=f"{last_loss:.3f}", val=f"{rec.get('val_loss', float('nan')):.3f}")
    accelerator.wait_for_everyone()
    summary = {
        "task": task.name, "task_file": str(task.path), "dataset": dataset, "steps": steps,
        "batch_size": batch_size, "lr": lr, "keep": keep, "seed": seed, "n_params": n_params,
        "model": {k: v for k, v in mcfg.items()}, "final_loss": last_loss,
        "final_val_loss": next((h["val_loss"] for h in reversed(history) if "val_loss" in h), None),
        "best_val_loss": best if keep == "best" else None,
        "train_sequences": len(train_ids), "seconds": time.time() - t0,
        "tokens_per_s": tokens_seen / max(time.time() - t0, 1e-9),
    }
    if accelerator.is_main_process:
        if keep == "last" or not (partial / "config.json").exists():
            accelerator.unwrap_model(model).save_pretrained(partial)
        vocab.save(partial)
        (partial / "training.json").write_text(json.dumps(summary, indent=2))
        shutil.copy(task.path, partial / "task.toml")
        if out.exists():
            shutil.rmtree(out)
        partial.rename(out)
    accelerator.wait_for_everyone()
    return summary

