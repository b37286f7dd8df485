"""Benchmark: the metric engine against a naive engine, same seeds, same numbers.

The naive engine is the straightforward way to run the paper's tests: one trial at
a time; continuations sampled with ``model.generate`` (a logits processor applies
the acceptance rule and picks each token from the trial's own uniforms, so both
engines draw identical samples); every suffix rescored as a full padded
``prefix + suffix`` sequence, the prefix recomputed each time.

The engine batches the model calls of ``--batch-trials`` trials together, runs each
prefix once and reuses its key/value cache for every continuation sampled or
scored after it.

    python scripts/bench_metrics.py [--task toy-dfa] [--checkpoint DIR] [--trials 60]

Without ``--checkpoint`` it trains the task's model first (``--train-steps``). It
prints trials per second for both engines, their ratio, and asserts that the
metric values are identical.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from worldmodel.dfa import exact_boundary, first_rejection, sampled_boundary
from worldmodel.errors import TrialSkipped
from worldmodel.metrics import Settings, compression, distinction
from worldmodel.models import HFModel
from worldmodel.results import aggregate, trial_seed
from worldmodel.tasks import load_task
from worldmodel.train import train


class _ForceTokens:
    """A logits processor choosing each token from given uniforms (inverse CDF over allowed tokens)."""

    def __init__(self, model: HFModel, uniforms: np.ndarray, acceptance, stop_ids: set[int]):
        self.m, self.u, self.acc, self.stop = model, torch.as_tensor(uniforms), acceptance, stop_ids
        self.step = 0
        self.done = torch.zeros(uniforms.shape[0], dtype=torch.bool)

    def __call__(self, input_ids, scores):
        off = self.m.vocab.offset
        probs = torch.softmax(scores.float(), -1)[:, off:]
        allowed = self.acc.mask(probs) & (probs > 0)
        w = torch.where(allowed, probs, torch.zeros_like(probs)).double()
        total = w.sum(-1)
        self.done |= total <= 0
        cdf = w.cumsum(-1) / total.clamp(min=1e-300)[:, None]
        choice = (cdf <= self.u[:, self.step:self.step + 1]).sum(-1).clamp(max=probs.shape[-1] - 1) + off
        choice = torch.where(self.done, torch.full_like(choice, self.m.vocab.pad_id), choice)
        self.done |= torch.isin(choice, torch.tensor(sorted(self.stop) or [-1]))
        self.step += 1
        out = torch.full_like(scores, float("-inf"))
        return out.scatter(1, choice[:, None], 0.0)


def naive_sample(model: HFModel, prefix, uniforms, acceptance, stop_tokens):
    if uniforms.shape[1] == 0:
        return [() for _ in range(uniforms.shape[0])]
    ids = torch.tensor([model.vocab.encode(prefix)] * uniforms.shape[0])
    stop = {model.vocab.stoi[t] for t in stop_tokens if t in model.vocab.stoi}
    proc = _ForceTokens(model, uniforms, acceptance, stop)
    with torch.no_grad():
        out = model.model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False,
                                   max_new_tokens=uniforms.shape[1], logits_processor=[proc],
                                   pad_token_id=model.vocab.pad_id, eos_token_id=None)
    res = []
    for row in out[:, ids.shape[1]:].tolist():
        toks = []
        for x in row:
            if x == model.vocab.pad_id:
                break
            toks.append(model.vocab.itos[x])
            if x in stop:
                break
        res.append(tuple(toks))
    return res


def naive_accepts(model: HFModel, prefix, suffixes, acceptance):
    """Per suffix: all tokens accepted? Each suffix is a full padded sequence with its prefix."""
    res = []
    rows = [model.vocab.encode(list(prefix) + list(s)) for s in suffixes if len(s)]
    if rows:
        L = max(len(r) for r in rows)
        ids = torch.full((len(rows), L), model.vocab.pad_id)
        mask = torch.zeros_like(ids)
        for i, r in enumerate(rows):
            ids[i, :len(r)] = torch.tensor(r)
            mask[i, :len(r)] = 1
        with torch.no_grad():
            probs = torch.softmax(model.model(input_ids=ids, attention_mask=mask).logits.float(), -1)
        acc = acceptance.mask(probs[..., model.vocab.offset:])
    r = 0
    for s in suffixes:
        if not len(s):
            res.append((True, None))
            continue
        P = len(prefix)
        flags = [bool(acc[r, P + j, model.vocab.stoi[t] - model.vocab.offset]) for j, t in enumerate(s)]
        bad = [j for j, f in enumerate(flags) if not f]
        res.append((not bad, bad[0] if bad else None))
        r += 1
    return res


def naive_trials(name, draw, world, model, s: Settings, trials: list):
    """Per trial: its rng, prefix pair and M samples after prefix 1, drawn as the engine draws them.

    Trials whose pair cannot be drawn are appended to ``trials`` as skipped.
    """
    for i in range(s.trials):
        rng = np.random.default_rng(trial_seed(s.seed, name, i))
        try:
            pair = draw(rng)
        except TrialSkipped as exc:
            trials.append({"trial": i, "status": "skipped", "reason": exc.reason})
            continue
        u = rng.random((s.M, s.max_sample_len))
        room = min(s.max_sample_len, model.max_positions - max(len(pair.prefix1), len(pair.prefix2)) - 1)
        samples = naive_sample(model, pair.prefix1, u[:, :room], s.acceptance, world.stop_tokens)
        yield i, rng, pair, samples


def naive_compression(world, model, sampler, s: Settings):
    trials = []
    for i, _, pair, samples in naive_trials("compression", sampler.compression_pair, world, model, s, trials):
        ok = all(a for a, _ in naive_accepts(model, pair.prefix2, samples, s.acceptance))
        trials.append({"trial": i, "status": "ok", "key": pair.key,
                       "pair": " ".join(pair.prefix1) + " || " + " ".join(pair.prefix2), "score": float(ok)})
    return aggregate("compression_precision", trials)


def naive_distinction(world, model, sampler, s: Settings):
    trials = []
    for i, rng, pair, samples in naive_trials("distinction", sampler.distinction_pair, world, model, s, trials):
        if s.boundary == "exact":
            true_b = exact_boundary(world, pair.state1, pair.state2, s.k)
        else:
            true_b = sampled_boundary(world, pair.state1, pair.state2, s.M, s.boundary_len or s.max_sample_len, rng)
        model_b = {tuple(x[: j + 1]) for x, (_, j) in zip(samples, naive_accepts(model, pair.prefix2, samples, s.acceptance))
                   if j is not None}
        precision = 1.0 if not model_b else float(np.mean(
            [first_rejection(world, pair.state1, x) is None and first_rejection(world, pair.state2, x) is not None
             for x in model_b]))
        if true_b:
            a1 = naive_accepts(model, pair.prefix1, true_b, s.acceptance)
            a2 = naive_accepts(model, pair.prefix2, true_b, s.acceptance)
            recall = float(np.mean([x[0] and not y[0] for x, y in zip(a1, a2)]))
        else:
            recall = 1.0
        trials.append({"trial": i, "status": "ok", "key": pair.key,
                       "pair": " ".join(pair.prefix1) + " || " + " ".join(pair.prefix2),
                       "scores": {"distinction_precision": precision, "distinction_recall": recall}})
    return {"distinction_precision": aggregate("distinction_precision", trials, "distinction_precision"),
            "distinction_recall": aggregate("distinction_recall", trials, "distinction_recall")}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", default="toy-dfa")
    ap.add_argument("--checkpoint")
    ap.add_argument("--train-steps", type=int, default=400)
    ap.add_argument("--trials", type=int, default=60)
    ap.add_argument("--batch-trials", type=int, default=16)
    ap.add_argument("--M", type=int, default=30)
    args = ap.parse_args(argv)

    task = load_task(args.task)
    world, sampler = task.world, task.domain.sampler()
    if args.checkpoint:
        ck = Path(args.checkpoint)
    else:
        ck = Path(tempfile.mkdtemp()) / "ck"
        print(f"training {task.name} for {args.train_steps} steps ...")
        train(task, ck, steps=args.train_steps, data_dir=Path(ck.parent) / "data", progress=False)
    model = HFModel.from_pretrained(ck, world)
    cfg = dict(task.section("evaluate"))
    cfg.update(trials=args.trials, M=args.M, batch_trials=args.batch_trials)
    s = Settings.from_dict(cfg)
    if getattr(task.domain, "boundary", None) and "boundary" not in cfg:
        s.boundary = task.domain.boundary
    torch.set_grad_enabled(False)
    # samplers may build an index on first use (Othello's pool of games): keep it out of the timings
    for draw in (sampler.compression_pair, sampler.distinction_pair):
        try:
            draw(np.random.default_rng(0))
        except TrialSkipped:
            pass

    rows = []
    for name, fast, slow in (
        ("compression", lambda: {"compression_precision": compression(world, model, sampler, s, progress=False)},
         lambda: {"compression_precision": naive_compression(world, model, sampler, s)}),
        ("distinction", lambda: distinction(world, model, sampler, s, progress=False),
         lambda: naive_distinction(world, model, sampler, s)),
    ):
        t0 = time.perf_counter()
        a = fast()
        t1 = time.perf_counter()
        b = slow()
        t2 = time.perf_counter()
        for key in a:
            assert a[key].to_dict() == b[key].to_dict(), (key, a[key], b[key])
        rows.append((name, s.trials / (t1 - t0), s.trials / (t2 - t1), (t2 - t1) / (t1 - t0),
                     ", ".join(f"{k}={v.mean:.3f}" for k, v in a.items())))
    print(f"task {task.name}, checkpoint {ck}, {s.trials} trials, M={s.M}, batch_trials={s.batch_trials}, "
          f"threads={torch.get_num_threads()}")
    print(f"{'metric':<12} {'engine trials/s':>16} {'naive trials/s':>15} {'ratio':>7}  values (identical)")
    for name, f, n, r, vals in rows:
        print(f"{name:<12} {f:>16.2f} {n:>15.2f} {r:>6.1f}x  {vals}")


if __name__ == "__main__":
    main()
