"""Group word-problem tasks: data, the state sampler, accuracy by word length.

Task settings:

* ``[world]`` ``group`` (``parity``, ``Z5``, ``S3``, ``A4``, ``A5``, ``S5``, …; see
  :func:`~.group.named_group`), ``generators`` (``"default"`` or ``"all"``);
* ``[data]`` ``n_train``, ``n_val``, ``n_test``; words of ``min_len``..``max_len``
  generators (uniform), the training lengths ``≤ L = max_len``; the test split's
  words have ``test_min_len``..``test_max_len`` (default: the training lengths);
* ``[sampler]`` ``min_len``, ``max_len``: the prefix lengths compression and
  distinction draw (default ``1..L/2``, so that prefix and sampled continuation stay
  within the lengths the model was trained on).

**Length generalisation is a separate, labelled question.** A task's own metrics
never score a model beyond its training lengths unless the task says so: the
``-long`` tasks (``tasks/group-*-long.toml``) keep the training sections of their
base task and move the test split and the sampler's prefixes to ``L+1..4L``, and
:func:`accuracy_by_length` reports the answer's accuracy at every word length
``1..4L`` with the training range marked.
"""

from __future__ import annotations

import numpy as np

from ...errors import WorldModelError
from ...results import MetricResult
from ...api import Domain
from .group import named_group
from .sampler import GroupSampler
from .world import GroupWorld


def random_words(world: GroupWorld, n: int, lo: int, hi: int, rng: np.random.Generator) -> list[list[str]]:
    """``n`` uniform random generator words of uniform lengths ``lo..hi``, each as ``w = [product]``."""
    gens = world.generators
    out = []
    for _ in range(n):
        k = int(rng.integers(lo, hi + 1))
        word = [gens[i] for i in rng.integers(len(gens), size=k)]
        out.append(world.sequence(word))
    return out


class GroupDomain(Domain):
    """The word problem of a finite group (:class:`~.world.GroupWorld`)."""

    schema = {
        "world": {"group": str, "generators": str},
        "data": {"n_train": int, "n_val": int, "n_test": int, "min_len": int, "max_len": int,
                 "test_min_len": int, "test_max_len": int},
        "sampler": {"min_len": int, "max_len": int},
    }

    def build_world(self) -> GroupWorld:
        w = self.task.section("world")
        return GroupWorld(named_group(w.get("group", "Z5"), w.get("generators", "default")), name=self.task.name)

    def lengths(self, split: str = "train") -> tuple[int, int]:
        """Word lengths of a split (``train`` and ``val`` share the training lengths)."""
        d = self.task.section("data")
        lo, hi = int(d.get("min_len", 1)), int(d.get("max_len", 12))
        if split == "test":
            lo, hi = int(d.get("test_min_len", lo)), int(d.get("test_max_len", hi))
        if not 0 <= lo <= hi:
            raise WorldModelError(f"task {self.task.path}: [data] needs 0 <= min_len <= max_len (split {split})")
        return lo, hi

    def sampler(self) -> GroupSampler:
        s = self.task.section("sampler")
        L = self.lengths("train")[1]
        lo, hi = int(s.get("min_len", 1)), int(s.get("max_len", max(1, L // 2)))
        if not 1 <= lo <= hi:
            raise WorldModelError(f"task {self.task.path}: [sampler] needs 1 <= min_len <= max_len")
        return GroupSampler(self.world, min_len=lo, max_len=hi)

    def generate(self, dataset: str):
        d = self.task.section("data")
        rng = np.random.default_rng(self.task.seed + 1)
        out = {}
        for split, default in (("train", 20000), ("val", 500), ("test", 500)):
            lo, hi = self.lengths(split)
            out[split] = random_words(self.world, int(d.get(f"n_{split}", default)), lo, hi, rng)
        return out


def accuracy_by_length(world: GroupWorld, model, lengths, n_per_length: int, seed: int = 0,
                       batch: int = 256) -> dict[int, MetricResult]:
    """Share of ``n_per_length`` random words of each length whose answer is the model's top token.

    The model reads ``w =`` and its most probable next token is compared with the
    true product's (greedy answer accuracy, the word problem's usual score); chance
    is ``1 / |G|``. Words are drawn from ``seed`` and the length alone, so every model
    sees the same words. Lengths beyond a model's training lengths measure length
    generalisation; the caller labels them so.
    """
    out = {}
    ans_col = [model.token_index()[a] for a in world.answers]
    for n in lengths:
        rng = np.random.default_rng([seed, int(n)])
        seqs = random_words(world, n_per_length, int(n), int(n), rng)
        correct = []
        for b in range(0, len(seqs), batch):
            part = seqs[b:b + batch]
            probs = model.next_token_probs([s[:-1] for s in part])
            top = np.argmax(probs, axis=1)
            for s, t, p in zip(part, top, probs):
                correct.append(p.max() > 0 and int(t) == ans_col[world.answers.index(s[-1])])
        acc = float(np.mean(correct))
        out[int(n)] = MetricResult(f"answer_accuracy@{n}", acc, float(np.sqrt(acc * (1 - acc) / len(correct))),
                                   len(correct), 0, len(correct))
    return out
