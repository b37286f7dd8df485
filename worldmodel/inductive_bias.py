"""The inductive-bias probe of Vafa, Chang, Rambachan and Mullainathan (ICML 2025).

"What has a foundation model found?" asks how a model *extrapolates* when it is
adapted to a new task with little data. If the model has found the world, its
extrapolations should be functions of the world's state: two inputs that reach
the same state get the same prediction, two that reach different states can get
different ones. The probe draws many small synthetic tasks whose targets are
random functions of the true state ("white noise": every state gets a random label
from ``C`` classes), adapts a copy of the model to a small sample of each, and
compares its predictions on a fixed set of held-out inputs:

* **R-IB** (respecting state) ``= 1 − P(two same-state inputs are predicted
  differently) / (1 − 1/C)`` over same-state pairs of held-out inputs: 1 when
  same-state inputs always get one prediction, 0 when they agree no more than two
  independent random labels do;
* **D-IB** (distinguishing states) ``= P(two different-state inputs are predicted
  differently) / P(their true labels differ)`` over different-state pairs: 1 when
  the model separates states as the labels do, 0 when it predicts one class for all;
* **D-IB by pseudo-state**: D-IB over the different-state pairs whose states allow
  the same next tokens (same *pseudo-state*) and over those that do not. A model
  that only tracks next-token sets separates the second kind but not the first.

Each task is one trial (logged, resumable); the numbers are pooled over tasks and
the standard errors are the ratio estimator's with tasks as clusters
(:func:`worldmodel.results.pooled`). ``ib_fit`` is the mean training accuracy of the
adapted models (a probe that never fits its 100 examples says little), and
``ib_coverage`` the share of held-out inputs whose state occurs in the task's
training sample.

**The protocol** (settings in ``[evaluate]``, declared with the metric in
:data:`worldmodel.registry.METRICS`; the authors' values as defaults):
``ib_tasks`` white-noise tasks (100 in the paper; 20 here by default),
``ib_classes`` labels (2), each task's sample ``ib_train`` training sequences (100)
with *one* labelled position each (uniform), the held-out inputs ``ib_examples``
positions (2000) of held-out sequences, the same for every task. Adaptation as in
their ``train_model.py``: a fresh linear head on the last hidden layer (normal(0,
0.02) weights, zero bias), the whole network fine-tuned (``ib_finetune = "full"``;
``"head"`` trains the head alone on frozen features) with AdamW (``ib_lr`` 6e-4,
betas 0.9/0.95, weight decay 0.1 on matrices, gradients clipped to 1) for ``ib_steps``
(100) full-batch steps; predictions are the head's argmax.

Where this differs from the authors' code:

* **D-IB's normaliser.** Their code multiplies the disagreement rate by 2 (binary
  labels: ``1 / (1 − 1/C)``), whose expectation over the random labels is the
  labels' own disagreement rate. Here D-IB divides by the labels' disagreement on the
  *same* pairs and tasks, so the state lookup below scores exactly 1 (theirs varies
  around 1 with the draw of labels); R-IB keeps their normaliser (the lookup's
  same-state disagreement is 0 either way).
* **Inputs.** Their inputs are fixed-length sequences of their own worlds; here they
  are the task's held-out sequences, every position ``j ≥ 1`` (the state after
  ``x[:j]``), sampled uniformly, and the states are the world's (its minimal DFA's
  classes for explicit worlds).
* **Identical inputs.** Two held-out positions with the same prefix get the same
  prediction from any model; their code counts such pairs among the same-state pairs
  (with their long random walks they are rare), here they are left out (on 6×6
  Othello most same-board pairs are the same opening, and would give every model
  R-IB = 1). Each task's record counts them (``identical_input_pairs``) and keeps the
  predictions, so the pairs can be re-counted any other way.
* **Labels** are a hash of the task seed and the state's key (so implicit worlds
  with astronomically many states need no table).
* **The ceiling.** The true world model has no weights to adapt; its row is the
  *state lookup*, which predicts each task's true label of the state: R-IB and D-IB
  are 1 by construction, which the tests check.
"""

from __future__ import annotations

import copy
import hashlib
import math
from typing import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from .dfa import REJECT, World
from .errors import WorldModelError
from .metrics import _Runner
from .results import MetricResult, TrialLog, pooled, trial_seed

FINETUNE = ("full", "head")
#: the summary keys this metric fills
NAMES = ("inductive_bias_r", "inductive_bias_d", "inductive_bias_d_same_pseudo", "inductive_bias_d_diff_pseudo",
         "ib_fit", "ib_coverage")


def probe_settings_spec() -> dict[str, tuple[type, object, str]]:
    """The metric's ``[evaluate]`` keys, ``{key: (type, default, help)}``, as registered
    (:data:`worldmodel.registry.METRICS`; the authors' values but ``ib_tasks``)."""
    from . import registry

    return dict(registry.metric("inductive-bias").settings)


class ProbeSettings:
    """The run's :class:`~worldmodel.settings.Settings` with the probe's ``ib_*`` keys (from ``settings.extra``,
    defaults where unset) as attributes, each checked: one line naming the key when a value is bad."""

    def __init__(self, settings):
        self._base = settings
        extra = getattr(settings, "extra", None) or {}
        for key, (_typ, default, _help) in probe_settings_spec().items():
            setattr(self, key, extra.get(key, default))
        for key, low in (("ib_tasks", 1), ("ib_classes", 2), ("ib_train", 1), ("ib_examples", 2), ("ib_steps", 1)):
            v = getattr(self, key)
            if not isinstance(v, int) or isinstance(v, bool) or v < low:
                raise WorldModelError(f"evaluate setting {key} must be a whole number >= {low}, got {v!r}")
        if isinstance(self.ib_lr, bool) or not isinstance(self.ib_lr, (int, float)) or not self.ib_lr > 0:
            raise WorldModelError(f"evaluate setting ib_lr must be a positive number, got {self.ib_lr!r}")
        if self.ib_finetune not in FINETUNE:
            raise WorldModelError(f"evaluate setting ib_finetune must be one of {', '.join(FINETUNE)}, "
                                  f"got {self.ib_finetune!r}")

    def __getattr__(self, name):                 # every other setting: the run's own
        return getattr(self._base, name)


def run_inductive_bias(ctx, log: TrialLog | None = None) -> dict[str, MetricResult]:
    """``inductive-bias`` (registered in :data:`worldmodel.registry.METRICS`): :func:`inductive_bias` with the
    data set's training sequences for the tasks' samples and its held-out ones for the inputs compared."""
    return inductive_bias(ctx.world, ctx.model, ctx.sequences("train"), ctx.sequences("test"), ctx.settings, log,
                          ctx.progress)


def white_noise_label(seed: int, state_key: str, classes: int) -> int:
    """Task ``seed``'s random label of a state (a hash: the same on every machine and run)."""
    h = hashlib.blake2b(f"{seed}:{state_key}".encode(), digest_size=8).digest()
    return int.from_bytes(h, "little") % classes


def _positions(world: World, sequences: Sequence[Sequence[str]], start: int):
    """Every (sequence index, j, state key, pseudo-state) with j >= start: the state after ``seq[:j]``."""
    out = []
    for i, seq in enumerate(sequences):
        s = world.initial_state()
        for j in range(len(seq) + 1):
            if j >= max(1, start):
                out.append((i, j, world.state_key(s), frozenset(world.valid_tokens(s))))
            if j < len(seq):
                s = world.step(s, seq[j])
                if s is REJECT:
                    raise WorldModelError(f"inductive-bias probe: sequence {i} is not valid in the {world.name} world")
    return out


def _pair_counts(pred: np.ndarray, labels: np.ndarray, same: np.ndarray, pseudo: np.ndarray, classes: int) -> dict:
    """Disagreement counts over the pairs i < j of the held-out inputs."""
    n = len(pred)
    upper = np.triu(np.ones((n, n), dtype=bool), k=1)
    dis = pred[:, None] != pred[None, :]
    lab = labels[:, None] != labels[None, :]
    out = {}
    for name, mask in (("same", same & upper), ("diff", ~same & upper), ("diff_same_pseudo", ~same & pseudo & upper),
                       ("diff_diff_pseudo", ~same & ~pseudo & upper)):
        out[f"{name}_pairs"] = int(mask.sum())
        out[f"{name}_pred_disagree"] = int((dis & mask).sum())
        out[f"{name}_label_disagree"] = int((lab & mask).sum())
    out["same_expected"] = out["same_pairs"] * (1.0 - 1.0 / classes)
    return out


def _adapt(fnet, train_ids, train_rows, train_cols, train_y, eval_ids, eval_rows, eval_cols, settings, seed: int):
    """Fine-tune a copy of the network with a fresh head on one task; (train accuracy, eval predictions)."""
    s = settings
    g = torch.Generator().manual_seed(seed)
    width = fnet.width()
    head = torch.nn.Linear(width, s.ib_classes)
    with torch.no_grad():
        head.weight.copy_(torch.randn(head.weight.shape, generator=g) * 0.02)
        head.bias.zero_()
    head = head.to(fnet.device)
    dev = fnet.device
    y = torch.as_tensor(train_y, dtype=torch.long, device=dev)
    if s.ib_finetune == "full":
        net = copy.deepcopy(fnet.network).to(dev)
        net.train()
        params = list(net.parameters()) + list(head.parameters())
    else:
        net = fnet.network
        net.eval()
        with torch.no_grad():
            frozen = fnet.features(net, train_ids)[train_rows, train_cols]
        params = list(head.parameters())
    decay = [p for p in params if p.dim() >= 2]
    rest = [p for p in params if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                            lr=float(s.ib_lr), betas=(0.9, 0.95))
    for _ in range(s.ib_steps):
        feats = fnet.features(net, train_ids)[train_rows, train_cols] if s.ib_finetune == "full" else frozen
        loss = F.cross_entropy(head(feats), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
    net.eval()
    with torch.no_grad():
        fit = float((head(fnet.features(net, train_ids)[train_rows, train_cols]).argmax(-1) == y).float().mean())
        feats = torch.cat([fnet.features(net, eval_ids[b:b + 256]) for b in range(0, len(eval_ids), 256)])
        pred = head(feats[eval_rows, eval_cols]).argmax(-1).cpu().numpy()
    return fit, pred


def inductive_bias(world: World, model, train_sequences: Sequence[Sequence[str]],
                   eval_sequences: Sequence[Sequence[str]], settings, log: TrialLog | None = None,
                   progress: bool = True) -> dict[str, MetricResult]:
    """R-IB, D-IB (and by pseudo-state), fit and coverage of ``model`` on ``ib_tasks`` white-noise tasks.

    ``train_sequences`` supply each task's small training sample, ``eval_sequences``
    the held-out inputs (the same for every task). A model with a network
    (``model.feature_net()``) is adapted as the module docstring says; the true world
    model is the state lookup (the ceiling, 1.0); any other model records why it
    cannot run.
    """
    from .models import TrueWorldModel

    s = settings if isinstance(settings, ProbeSettings) else ProbeSettings(settings)
    fnet = model.feature_net() if hasattr(model, "feature_net") else None
    lookup = fnet is None and isinstance(model, TrueWorldModel)
    runner = _Runner("inductive-bias", s, log, progress)
    train_sequences = [list(x) for x in train_sequences]
    eval_sequences = [list(x) for x in eval_sequences]
    if not train_sequences or not eval_sequences:
        raise WorldModelError("inductive-bias probe: no training or held-out sequences")
    start = fnet.offset if fnet is not None else 0
    # the held-out inputs: the same positions for every task
    pool = _positions(world, eval_sequences, start)
    rng = np.random.default_rng(trial_seed(s.seed, "inductive-bias-inputs", 0))
    pick = rng.choice(len(pool), size=min(s.ib_examples, len(pool)), replace=False)
    chosen = [pool[i] for i in sorted(pick)]
    ev_keys = [c[2] for c in chosen]
    same = np.array(ev_keys, dtype=object)[:, None] == np.array(ev_keys, dtype=object)[None, :]
    # two positions holding the same input (the same prefix) get one prediction whatever the model:
    # such pairs say nothing about respecting the state, and are left out of the same-state pairs
    text = np.array([" ".join(eval_sequences[c[0]][:c[1]]) for c in chosen], dtype=object)
    identical = text[:, None] == text[None, :]
    n_identical = int((np.triu(identical, k=1)).sum())
    same &= ~identical
    ps = [c[3] for c in chosen]
    ps_id = {p: k for k, p in enumerate(dict.fromkeys(ps))}
    pseudo_arr = np.array([ps_id[p] for p in ps])
    pseudo = pseudo_arr[:, None] == pseudo_arr[None, :]
    if fnet is not None:
        used = sorted({c[0] for c in chosen})
        where = {i: r for r, i in enumerate(used)}
        eval_ids = fnet.batch([eval_sequences[i] for i in used])
        eval_rows = torch.tensor([where[c[0]] for c in chosen], device=fnet.device)
        eval_cols = torch.tensor([c[1] - fnet.offset for c in chosen], device=fnet.device)
    # every training sequence's positions, once
    train_pos = [p for p in _positions(world, train_sequences, start)]
    by_seq: dict[int, list] = {}
    for p in train_pos:
        by_seq.setdefault(p[0], []).append(p)
    seq_ids = sorted(by_seq)
    if not seq_ids:
        raise WorldModelError("inductive-bias probe: the training sequences have no position to label")

    def draw(i, rng):
        task_seed = trial_seed(s.seed, "inductive-bias-task", i)
        picked = rng.choice(len(seq_ids), size=min(s.ib_train, len(seq_ids)), replace=False)
        sample = []
        for k in picked:
            opts = by_seq[seq_ids[int(k)]]
            sample.append(opts[int(rng.integers(len(opts)))])
        return task_seed, sample

    def batch(items):
        out = []
        for base, (task_seed, sample), _ in items:
            labels = np.array([white_noise_label(task_seed, k, s.ib_classes) for k in ev_keys])
            ys = [white_noise_label(task_seed, p[2], s.ib_classes) for p in sample]
            seen = {p[2] for p in sample}
            coverage = float(np.mean([k in seen for k in ev_keys]))
            if lookup:
                fit, pred = 1.0, labels
            elif fnet is None:
                out.append({**base, "status": "skipped", "reason": f"the {model.name} model has no network to adapt"})
                continue
            else:
                # a causal model's features at position j read x[:j] only: each row is cut there
                ids = fnet.batch([train_sequences[p[0]][:p[1]] for p in sample])
                rows = torch.arange(len(sample), device=fnet.device)
                cols = torch.tensor([p[1] - fnet.offset for p in sample], device=fnet.device)
                fit, pred = _adapt(fnet, ids, rows, cols, ys, eval_ids, eval_rows, eval_cols, s,
                                   trial_seed(s.seed, "inductive-bias-init", base["trial"]))
            counts = _pair_counts(np.asarray(pred), labels, same, pseudo, s.ib_classes)
            out.append({**base, "status": "ok", "key": str(base["trial"]), "pair": str(base["trial"]),
                        "task_seed": task_seed, "fit": fit, "coverage": coverage, **counts,
                        "identical_input_pairs": n_identical, "predictions": [int(x) for x in np.asarray(pred)]})
        return out

    trials = runner.run(s.ib_tasks, draw, batch)
    return summarise(trials)


def summarise(trials: list[dict]) -> dict[str, MetricResult]:
    """The pooled R-IB, D-IB (all, same and different pseudo-state), fit and coverage of task records."""
    r = pooled("inductive_bias_r", trials, "same_pred_disagree", "same_expected")
    r = MetricResult("inductive_bias_r", 1.0 - r.mean if r.n else r.mean, r.stderr, r.n, r.n_failed, r.n_groups,
                     r.failures)
    out = {"inductive_bias_r": r,
           "inductive_bias_d": pooled("inductive_bias_d", trials, "diff_pred_disagree", "diff_label_disagree"),
           "inductive_bias_d_same_pseudo": pooled("inductive_bias_d_same_pseudo", trials,
                                                  "diff_same_pseudo_pred_disagree", "diff_same_pseudo_label_disagree"),
           "inductive_bias_d_diff_pseudo": pooled("inductive_bias_d_diff_pseudo", trials,
                                                  "diff_diff_pseudo_pred_disagree", "diff_diff_pseudo_label_disagree")}
    for key, name in (("fit", "ib_fit"), ("coverage", "ib_coverage")):
        vals = [float(t[key]) for t in trials if t.get("status") == "ok"]
        n = len(vals)
        mean = float(np.mean(vals)) if n else float("nan")
        se = float(np.std(vals, ddof=1) / math.sqrt(n)) if n > 1 else 0.0 if n else float("nan")
        out[name] = MetricResult(name, mean, se, n, len(trials) - n, n)
    return out
