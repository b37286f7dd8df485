"""Every shipped task evaluates a model only inside the lengths its data train it on.

The metric engine stops a continuation where prefix + continuation would pass the
checkpoint's ``trained_len`` and refuses a prefix that leaves no room
(``worldmodel.metrics.length_bound``). A shipped task should need neither: for each
task file in ``tasks/`` and each of its datasets, the longest sequence the data can
hold (``L``, the stream's ``max_len``, else the ``[data]`` length the world
generates to) must fit every prefix its sampler draws plus a whole sampled
continuation (``[evaluate] max_sample_len``, drawn here from the true world model,
so a continuation that the world itself ends, as at the end of an Othello game, is
as short as it really is) and, with the exact boundary, plus ``k``.

Navigation tasks that read the paper's graph use the committed 1.2 km cut of it
(``tests/fixtures/data``): the length settings are the same, the map smaller.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from worldmodel.errors import WorldModelError
from worldmodel.evaluator import settings_for
from worldmodel.models import TrueWorldModel
from worldmodel.tasks import TASKS_DIR, load_task

from datahelp import FIXTURES

#: 8x8 Othello tasks build a 1000-game sampler pool (5-7 s each here): slow; 6x6 covers the world in the fast run
SLOW = {"othello-synthetic", "othello-synthetic-li", "othello-championship"}
TASKS = [pytest.param(p.stem, marks=pytest.mark.slow) if p.stem in SLOW else p.stem
         for p in sorted(Path(TASKS_DIR).glob("*.toml"))]
PAIRS = 60          # compression and distinction pairs drawn per task


def longest(task, dataset: str) -> int:
    """The longest sequence ``dataset`` of ``task`` can hold (what ``training.json`` records as trained_len)."""
    domain = task.domain
    stream = domain.stream(dataset)
    if stream is not None:
        return int(stream.max_len)
    if task.config["domain"] == "othello":            # championship games: at most every square once
        return domain.world.size ** 2 - 4
    if task.config["domain"] == "groups":             # a word of at most max_len generators, "=", the answer
        return int(task.section("data")["max_len"]) + 2
    if "max_len" in task.section("data"):              # seating, TextWorld: walks of min_len..max_len
        return int(task.section("data")["max_len"])
    return None


def test_every_task_is_checked():
    names = {getattr(t, "values", [t])[0] for t in TASKS}
    assert {"toy-dfa", "nav-grid", "othello-6x6-tiny", "seating", "textworld-simple"} <= names


@pytest.mark.parametrize("name", TASKS)
def test_task_evaluates_inside_its_training_lengths(name, monkeypatch):
    monkeypatch.setenv("WORLDMODEL_SHARED", str(FIXTURES))
    task = load_task(name)
    domain = task.domain
    settings = settings_for(task)
    data = task.section("data")
    if int(data.get("test_max_len", 0)) > int(data.get("max_len", 0)):
        pytest.skip(f"{name}: a labelled length-generalisation task (held out at {data['test_min_len']}.."
                    f"{data['test_max_len']}, trained to {data['max_len']}): its accuracy by length reads past the "
                    f"training lengths by design, and the engine's metrics stop at the trained length")
    try:
        bounds = [longest(task, d) for d in domain.datasets()]
        if None in bounds:
            pytest.skip(f"{name}: its {task.config['domain']} data declare no longest sequence (no stream, no "
                        f"[data] max_len); the engine's trained-length rule still applies to its checkpoints")
        sampler = domain.sampler()
        model = TrueWorldModel(domain.world)
    except WorldModelError as exc:
        if "worldmodel fetch" not in str(exc):
            raise
        pytest.skip(f"{name}: needs a data set the fixtures do not cut ({exc})")
    bound = min(bounds)
    rng = np.random.default_rng(0)
    prefixes = []
    for _ in range(PAIRS):
        for draw in (sampler.compression_pair, sampler.distinction_pair):
            try:
                pair = draw(rng)
            except Exception as exc:  # noqa: BLE001 - a skipped trial (TrialSkipped) is not what is tested
                if type(exc).__name__ != "TrialSkipped":
                    raise
                continue
            prefixes += [pair.prefix1, pair.prefix2]
    assert prefixes, f"{name}: the sampler drew no pair"
    longest_prefix = max(len(p) for p in prefixes)
    assert longest_prefix < bound, f"{name}: a {longest_prefix}-token prefix leaves no room inside {bound} tokens"
    if settings.boundary == "exact":
        assert longest_prefix + settings.k <= bound, \
            f"{name}: a {longest_prefix}-token prefix + k = {settings.k} passes {bound} tokens"
    u = [rng.random((3, settings.max_sample_len)) for _ in prefixes]
    samples = model.sample(prefixes, u, settings.acceptance, domain.world.stop_tokens)
    total = max(len(p) + len(x) for p, group in zip(prefixes, samples) for x in group)
    assert total <= bound, (f"{name}: prefix + sampled continuation reach {total} tokens, past the {bound} "
                            f"its data hold (lower [evaluate] max_sample_len or the sampler's prefix length)")
