"""Benchmark: the metric engine against the authors' own code, a stand-in of it and a naive engine.

All engines score the same trials (the same seeds, the same prefix pairs):

* **engine** — :func:`worldmodel.metrics.compression` / :func:`~worldmodel.metrics.distinction`:
  the model calls of up to ``--wave-trials`` trials batched together, each prefix run
  once, sampling after one prefix and checking after the other in lock step over a
  trie of sampled histories (for GPT-2-shaped checkpoints through the lean forward
  of :mod:`worldmodel.models.lean`, each prefix's keys and values shared by all its
  rows).
* **authors' code** (``--authors-code DIR``, the headline) — the functions of the
  paper's repository (keyonvafa/world-model-evaluation, a checkout the user makes
  outside this one), run on exactly the engine's prefix pairs (the same sampler and
  seeds; each pair checked against the engine's trial record) with the same M, ε
  and k, over the same weights, their own random sampling kept (see
  ``scripts/authors_code.py`` for what is imported, what is stubbed and how our
  checkpoint is put behind their model interface). Their values then differ from
  the engine's by sampling noise only: the script prints both means with their
  standard errors and asserts that they agree within three standard errors of the
  difference.
* **stand-in** — this script's own rewrite of the authors' navigation method: per
  trial, the M samples after the first prefix drawn in ONE batched Hugging Face
  ``generate`` call (``num_return_sequences=M``, ``do_sample=True``,
  ``epsilon_cutoff=ε``, stopping when every row has hit a stop token), then all M
  samples scored after the second prefix in ONE right-padded forward pass (prefix
  recomputed per row); distinction's true boundary likewise. Only ``generate``'s
  final ``torch.multinomial`` draw is made reproducible (a last logits processor
  picks the inverse CDF at the trial's uniforms), so it draws the engine's samples
  and every trial's scores must be identical (the engine's correctness check, on
  any world). It is no speed baseline: on the navigation checkpoint the authors'
  own code is faster (docs/speed.md).
* **naive** — one trial at a time, ``generate`` run to the full length with every
  step's choice forced, every suffix rescored as a full padded sequence.

    python scripts/bench_metrics.py [--task TASK] [--checkpoint DIR] [--authors-code DIR] [--trials 60]
                                    [--rounds N] [--device cpu|cuda]

Without ``--checkpoint`` it trains the task's model first (``--train-steps``); with
one and no ``--task``, the task is the checkpoint's own ``task.toml``. It asserts
that every trial's scores are identical across the engine, the stand-in and the
naive engine (``--allow-mismatch``: it counts and shows the differing trials
instead), then prints trials per second, the ratios of the other engines' time to
the engine's in wall-clock time and in this process's CPU time (the machine may be
shared), the machine's load average, the rate of the world's own work alone
(drawing prefix pairs and true boundaries: every engine does it, so it bounds every
ratio), the rate in tokens per second (the tokens the authors' method feeds the
model: both prefixes, every sampled token, every true-boundary token, as the
stand-in counts them; the same count divides every engine's time) and, for
comparison, the model's plain forward-pass throughput on full-context batches on
the same device. ``--rounds N`` times every engine N times, alternating within the
round (engine, authors' code, stand-in, naive), and reports the totals.
``--skip-naive`` / ``--skip-stand-in`` leave those out. On a machine without
osmnx/folium (a GPU box) run it as ``PYTHONPATH=. python scripts/bench_metrics.py
...``: without ``--authors-code`` only torch, transformers, numpy, scipy, tqdm and
networkx are imported on this path (their code adds matplotlib).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import sys
import tempfile
import time
import tomllib
from pathlib import Path

import numpy as np
import torch

from worldmodel.dfa import exact_boundary, first_rejection, sampled_boundary
from worldmodel.errors import TrialSkipped, WorldModelError
from worldmodel.metrics import Settings, compression, distinction
from worldmodel.models import HFModel
from worldmodel.results import TrialLog, aggregate, trial_seed
from worldmodel.tasks import load_task


def _keep_top(s: Settings) -> bool:
    """Whether sampling keeps the top token where the rule allows none (a setting once #10 lands)."""
    return bool(getattr(s, "keep_top", False))


def _room(model, pair, s: Settings) -> int:
    return max(0, min(s.max_sample_len, model.max_positions - max(len(pair.prefix1), len(pair.prefix2)) - 1))


def _sync(model):
    if model.device.type == "cuda":
        torch.cuda.synchronize()


def _domain_ids(model: HFModel) -> torch.Tensor:
    """Model ids of the world's tokens (the columns of every distribution the metrics use)."""
    ids = getattr(model.vocab, "token_ids", None)
    if ids is None:
        ids = [model.vocab.stoi[t] for t in model.tokens]
    return torch.as_tensor(np.asarray(ids), dtype=torch.long, device=model.device)



def _inverse_cdf(probs: torch.Tensor, acc, keep_top: bool, u: torch.Tensor):
    """``(column, total)`` per row: the inverse CDF at ``u`` of ``probs`` restricted to what ``acc`` allows.

    Written here, not taken from the engine, so the baselines stay independent of
    it: allowed tokens of positive probability, the top token kept where none is
    (``keep_top``, as ``generate(epsilon_cutoff=ε)``), cumulative sums in float64.
    """
    allowed = acc.mask(probs) & (probs > 0)
    if keep_top:
        empty = ~allowed.any(-1)
        if bool(empty.any()):
            top = probs.argmax(-1, keepdim=True)
            allowed = allowed.scatter(-1, top, torch.gather(allowed, -1, top) | empty[:, None])
    w = torch.where(allowed, probs, torch.zeros_like(probs)).double()
    total = w.sum(-1)
    cdf = w.cumsum(-1) / total.clamp(min=1e-300)[:, None]
    return (cdf <= u).sum(-1).clamp(max=probs.shape[-1] - 1), total

class _UniformDraw:
    """The last logits processor of an epsilon-cutoff ``generate``: makes its random draw reproducible.

    Hugging Face's epsilon warper has already set every token below ε to -inf; the
    draw ``generate`` would make with ``torch.multinomial`` is replaced by the inverse
    CDF at the trial's own uniforms, over the same allowed tokens and the same
    probabilities the engine uses (the model's raw last-position logits, captured by a
    forward hook on the output layer), so both draw identical samples. Where no world
    token clears ε: with ``keep_top`` the top world token (the authors' sampler keeps
    its top token), else the row ends (padding), as the engine does.
    """

    def __init__(self, model: HFModel, uniforms: torch.Tensor, acceptance, stop_ids: torch.Tensor, keep_top: bool):
        self.m, self.u, self.acc, self.stop, self.keep_top = model, uniforms, acceptance, stop_ids, keep_top
        self.cols = _domain_ids(model)
        self.step = 0
        self.done = torch.zeros(uniforms.shape[0], dtype=torch.bool, device=uniforms.device)
        self.logits = None
        self.hook = model.model.get_output_embeddings().register_forward_hook(self._grab)

    def _grab(self, module, args, output):
        self.logits = output[:, -1]

    def __call__(self, input_ids, scores):
        probs = torch.log_softmax(self.logits.float(), dim=-1).exp()[:, self.cols]
        pick, total = _inverse_cdf(probs, self.acc, self.keep_top, self.u[:, self.step:self.step + 1])
        self.done |= total <= 0
        choice = torch.where(self.done, torch.full_like(pick, self.m.vocab.pad_id), self.cols[pick])
        self.done |= torch.isin(choice, self.stop)
        self.step += 1
        return torch.full_like(scores, float("-inf")).scatter(1, choice[:, None], 0.0)


def authors_sample(model: HFModel, prefix, uniforms: np.ndarray, acceptance, stop_tokens, keep_top: bool):
    """The M samples of a trial in one ``generate(num_return_sequences=M, do_sample=True, epsilon_cutoff=ε)``."""
    M, T = uniforms.shape
    if T == 0:
        return [() for _ in range(M)]
    dev = model.device
    ids = torch.tensor([model.vocab.encode(prefix)], device=dev)
    stop = torch.tensor(sorted(model.vocab.stoi[t] for t in stop_tokens if t in model.vocab.stoi) or [-1], device=dev)
    draw = _UniformDraw(model, torch.as_tensor(uniforms, device=dev), acceptance, stop, keep_top)
    eps = getattr(acceptance, "epsilon", None)
    kw = dict(epsilon_cutoff=eps) if eps else {}
    try:
        out = model.model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=True, num_return_sequences=M,
                                   max_new_tokens=T, top_k=0, top_p=1.0, temperature=1.0, logits_processor=[draw],
                                   pad_token_id=model.vocab.pad_id, eos_token_id=stop.tolist(), **kw)
    finally:
        draw.hook.remove()
    itos, stop_set, res = model.vocab.itos, set(stop.tolist()), []
    for row in out[:, ids.shape[1]:].tolist():
        toks = []
        for x in row:
            if x == model.vocab.pad_id:
                break
            toks.append(itos[x])
            if x in stop_set:
                break
        res.append(tuple(toks))
    return res


def authors_first_rejections(model: HFModel, prefix, suffixes, acceptance):
    """Per suffix, the index of its first token refused after ``prefix`` (None: all allowed).

    All suffixes after the prefix in ONE right-padded forward pass (the prefix is
    recomputed in every row, as the authors' scoring does).
    """
    rows = [model.vocab.encode(list(prefix) + list(s)) for s in suffixes]
    P = len(model.vocab.encode(list(prefix)))
    live = [i for i, s in enumerate(suffixes) if len(s)]
    out: list = [None] * len(suffixes)
    if not live:
        return out
    L = max(len(rows[i]) for i in live)
    dev = model.device
    ids = torch.full((len(live), L), model.vocab.pad_id, device=dev)
    mask = torch.zeros_like(ids)
    for r, i in enumerate(live):
        ids[r, :len(rows[i])] = torch.tensor(rows[i], device=dev)
        mask[r, :len(rows[i])] = 1
    col = torch.full((len(model.vocab),), 0, dtype=torch.long, device=dev)
    cols = _domain_ids(model)
    col[cols] = torch.arange(len(cols), device=dev)
    logits = model.model(input_ids=ids, attention_mask=mask).logits[:, P - 1:L - 1]
    probs = torch.log_softmax(logits.float(), -1).exp()[..., cols]
    acc = torch.gather(acceptance.mask(probs), -1, col[ids[:, P:]][..., None])[..., 0].cpu().numpy()
    for r, i in enumerate(live):
        bad = np.flatnonzero(~acc[r, :len(suffixes[i])])
        out[i] = int(bad[0]) if len(bad) else None
    return out


class _ForceTokens:
    """A logits processor choosing each token from given uniforms (inverse CDF over allowed tokens)."""

    def __init__(self, model: HFModel, uniforms: np.ndarray, acceptance, stop_ids: set[int], keep_top: bool):
        self.keep_top = keep_top
        self.m, self.u, self.acc = model, torch.as_tensor(uniforms, device=model.device), acceptance
        self.stop = torch.tensor(sorted(stop_ids) or [-1], device=model.device)
        self.step = 0
        self.done = torch.zeros(uniforms.shape[0], dtype=torch.bool, device=model.device)

    def __call__(self, input_ids, scores):
        off = self.m.vocab.offset
        probs = torch.softmax(scores.float(), -1)[:, off:]
        pick, total = _inverse_cdf(probs, self.acc, self.keep_top, self.u[:, self.step:self.step + 1])
        self.done |= total <= 0
        choice = pick + off
        choice = torch.where(self.done, torch.full_like(choice, self.m.vocab.pad_id), choice)
        self.done |= torch.isin(choice, self.stop)
        self.step += 1
        out = torch.full_like(scores, float("-inf"))
        return out.scatter(1, choice[:, None], 0.0)


def naive_sample(model: HFModel, prefix, uniforms, acceptance, stop_tokens, keep_top=False):
    if uniforms.shape[1] == 0:
        return [() for _ in range(uniforms.shape[0])]
    ids = torch.tensor([model.vocab.encode(prefix)] * uniforms.shape[0], device=model.device)
    stop = {model.vocab.stoi[t] for t in stop_tokens if t in model.vocab.stoi}
    proc = _ForceTokens(model, uniforms, acceptance, stop, keep_top)
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
        ids = torch.full((len(rows), L), model.vocab.pad_id, device=model.device)
        mask = torch.zeros_like(ids)
        for i, r in enumerate(rows):
            ids[i, :len(r)] = torch.tensor(r, device=model.device)
            mask[i, :len(r)] = 1
        with torch.no_grad():
            probs = torch.softmax(model.model(input_ids=ids, attention_mask=mask).logits.float(), -1)
        acc = acceptance.mask(probs[..., model.vocab.offset:]).cpu()
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
    for i, rng, pair in _draw_trials(name, draw, s, trials):
        u = rng.random((s.M, s.max_sample_len))
        room = min(s.max_sample_len, model.max_positions - max(len(pair.prefix1), len(pair.prefix2)) - 1)
        samples = naive_sample(model, pair.prefix1, u[:, :room], s.acceptance, world.stop_tokens, _keep_top(s))
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
        true_b = _true_boundary(world, pair, s, rng)
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


def _draw_trials(name, draw, s: Settings, trials: list):
    """Per trial: its rng and prefix pair, drawn as the engine draws them; skipped trials go to ``trials``."""
    for i in range(s.trials):
        rng = np.random.default_rng(trial_seed(s.seed, name, i))
        try:
            pair = draw(rng)
        except TrialSkipped as exc:
            trials.append({"trial": i, "status": "skipped", "reason": exc.reason})
            continue
        yield i, rng, pair


def _true_boundary(world, pair, s: Settings, rng):
    if s.boundary == "exact":
        true_b = exact_boundary(world, pair.state1, pair.state2, s.k)
    else:
        true_b = sampled_boundary(world, pair.state1, pair.state2, s.M, s.boundary_len or s.max_sample_len, rng)
    if s.max_boundary is not None and len(true_b) > s.max_boundary:
        keep = rng.choice(len(true_b), size=s.max_boundary, replace=False)
        true_b = [true_b[i] for i in sorted(keep)]
    return true_b


class Counter:
    """Tokens the authors' method feeds the model (prefixes, sampled tokens, rescored suffix tokens)."""

    tokens = 0


def authors_compression(world, model, sampler, s: Settings, count: Counter):
    trials = []
    for i, rng, pair in _draw_trials("compression", sampler.compression_pair, s, trials):
        if pair.prefix1 == pair.prefix2:
            trials.append({"trial": i, "status": "skipped", "reason": "sampler returned the same prefix twice"})
            continue
        u = rng.random((s.M, s.max_sample_len))[:, :_room(model, pair, s)]
        samples = authors_sample(model, pair.prefix1, u, s.acceptance, world.stop_tokens, _keep_top(s))
        rej = authors_first_rejections(model, pair.prefix2, samples, s.acceptance)
        count.tokens += len(pair.prefix1) + len(pair.prefix2) + 2 + 2 * sum(len(x) for x in samples)
        trials.append({"trial": i, "status": "ok", "key": pair.key, "score": float(all(j is None for j in rej))})
    return {"compression_precision": aggregate("compression_precision", trials)}, trials


def authors_distinction(world, model, sampler, s: Settings, count: Counter):
    trials = []
    for i, rng, pair in _draw_trials("distinction", sampler.distinction_pair, s, trials):
        u = rng.random((s.M, s.max_sample_len))
        true_b = _true_boundary(world, pair, s, rng)
        samples = authors_sample(model, pair.prefix1, u[:, :_room(model, pair, s)], s.acceptance, world.stop_tokens,
                                 _keep_top(s))
        rej = authors_first_rejections(model, pair.prefix2, samples, s.acceptance)
        model_b = {tuple(x[: j + 1]) for x, j in zip(samples, rej) if j is not None}
        precision = 1.0 if not model_b else float(np.mean(
            [first_rejection(world, pair.state1, x) is None and first_rejection(world, pair.state2, x) is not None
             for x in model_b]))
        count.tokens += len(pair.prefix1) + len(pair.prefix2) + 2 + 2 * sum(len(x) for x in samples)
        if true_b:
            r1 = authors_first_rejections(model, pair.prefix1, true_b, s.acceptance)
            r2 = authors_first_rejections(model, pair.prefix2, true_b, s.acceptance)
            recall = float(np.mean([a is None and b is not None for a, b in zip(r1, r2)]))
            count.tokens += 2 * sum(len(x) for x in true_b)
        else:
            recall = 1.0
        trials.append({"trial": i, "status": "ok", "key": pair.key,
                       "scores": {"distinction_precision": precision, "distinction_recall": recall}})
    return {"distinction_precision": aggregate("distinction_precision", trials, "distinction_precision"),
            "distinction_recall": aggregate("distinction_recall", trials, "distinction_recall")}, trials


def world_only(name, world, sampler, s: Settings):
    """The world's share of a metric run: every trial's prefix pair (and true boundary), no model call."""
    draw = sampler.compression_pair if name == "compression" else sampler.distinction_pair
    for _, rng, pair in _draw_trials(name, draw, s, []):
        rng.random((s.M, s.max_sample_len))
        if name == "distinction":
            _true_boundary(world, pair, s, rng)


def forward_throughput(model: HFModel, batch: int, seconds: float = 2.0) -> float:
    """Tokens per second of the model's plain forward pass on full-context batches (no cache, no sampling)."""
    L = min(model.max_positions, 512)
    cols = _domain_ids(model)
    ids = cols[torch.randint(len(cols), (batch, L), device=model.device)]
    model.model(input_ids=ids)
    _sync(model)
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        model.model(input_ids=ids)
        n += 1
        _sync(model)
    return n * batch * L / (time.perf_counter() - t0)


def forget_prefixes(model: HFModel) -> None:
    """Empty the lean forward's memo of recent prefixes: every timed engine run starts without them.

    (A real evaluation never meets its prefixes twice; the rounds of this benchmark do.)
    """
    if model.lean is not None:
        model.lean.memo = None


def _scores(trials):
    return {t["trial"]: t.get("scores", t.get("score")) for t in trials if t["status"] == "ok"}


def load_checkpoint_task(task_name, ck):
    if task_name:
        return load_task(task_name)
    toml = Path(ck) / "task.toml"
    if not toml.exists():
        return load_task("toy-dfa")
    name = tomllib.loads(toml.read_text()).get("name")
    try:
        return load_task(name)
    except Exception:  # a task the repo does not ship: the checkpoint's own file
        return load_task(toml)


def authors_code_trials(name, code, world, sampler, s: Settings, engine_trials, seed: int):
    """The authors' own code on the engine's prefix pairs: its trial records (``score`` / ``scores``).

    The pairs are drawn by the engine's sampler with the engine's seeds, and each
    is checked against the engine's record of that trial (its prefixes), so both
    score exactly the same pairs; a trial the engine skipped is skipped here too.
    """
    from authors_code import seed_their_rngs

    code.reset()
    seed_their_rngs(seed)
    ours = {t["trial"]: t for t in engine_trials if t["status"] == "ok"}
    draw = sampler.compression_pair if name == "compression" else sampler.distinction_pair
    trials: list = []
    for i, _, pair in _draw_trials(name, draw, s, trials):
        rec = ours.get(i)
        if rec is None:
            trials.append({"trial": i, "status": "skipped", "reason": "skipped by the engine"})
            continue
        if [list(pair.prefix1), list(pair.prefix2)] != [rec["prefix1"], rec["prefix2"]]:
            raise AssertionError(f"{name} trial {i}: the pair drawn here is not the engine's")
        base = {"trial": i, "status": "ok", "key": pair.key, "pair": rec["pair"]}
        if name == "compression":
            trials.append({**base, "score": code.compression_trial(pair)})
        else:
            precision, recall = code.distinction_trial(pair)
            trials.append({**base, "scores": {"distinction_precision": precision, "distinction_recall": recall}})
    return trials


def _results(name, trials):
    if name == "compression":
        return {"compression_precision": aggregate("compression_precision", trials)}
    return {k: aggregate(k, trials, k) for k in ("distinction_precision", "distinction_recall")}


def agreement(engine: dict, theirs: dict, z: float = 3.0) -> list[tuple[str, float, float, float, float, bool]]:
    """Per metric: (name, engine mean, its se, authors' mean, its se, within ``z`` standard errors of the difference)."""
    out = []
    for key, a in engine.items():
        b = theirs[key]
        tol = z * math.sqrt(a.stderr ** 2 + b.stderr ** 2)
        out.append((key, a.mean, a.stderr, b.mean, b.stderr, abs(a.mean - b.mean) <= tol))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", help="task name or file (default: the checkpoint's task.toml, else toy-dfa)")
    ap.add_argument("--checkpoint")
    ap.add_argument("--authors-code", metavar="DIR",
                    help="a checkout of keyonvafa/world-model-evaluation: time their own functions on the engine's "
                         "pairs (navigation and 8x8 Othello checkpoints; see scripts/authors_code.py)")
    ap.add_argument("--train-steps", type=int, default=400)
    ap.add_argument("--trials", type=int, default=60)
    ap.add_argument("--batch-trials", type=int,
                    help="the [evaluate] setting batch_trials: trials per logged batch and shard (default: the task's, 16)")
    ap.add_argument("--wave-trials", type=int,
                    help="engine: trials whose model calls run together in one wave, at most (HFModel.wave_prefixes, "
                         "default 64; fewer where the wave's cache would pass HFModel.wave_bytes)")
    ap.add_argument("--M", type=int, default=30)
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    ap.add_argument("--skip-naive", action="store_true", help="leave the naive engine out")
    ap.add_argument("--skip-stand-in", action="store_true", help="leave the stand-in (identical samples) out")
    ap.add_argument("--allow-mismatch", action="store_true",
                    help="report trials whose scores differ instead of failing (GPU kernels may round differently "
                         "for differently shaped batches, moving a probability across epsilon), and report instead "
                         "of failing where the authors' code disagrees beyond sampling noise")
    ap.add_argument("--metrics", default="compression,distinction")
    ap.add_argument("--rounds", type=int, default=1,
                    help="time every engine this many times, alternating (rates and ratios over the total)")
    ap.add_argument("--forward-seconds", type=float, default=3.0, help="how long to time the plain forward pass")
    args = ap.parse_args(argv)

    if args.checkpoint:
        ck = Path(args.checkpoint)
        task = load_checkpoint_task(args.task, ck)
    else:
        from worldmodel.training import train

        task = load_task(args.task or "toy-dfa")
        ck = Path(tempfile.mkdtemp()) / "ck"
        print(f"training {task.name} for {args.train_steps} steps ...")
        train(task, ck, steps=args.train_steps, data_dir=Path(ck.parent) / "data", progress=False)
    world, sampler = task.world, task.domain.sampler()
    model = HFModel.from_pretrained(ck, world, device=args.device)
    if args.wave_trials:
        model.wave_prefixes = args.wave_trials
    cfg = dict(task.section("evaluate"))
    cfg.update(trials=args.trials, M=args.M)
    if args.batch_trials:
        cfg["batch_trials"] = args.batch_trials
    s = Settings.from_dict(cfg)
    if getattr(task.domain, "boundary", None) and "boundary" not in cfg:
        s.boundary = task.domain.boundary
    torch.set_grad_enabled(False)
    code = None
    if args.authors_code:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from authors_code import STUBBED, authors_code

        try:
            code = authors_code(Path(args.authors_code), world, model, s)
        except WorldModelError as exc:
            print(f"bench_metrics: error: {exc}", file=sys.stderr)
            raise SystemExit(2) from None
        print(f"authors' code: {Path(args.authors_code).resolve()} ({type(code).__name__}; stubbed imports: "
              f"{', '.join(STUBBED) or 'none'})")
    # samplers may build an index on first use (Othello's pool of games): keep it out of the timings
    for draw in (sampler.compression_pair, sampler.distinction_pair):
        try:
            draw(np.random.default_rng(0))
        except TrialSkipped:
            pass

    def timed(fn):
        """``(result, wall seconds, CPU seconds of this process)``."""
        _sync(model)
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        _sync(model)
        return out, time.perf_counter() - t0, time.process_time() - c0

    def engine_compression(s):
        log = TrialLog(None, {})
        return {"compression_precision": compression(world, model, sampler, s, log=log, progress=False)}, log.trials()

    def engine_distinction(s):
        log = TrialLog(None, {})
        return distinction(world, model, sampler, s, log=log, progress=False), log.trials()

    engines = {
        "compression": (engine_compression, authors_compression,
                        lambda: ({"compression_precision": naive_compression(world, model, sampler, s)}, None)),
        "distinction": (engine_distinction, authors_distinction,
                        lambda: (naive_distinction(world, model, sampler, s), None)),
    }
    # warm-up, untimed: two trials of each engine (first calls allocate, load kernels, build caches)
    warm = dataclasses.replace(s, trials=min(2, s.trials))
    for name in args.metrics.split(","):
        fast, stand_in, _ = engines[name]
        _, w_trials = fast(warm)
        if code is not None:
            authors_code_trials(name, code, world, sampler, warm, w_trials, 0)
        if not args.skip_stand_in:
            stand_in(world, model, sampler, warm, Counter())
    load0 = os.getloadavg()
    rows, agree = [], []
    kinds = ("engine", "code", "stand-in", "naive", "world")
    for name in args.metrics.split(","):
        fast, stand_in, naive = engines[name]
        t = {k: np.zeros(2) for k in kinds}
        tokens = 0
        theirs: list = []
        a = None
        for r in range(args.rounds):  # the engines alternate, so a change of machine load hits all of them
            forget_prefixes(model)
            (a, a_trials), *te = timed(lambda: fast(s))
            t["engine"] += te
            if code is not None:
                seed = trial_seed(s.seed, f"authors-code:{name}", r)
                c_trials, *tc = timed(lambda: authors_code_trials(name, code, world, sampler, s, a_trials, seed))
                t["code"] += tc
                theirs += c_trials
            if not args.skip_stand_in:
                count = Counter()
                (b, b_trials), *ta = timed(lambda: stand_in(world, model, sampler, s, count))
                t["stand-in"] += ta
                tokens += count.tokens
                sa, sb = _scores(a_trials), _scores(b_trials)
                differ = sorted(k for k in set(sa) | set(sb) if sa.get(k) != sb.get(k))
                if differ:
                    print(f"{name}: {len(differ)} of {len(sa | sb)} trials differ between engine and stand-in: "
                          + "; ".join(f"trial {k}: {sa.get(k)} vs {sb.get(k)}" for k in differ[:5]))
                if not args.allow_mismatch:
                    assert not differ, name
                    for key in a:
                        assert a[key].to_dict() == b[key].to_dict(), (key, a[key], b[key])
            if not args.skip_naive:
                (c, _), *tn = timed(naive)
                t["naive"] += tn
                if not args.allow_mismatch:
                    for key in a:
                        assert a[key].to_dict() == c[key].to_dict(), (key, a[key], c[key])
            _, *tw = timed(lambda: world_only(name, world, sampler, s))
            t["world"] += tw
        if code is not None:
            agree += agreement(a, _results(name, theirs))
        rows.append((name, t, tokens, ", ".join(f"{k}={v.mean:.3f}" for k, v in a.items())))
    load1 = os.getloadavg()
    fwd = forward_throughput(model, 64 if args.device == "cpu" else 512, args.forward_seconds)
    dev = torch.cuda.get_device_name() if args.device == "cuda" else f"cpu, {torch.get_num_threads()} thread(s)"
    n_params = sum(p.numel() for p in model.model.parameters())
    n = s.trials * args.rounds
    print(f"task {task.name}, checkpoint {ck} ({n_params / 1e6:.2f}M parameters), device {dev}; {s.trials} trials "
          f"x {args.rounds} round(s), M={s.M}, {s.acceptance}, k={s.k}, boundary={s.boundary}, "
          f"keep_top={_keep_top(s)}, batch_trials={s.batch_trials}, "
          f"wave: up to {model.wave_trials} trials ({model.wave_bytes / 2**20:.0f} MiB), "
          f"engine forward: {'lean GPT-2' if model.lean is not None else 'transformers'}")
    print(f"machine load (1-min average) {load0[0]:.1f} before, {load1[0]:.1f} after; {os.cpu_count()} CPUs")
    print(f"{'metric':<12} {'engine/s':>9} {'code/s':>8} {'stand-in/s':>10} {'naive/s':>8} "
          f"{'vs code':>8} {'(CPU)':>7} {'vs stand-in':>11} {'(CPU)':>7} {'vs naive':>8} {'(CPU)':>7} "
          f"{'world/s':>8} {'engine tok/s':>12} {'stand-in tok/s':>14}  values (engine)")
    for name, t, tokens, vals in rows:
        def rate(k):
            return f"{n / t[k][0]:.2f}" if t[k][0] else "-"

        def ratio(k, i):
            return f"{t[k][i] / t['engine'][i]:.1f}x" if t[k][0] else "-"

        tok_e = f"{tokens / t['engine'][0]:.0f}" if tokens else "-"
        tok_s = f"{tokens / t['stand-in'][0]:.0f}" if tokens else "-"
        print(f"{name:<12} {rate('engine'):>9} {rate('code'):>8} {rate('stand-in'):>10} {rate('naive'):>8} "
              f"{ratio('code', 0):>8} {ratio('code', 1):>7} {ratio('stand-in', 0):>11} {ratio('stand-in', 1):>7} "
              f"{ratio('naive', 0):>8} {ratio('naive', 1):>7} {rate('world'):>8} {tok_e:>12} {tok_s:>14}  {vals}")
    print(f"plain forward pass (full-context batches, no cache): {fwd:,.0f} tokens/s; world/s: the world's own work "
          "alone (drawing the prefix pairs and true boundaries every engine needs), the ceiling for any engine")
    if agree:
        print(f"authors' code on the engine's pairs ({args.rounds} round(s) pooled; their own sampling) against the "
              "engine: mean (standard error)")
        for key, m1, se1, m2, se2, ok in agree:
            print(f"  {key:<22} engine {m1:.3f} ({se1:.3f})  authors' code {m2:.3f} ({se2:.3f})  "
                  f"{'agree' if ok else 'DIFFER'} (|difference| {'<=' if ok else '>'} 3 se)")
        bad = [k for k, *_, ok in agree if not ok]
        if bad and not args.allow_mismatch:
            raise SystemExit(f"the authors' code and the engine disagree beyond sampling noise on {', '.join(bad)}")


if __name__ == "__main__":
    main()
