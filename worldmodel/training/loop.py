"""The training loop: :func:`train`."""

from __future__ import annotations

import functools
import json
import math
import os
import shutil
import time
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from ..datastream import PackedSequences, token_lut
from ..errors import Interrupted, WorldModelError
from ..models import Vocabulary, quiet_transformers
from ..safety import atomic_json, atomic_write, claim, recover_swap, rewrite_lines, swap_folder, writing
from ..tasks import Task
from .batches import FileBatches, StreamBatches, model_ids
from .config import TrainConfig
from .speed import _device_name, _median, _version, matmul_peak_flops
from .state import RESUME_FILE, StopFlag, complete_partial, load_state, save_model, save_state

#: Sub-folder of a checkpoint holding the snapshots of ``snapshots = true`` (one loadable checkpoint each).
SNAPSHOTS = "snapshots"

#: Validation sequences used (the first ones of ``val.txt``).
VAL_SEQUENCES = 2000


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
            raise WorldModelError(f"task {task.where} [train]: cpu_threads must be a whole number >= 0, got {n!r}")
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

    The run claims ``out`` (a second run on it stops with one line naming the first) and works
    in ``<out>.partial``; the finished folder replaces ``out`` only when it is complete, so the
    previous ``out`` stays until then. Ctrl-C or SIGTERM saves the resume state at the step
    boundary and raises :class:`~worldmodel.errors.Interrupted`; once the last step is done a
    first Ctrl-C no longer stops the run, which only writes its files.
    """
    from accelerate import Accelerator

    is_main = int(os.environ.get("RANK", "0")) == 0
    lock = claim(out, "--out") if is_main else None
    try:
        return _train(task, out, dataset, steps, data_dir, seed, progress, overrides, echo, Accelerator)
    finally:
        if lock is not None:
            lock.release()


def _train(task, out, dataset, steps, data_dir, seed, progress, overrides, echo, Accelerator) -> dict:
    """:func:`train` once ``out`` is claimed."""
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
        trained_len = int(stream.max_len)
    else:
        train_packed = PackedSequences.read(folder / "train.txt", world.tokens)
        if not len(train_packed):
            raise WorldModelError(f"{folder / 'train.txt'} holds no sequences")
        longest = train_packed.max_len()
        n_train = len(train_packed)
        trained_len = int(longest)
    longest = max(longest, val_packed.max_len()) + 1          # + <bos>
    # the network of the task's [model] family (GPT-2, LSTM, GRU, Mamba), built once the seed is set below
    from ..models.families import build_network, context_limit

    torch.manual_seed(cfg.seed)
    raw = build_network(vocab, mcfg)
    limit = context_limit(raw)
    if limit is not None and longest > limit:
        raise WorldModelError(
            f"task {task.where}: sequences need {longest} positions but [model] n_positions = {limit}"
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
    quiet_transformers()
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
    if accelerator.is_main_process:
        recover_swap(out)
    done = complete_partial(partial, fingerprint)
    if done is not None:
        # a run of this command finished here and was stopped before its folder was swapped in
        accelerator.wait_for_everyone()
        if accelerator.is_main_process:
            if resume_path.exists():
                resume_path.unlink()
            swap_folder(partial, out)
            tqdm.write(f"{partial} holds this command's finished checkpoint; moved it to {out}")
        accelerator.wait_for_everyone()
        return {k: v for k, v in done.items() if k != "resume_fingerprint"}
    state, why = load_state(resume_path, fingerprint)
    if why is not None and accelerator.is_main_process:
        tqdm.write(f"{partial}: {why}; starting afresh")
    accelerator.wait_for_everyone()
    if accelerator.is_main_process and state is None:
        with writing(partial, "training folder"):
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
            # drop lines logged after the saved step: a new file renamed over the old, never rewritten in place
            rewrite_lines(log_path, [json.dumps(rec) for rec in history], "training log")
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

    def checkpoint_state():
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
            save_state({
                "fingerprint": fingerprint, "step": step, "model": raw.state_dict(), "optimizer": opt.state_dict(),
                "scheduler": sched.state_dict(), "scaler": scaler.state_dict() if scaler is not None else None,
                "rng": {"torch": torch.get_rng_state(), "cuda": cuda_rng},
                "data": data_states if any(s is not None for s in data_states) else None,
                "best": best, "history": history, "tokens_seen": tokens_seen, "positions_seen": positions_seen,
                "elapsed": elapsed_before + (time.time() - t_loop), "plan": dict(plan),
            }, resume_path)
        accelerator.wait_for_everyone()

    def save_snapshot():
        """A loadable checkpoint of the weights now, ``<out>/snapshots/step-<N>`` (``snapshots = true``)."""
        if not accelerator.is_main_process:
            return
        where = partial / SNAPSHOTS / f"step-{step:07d}"
        tmp = where.with_name(where.name + ".tmp")
        if tmp.exists():
            shutil.rmtree(tmp)
        raw.save_pretrained(tmp)
        vocab.save(tmp)
        (tmp / "training.json").write_text(json.dumps(
            {"task": task.name, "dataset": dataset, "steps": step, "snapshot": True, "trained_len": trained_len,
             "seed": cfg.seed, "sequences_seen": step * cfg.batch_size * processes}, indent=2))
        if where.exists():
            shutil.rmtree(where)
        tmp.rename(where)

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

    def validate(rec: dict) -> None:
        """The validation loss into ``rec`` (main process); with ``keep = "best"``, save the model when it is the best yet."""
        nonlocal best
        rec["val_loss"] = validation_loss(raw, val_ids, vocab.pad_id, device, autocast)
        if cfg.keep == "best" and rec["val_loss"] < best:
            best = rec["val_loss"]
            rec["saved"] = True
            save_model(raw, partial)

    def record(rec: dict) -> None:
        """Append a record to the history and the training log (main process)."""
        history.append(rec)
        with writing(log_path, "training log"), log_path.open("a") as f:
            f.write(json.dumps(rec) + "\n")
        if echo is not None:
            echo(rec)

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
    if cfg.snapshots and step == 0:
        save_snapshot()
    with StopFlag() as stop:
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
                sync_ctx = accelerator.no_sync(model) if k < cfg.grad_accum - 1 else nullcontext()
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

            if cfg.snapshots and step % save_every == 0 and step < plan["steps"]:
                save_snapshot()
            is_eval = step % eval_every == 0 or step == plan["steps"]
            if step % log_every == 0 or is_eval:
                last_loss = float(loss_dev)             # the only host sync between logs
                rec = {"step": step, "loss": last_loss, "lr": sched.get_last_lr()[0], **speed(interval)}
                if is_eval and val_ids is not None:
                    if accelerator.is_main_process:
                        validate(rec)
                    accelerator.wait_for_everyone()
                if accelerator.is_main_process:
                    record(rec)
                    bar.set_postfix(loss=f"{last_loss:.3f}", val=f"{rec.get('val_loss', float('nan')):.3f}",
                                    mfu=f"{rec['mfu']:.1%}")
                if step % save_every == 0 and step < plan["steps"]:
                    checkpoint_state()
                interval = {"t": time.perf_counter(), "cpu": time.process_time(), "tokens": 0, "positions": 0,
                            "wait": 0.0, "steps": 0}
        if stopped == "interrupted":
            checkpoint_state()
            bar.close()
            if hasattr(batches, "close"):
                batches.close()
            raise Interrupted(f"interrupted at step {step}; rerun the same command to resume from {partial}",
                              stop.signum)
        # the last step is done: from here a first Ctrl-C is noted, and the run only writes its files
        bar.close()
        if hasattr(batches, "close"):
            batches.close()
        if loss_dev is not None:
            last_loss = float(loss_dev)
        final_val = next((h["val_loss"] for h in reversed(history) if "val_loss" in h), None)
        if stopped == "time budget" and val_ids is not None and accelerator.is_main_process:
            rec = {"step": step, "loss": last_loss, "lr": sched.get_last_lr()[0],
                   **(speed(interval) if interval["steps"] else {}), "stopped": stopped}
            validate(rec)
            record(rec)
            final_val = rec["val_loss"]
        accelerator.wait_for_everyone()
        seconds = elapsed_before + (time.time() - t_loop)
        train_logs = [h for h in history if "tokens_per_s" in h]
        summary = {
            "task": task.name, "task_file": str(task.path) if task.path is not None else None, "dataset": dataset, "steps": step,
            "planned_steps": plan["steps"] if plan["steps"] < 10 ** 9 else None,
            "stopped": stopped, "batch_size": cfg.batch_size, "grad_accum": cfg.grad_accum, "lr": cfg.lr,
            "keep": cfg.keep, "seed": cfg.seed, "n_params": n_params,
            "model": {k: v for k, v in mcfg.items()}, "final_loss": last_loss,
            "final_val_loss": final_val, "best_val_loss": best if cfg.keep == "best" else None,
            "data": cfg.data, "train_sequences": n_train, "sequences_seen": step * cfg.batch_size * processes,
            "trained_len": trained_len,
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
                save_model(raw, partial)
            if cfg.snapshots:
                save_snapshot()
            with writing(partial / vocab.FILE, "vocabulary"):
                vocab.save(partial)
            atomic_write(partial / "task.toml", task.path.read_bytes() if task.path is not None else task.toml(),
                         "task file")
            # written last: a training.json with this command's fingerprint marks the folder complete
            atomic_json(partial / "training.json", {**summary, "resume_fingerprint": fingerprint}, "training record",
                        indent=2)
            if resume_path.exists():
                resume_path.unlink()
            swap_folder(partial, out)        # the old --out stays until this moment
        accelerator.wait_for_everyone()
        return summary
