"""The metric engine: Myhill–Nerode compression and distinction, next-token test, probe.

Notation (Vafa et al. 2024, §2). A model ``m`` generates ``L^m(s)``: the suffixes
whose every token it allows after ``s`` (under an :class:`AcceptanceRule`, by
default ``m(a|·) > ε = 0.01``). The world's states ``q`` generate ``L^W(q)``.

* **Boundaries.** For two states, the true boundary ``MNB^W(q1, q2)`` is the set of
  minimal suffixes valid from ``q1`` and not from ``q2``. For two prefixes, the
  model's boundary ``MNB^m(s1, s2)`` is the set of minimal suffixes in
  ``L^m(s1) \\ L^m(s2)``.
* **Precision** ``= |MNB^m(s1,s2) ∩ (L^W(q1) \\ L^W(q2))| / |MNB^m(s1,s2)|``: of the
  differences the model draws, the share that are real.
* **Recall** ``= |MNB^W(q1,q2) ∩ (L^m(s1) \\ L^m(s2))| / |MNB^W(q1,q2)|``: of the
  real differences, the share the model draws.

**Compression precision** uses prefix pairs reaching the *same* state (``q1 = q2``),
where the true boundary is empty, so precision is 1 exactly when the model's
boundary is empty. It is estimated from ``M`` continuations sampled from the model
after ``s1`` (each token allowed): the pair scores 1 when every one of them is
also allowed, token by token, after ``s2``, else 0.

**Distinction** uses pairs reaching *different* states. Precision: the model's
boundary is estimated from ``M`` continuations sampled after ``s1``: each one's
shortest prefix not allowed after ``s2`` is a boundary element; the score is the
share of the distinct elements valid from ``q1`` and invalid from ``q2``. Recall:
the true boundary, exact up to length ``k`` (or, for worlds too large to enumerate,
sampled from ``M`` random valid continuations), checked against the model after
``s1`` and ``s2``. Following the authors' code, an empty model boundary gives
precision 1 and an empty true boundary gives recall 1; both cases are counted in
each trial's record (``model_boundary_size`` / ``true_boundary_size``).

Averaging as in the paper: over prefix pairs per state (pair), then over states;
the standard error is over states. Each trial draws everything (its prefixes,
the uniforms that drive the model's sampling) from its own seed, derived from the
run seed and its index, so trials can be batched, interrupted and resumed freely.

The **next-token test** asks, at the positions of held-out sequences that the
world names (:meth:`World.next_token_positions`: every prefix by default, the moves
after origin and destination for navigation), whether the model's top-1 token is
valid in the world. The **current-state probe** fits a linear map from the model's
last hidden layer to the world's state labels (:meth:`World.probe_targets`) and
reports held-out accuracy.

Conventions that follow the authors' code (keyonvafa/world-model-evaluation), each
a default with a setting for the other behaviour:

* ``keep_top=True``: while sampling, where the acceptance rule allows no token the
  most likely one is drawn (Hugging Face ``epsilon_cutoff`` keeps at least one
  token); the check after the other prefix still applies the rule itself. Each
  compression/distinction trial records ``kept_top``, the number of its samples
  that needed this. ``keep_top=False``: the sample ends there (an empty sample is
  then allowed after any prefix).
* ``next_token_positions="world"``: only the positions the world names
  (``"all"``: every prefix); ``next_token_pooling="tokens"``: the score is the share
  of all scored positions (``"sequences"``: the mean of per-sequence shares). The
  pooled standard error is the ratio estimator's, clustered by sequence.
* A model without a BOS token (the paper's and Li et al.'s checkpoints) reads the
  first token of a sequence as context and never predicts it; the next-token test
  skips that position and the probe starts after it.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np
import torch
from tqdm.auto import tqdm

from .dfa import REJECT, World, exact_boundary, first_rejection, sampled_boundary
from .errors import TrialSkipped, WorldModelError
from .models import SampleGroup, SequenceModel
from .models.missing import readable_length
from .results import MetricResult, TrialLog, aggregate, pooled, trial_seed
from .sampling import PrefixPair, StateSampler
from .settings import Settings



def length_bound(model: SequenceModel) -> tuple[int | None, str]:
    """The longest sequence (world tokens, prefix and continuation together) the metrics read the model at.

    A checkpoint that records its training lengths (``trained_len``, the longest
    training sequence, from ``training.json``) is read only where it was trained:
    its position embeddings past that length never saw a gradient. Otherwise the
    bound is the model's context (``max_positions``, less the BOS position where it
    has one): imported checkpoints carry no record of their training lengths. Returns
    ``(bound, source)``, source ``"trained"``, ``"context"`` or ``"none"`` (the
    bound is ``None``: the true world model has no limit).
    """
    context = None
    if model.max_positions is not None:
        context = int(model.max_positions) - (1 - int(model.context_tokens))
    if model.trained_len is not None:
        trained = int(model.trained_len)
        return (trained if context is None else min(trained, context)), "trained"
    if context is not None:
        return context, "context"
    return None, "none"


def bound_words(source: str | None) -> str:
    """What a :func:`length_bound` source means, in words, for reports and errors."""
    return {"trained": "the longest sequence the model was trained on",
            "context": "the model's context"}.get(source or "", "the longest query allowed")


def context_room(model: SequenceModel, prefix_len: int, want: int) -> int:
    """How many tokens may follow a prefix inside :func:`length_bound` (at most ``want``).

    The rule for every world: a continuation stops where prefix + continuation would
    pass the bound (each trial records the length it was allowed, ``continuation_len``),
    and a prefix that leaves no room at all is refused (:class:`WorldModelError`): a
    model is never scored where it was not trained.
    """
    bound, source = length_bound(model)
    if bound is None:
        return want
    room = min(want, bound - prefix_len)
    if room < 1:
        what = "the longest sequence it was trained on" if source == "trained" else "its context"
        raise WorldModelError(
            f"a prefix of {prefix_len} tokens leaves no room inside {what} ({bound} tokens): the {model.name} model "
            "was never trained there; draw shorter prefixes (the task's sampler settings) or train on longer sequences")
    return room


class _Runner:
    """Shared trial loop: seeds, resume, batching, progress.

    Trials are cut into batches of ``batch_trials`` (what a process of a sharded
    run takes, round-robin); consecutive batches of one process are evaluated
    together in waves of up to ``wave`` trials, never less than one batch (one
    model call, then every record of the wave is logged): the model's
    ``wave_trials``, where it has one. Neither size changes a trial's result: each
    trial draws from its own seed.
    """

    def __init__(self, name: str, settings: Settings, log: TrialLog | None, progress: bool, wave: int = 0):
        self.name = name
        self.s = settings
        self.log = log or TrialLog(None, {})
        self.progress = progress
        self.wave = max(int(wave or 0), settings.batch_trials)

    def run(self, n: int, draw: Callable[[int, np.random.Generator], object],
            evaluate_batch: Callable[[list], list[dict]]) -> list[dict]:
        todo = [i for i in range(n) if i not in self.log.done]
        batches = [todo[c:c + self.s.batch_trials] for c in range(0, len(todo), self.s.batch_trials)]
        shard = self.log.shard   # (rank, processes): run only this process's batches
        if shard is not None:
            batches = batches[shard[0]::shard[1]]
        chunks: list[list[int]] = []
        for b in batches:
            if chunks and len(chunks[-1]) + len(b) <= self.wave:
                chunks[-1] = chunks[-1] + b
            else:
                chunks.append(list(b))
        bar = tqdm(total=n, initial=n - len(todo), desc=self.name, disable=not self.progress, leave=False)
        for chunk in chunks:
            items = []
            for i in chunk:
                seed = trial_seed(self.s.seed, self.name, i)
                rng = np.random.default_rng(seed)
                base = {"trial": i, "seed": seed}
                try:
                    items.append((base, draw(i, rng), rng))
                except TrialSkipped as exc:
                    self.log.append({**base, "status": "skipped", "reason": exc.reason})
            if items:
                for rec in evaluate_batch(items):
                    self.log.append(rec)
            bar.update(len(chunk))
        bar.close()
        return self.log.trials(n)


def _uniforms(rng: np.random.Generator, s: Settings) -> np.ndarray:
    return rng.random((s.M, s.max_sample_len))


def _readable(model: SequenceModel, pair: PrefixPair) -> None:
    """Skip a trial whose prefixes hold a world token the model lacks (it cannot read them)."""
    for p in (pair.prefix1, pair.prefix2):
        n = readable_length(model, p)
        if n < len(p):
            raise TrialSkipped(f"prefix holds {p[n]!r}, a world token the model lacks")


def _pair_fields(pair: PrefixPair, world: World) -> dict:
    return {"key": pair.key, "pair": " ".join(pair.prefix1) + " || " + " ".join(pair.prefix2),
            "prefix1": list(pair.prefix1), "prefix2": list(pair.prefix2),
            "state1": world.state_key(pair.state1), "state2": world.state_key(pair.state2)}


def compression(world: World, model: SequenceModel, sampler: StateSampler, settings: Settings,
                log: TrialLog | None = None, progress: bool = True) -> MetricResult:
    """Sequence compression precision (pairs of prefixes reaching one state)."""
    s = settings
    runner = _Runner("compression", s, log, progress, model.wave_trials)

    def draw(i, rng):
        pair = sampler.compression_pair(rng)
        if pair.state1 != pair.state2:
            raise WorldModelError("sampler returned a compression pair with two different states")
        if pair.prefix1 == pair.prefix2:
            raise TrialSkipped("sampler returned the same prefix twice")
        _readable(model, pair)
        return pair, _uniforms(rng, s)

    def batch(items):
        pairs = [it[1][0] for it in items]
        us = [it[1][1][:, :context_room(model, max(len(p.prefix1), len(p.prefix2)), s.max_sample_len)]
              for it, p in zip(items, pairs)]
        res = model.sample_contrast([p.prefix1 for p in pairs], [p.prefix2 for p in pairs], us, s.acceptance,
                                    world.stop_tokens, halt_on_reject=True, keep_top=s.keep_top)
        out = []
        for (base, (pair, _), _), group, u in zip(items, res, us):
            bad = [x for x, j in group if j is not None]
            rec = {**base, "status": "ok", **_pair_fields(pair, world), "score": float(not bad),
                   "n_samples": len(group), "kept_top": SampleGroup.kept_top_of(group),
                   "continuation_len": int(u.shape[1])}
            if bad:
                rec["example"] = list(bad[0])
            out.append(rec)
        return out

    trials = runner.run(s.trials, draw, batch)
    return aggregate("compression_precision", trials)


def distinction(world: World, model: SequenceModel, sampler: StateSampler, settings: Settings,
                log: TrialLog | None = None, progress: bool = True) -> dict[str, MetricResult]:
    """Sequence distinction precision and recall (pairs of prefixes reaching two states)."""
    s = settings
    runner = _Runner("distinction", s, log, progress, model.wave_trials)

    def draw(i, rng):
        pair = sampler.distinction_pair(rng)
        if pair.state1 == pair.state2:
            raise WorldModelError("sampler returned a distinction pair reaching one state")
        _readable(model, pair)
        u = _uniforms(rng, s)
        # suffixes after the longer prefix stay inside the model's trained lengths, the true boundary's too
        room = context_room(model, max(len(pair.prefix1), len(pair.prefix2)), max(s.max_sample_len, s.k))
        if s.boundary == "exact":
            true_b = exact_boundary(world, pair.state1, pair.state2, min(s.k, room))
        elif s.boundary == "sampled":
            true_b = sampled_boundary(world, pair.state1, pair.state2, s.M,
                                      min(s.boundary_len or s.max_sample_len, room), rng)
        else:
            raise WorldModelError(f"boundary must be 'exact' or 'sampled', not {s.boundary!r}")
        true_size = len(true_b)
        if s.max_boundary is not None and len(true_b) > s.max_boundary:
            keep = rng.choice(len(true_b), size=s.max_boundary, replace=False)
            true_b = [true_b[i] for i in sorted(keep)]
        return pair, u, true_b, true_size

    def batch(items):
        draws = [it[1] for it in items]
        pairs = [d[0] for d in draws]
        us = [d[1][:, :context_room(model, max(len(p.prefix1), len(p.prefix2)), s.max_sample_len)]
              for d, p in zip(draws, pairs)]
        contrast = model.sample_contrast([p.prefix1 for p in pairs], [p.prefix2 for p in pairs], us, s.acceptance,
                                         world.stop_tokens, keep_top=s.keep_top)
        # the true boundary after s1 and after s2, in one batched scoring call
        prefixes = [p.prefix1 for p in pairs] + [p.prefix2 for p in pairs]
        groups = [d[2] for d in draws] + [d[2] for d in draws]
        scored = model.score(prefixes, groups, s.acceptance)
        n = len(pairs)
        out = []
        for t, ((base, _, _), (pair, _, true_b, true_size)) in enumerate(zip(items, draws)):
            # each sample cut at its first token refused after s2 is an element of MNB^m(s1, s2)
            model_b = {x for x, j in contrast[t] if j is not None}
            if model_b:
                correct = [
                    first_rejection(world, pair.state1, x) is None and first_rejection(world, pair.state2, x) is not None
                    for x in model_b
                ]
                precision = float(np.mean(correct))
            else:
                precision = 1.0
            if true_b:
                acc1 = [x.all_accepted() for x in scored[t]]
                acc2 = [x.all_accepted() for x in scored[n + t]]
                recall = float(np.mean([a and not b for a, b in zip(acc1, acc2)]))
            else:
                recall = 1.0
            out.append({**base, "status": "ok", **_pair_fields(pair, world),
                        "scores": {"distinction_precision": precision, "distinction_recall": recall},
                        "model_boundary_size": len(model_b), "true_boundary_size": true_size,
                        "kept_top": SampleGroup.kept_top_of(contrast[t]),
                        "true_boundary_scored": len(true_b), "continuation_len": int(us[t].shape[1])})
        return out

    trials = runner.run(s.trials, draw, batch)
    return {
        "distinction_precision": aggregate("distinction_precision", trials, "distinction_precision"),
        "distinction_recall": aggregate("distinction_recall", trials, "distinction_recall"),
    }


def next_token(world: World, model: SequenceModel, sequences: Sequence[Sequence[str]], settings: Settings,
               log: TrialLog | None = None, progress: bool = True) -> MetricResult:
    """Share of scored positions of held-out sequences whose top-1 next token is valid.

    One trial per sequence (the first ``settings.trials`` sequences). The positions
    are the prefix lengths ``j`` the world names (``settings.next_token_positions``),
    less the first token for a model that reads it as context (no BOS); at each the
    question is whether the model's most probable token is valid from the state that
    ``x[:j]`` reaches. Each trial records ``n_correct`` and ``n_prefixes``; the
    result pools them over sequences (``next_token_pooling="tokens"``, the paper's
    code) or averages per-sequence shares (``"sequences"``).
    """
    s = settings
    runner = _Runner("next-token", s, log, progress)
    seqs = list(sequences)[: s.trials]
    if not seqs:
        raise WorldModelError("next-token test: no held-out sequences")
    context = int(model.context_tokens)
    bound = length_bound(model)[0]
    bound = len(max(seqs, key=len)) if bound is None else bound

    def positions(seq):
        named = world.next_token_positions(seq) if s.next_token_positions == "world" else range(len(seq))
        readable = readable_length(model, seq)  # a model lacking a world token cannot read past it
        # the token after x[:j] is token j + 1: inside the trained lengths when j < bound
        return [j for j in named if context <= j <= readable and j < bound]

    def draw(i, rng):
        return i

    def batch(items):
        idx = [it[1] for it in items]
        probs = model.prefix_probs([seqs[i] for i in idx])
        out = []
        for (base, i, _), p in zip(items, probs):
            seq = seqs[i]
            state = world.initial_state()
            ok = []
            scored = set(positions(seq))
            for j in range(len(seq)):
                if j in scored:
                    top = model.tokens[int(np.argmax(p[j]))] if p[j].max() > 0 else None
                    ok.append(top is not None and world.step(state, top) is not REJECT)
                state = world.step(state, seq[j])
                if state is REJECT:
                    raise WorldModelError(f"held-out sequence {i} is not valid in the {world.name} world")
            rec = {**base, "status": "ok", "key": str(i), "pair": str(i), "n_correct": int(sum(ok)),
                   "n_prefixes": len(ok), "score": float(np.mean(ok)) if ok else None}
            if not ok:
                rec["reason"] = "no scored position"
            out.append(rec)
        return out

    trials = runner.run(len(seqs), draw, batch)
    if s.next_token_pooling == "tokens":
        return pooled("next_token", trials, "n_correct", "n_prefixes")
    return aggregate("next_token", trials)


def probe(world: World, model: SequenceModel, sequences: Sequence[Sequence[str]], settings: Settings,
          progress: bool = True) -> MetricResult:
    """Current-state probe: a linear map from the last hidden layer to state labels.

    Examples are all positions ``j ≥ 1`` of the given sequences (the state after
    reading ``x[:j]``), split 80/20 by sequence; one multinomial logistic regression
    per target (Adam, ``probe_lr``, ``probe_epochs``, batches of ``probe_batch``).
    Reports held-out accuracy averaged over targets; the standard error is the
    binomial one over held-out positions. The regression trains on the model's
    device (``model.device`` when it has one, e.g. the GPU that produced the hidden
    states); its initial weights and batch order are drawn on the CPU, so the seed
    means the same draws on every device.
    """
    s = settings
    if not model.has_hidden_states:
        return MetricResult("probe", float("nan"), float("nan"), 0, 1, 0, {f"{model.name} model has no hidden states": 1})
    seqs = list(sequences)[: s.probe_sequences]
    feats, labels, owner = [], [], []
    hidden = model.hidden_states(seqs)
    for i, (seq, h) in enumerate(zip(seqs, hidden)):
        state = world.initial_state()
        readable = readable_length(model, seq)
        for j, tok in enumerate(seq, 1):
            state = world.step(state, tok)
            if state is REJECT or j > readable:
                break
            y = world.probe_targets(state)
            if y is None:
                continue
            feats.append(h[j])
            labels.append(np.asarray(y, dtype=np.int64))
            owner.append(i)
    if not feats:
        return MetricResult("probe", float("nan"), float("nan"), 0, 1, 0, {f"the {world.name} world defines no probe targets": 1})
    X = torch.tensor(np.stack(feats), dtype=torch.float32)
    Y = torch.tensor(np.stack(labels))
    owner_arr = np.array(owner)
    rng = np.random.default_rng(trial_seed(s.seed, "probe", 0))
    order = rng.permutation(len(seqs))
    test_seq = set(order[: max(1, len(seqs) // 5)].tolist())
    test_mask = torch.tensor([o in test_seq for o in owner_arr])
    if test_mask.all() or not test_mask.any():
        return MetricResult("probe", float("nan"), float("nan"), 0, 1, 0, {"too few sequences to split 80/20": 1})
    mu, sd = X[~test_mask].mean(0), X[~test_mask].std(0) + 1e-6
    X = (X - mu) / sd
    n_targets = Y.shape[1]
    n_classes = int(Y.max()) + 1
    torch.manual_seed(trial_seed(s.seed, "probe", 1))
    lin = torch.nn.Linear(X.shape[1], n_targets * n_classes)
    device = torch.device(model.device or "cpu")
    lin, X, Y, test_mask = lin.to(device), X.to(device), Y.to(device), test_mask.to(device)
    opt = torch.optim.Adam(lin.parameters(), lr=s.probe_lr)
    Xtr, Ytr = X[~test_mask], Y[~test_mask]
    for _ in tqdm(range(s.probe_epochs), desc="probe", disable=not progress, leave=False):
        perm = torch.randperm(len(Xtr)).to(device)
        for b in range(0, len(Xtr), s.probe_batch):
            idx = perm[b:b + s.probe_batch]
            logits = lin(Xtr[idx]).view(len(idx), n_targets, n_classes)
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, n_classes), Ytr[idx].reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
    with torch.no_grad():
        Xte, Yte = X[test_mask], Y[test_mask]
        pred = lin(Xte).view(len(Xte), n_targets, n_classes).argmax(-1)
        acc = float((pred == Yte).float().mean())
    n = int(test_mask.sum())
    return MetricResult("probe", acc, math.sqrt(max(acc * (1 - acc), 0.0) / n), n, 0, len(test_seq))


# ---------------------------------------------------------------------------
# The registered metrics (worldmodel.registry.METRICS): what the evaluator calls
# ---------------------------------------------------------------------------


def run_compression(ctx, log: TrialLog | None = None) -> dict[str, MetricResult]:
    """``compression``: :func:`compression` on the domain's sampler."""
    return {"compression_precision": compression(ctx.world, ctx.model, ctx.sampler(), ctx.settings, log,
                                                 ctx.progress)}


def run_distinction(ctx, log: TrialLog | None = None) -> dict[str, MetricResult]:
    """``distinction``: :func:`distinction` on the domain's sampler (precision and recall)."""
    return distinction(ctx.world, ctx.model, ctx.sampler(), ctx.settings, log, ctx.progress)


def run_next_token(ctx, log: TrialLog | None = None) -> dict[str, MetricResult]:
    """``next-token``: :func:`next_token` on the data set's held-out sequences."""
    return {"next_token": next_token(ctx.world, ctx.model, ctx.sequences("test"), ctx.settings, log, ctx.progress)}


def run_probe(ctx, log: TrialLog | None = None) -> dict[str, MetricResult]:
    """``probe``: :func:`probe` on the data set's training sequences."""
    return {"probe": probe(ctx.world, ctx.model, ctx.sequences("train"), ctx.settings, ctx.progress)}
