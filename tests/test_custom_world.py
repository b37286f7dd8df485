"""A world from outside the package, through the public API only: data -> train -> evaluate -> extract.

Nothing here imports a ``worldmodel`` submodule except through ``import worldmodel as wm``: the
world, its sampler and its domain are written in this file, as a user would write them in theirs.
"""

from __future__ import annotations

import json
import textwrap

import networkx as nx
import numpy as np
import pytest

import worldmodel as wm

TOKENS = ("+", "-", "0")


class Counter(wm.World):
    """A counter from 0 to 4: ``+`` and ``-`` step it (never past the ends), ``0`` resets it."""

    tokens = TOKENS
    name = "counter"

    def initial_state(self):
        return 0

    def step(self, state, token):
        if state is wm.REJECT:
            return wm.REJECT
        nxt = {"+": state + 1, "-": state - 1, "0": 0}.get(token)
        return nxt if nxt is not None and 0 <= nxt <= 4 else wm.REJECT


class CounterSampler(wm.StateSampler):
    """Prefixes of random walks; two walks that end on the same count make a compression pair."""

    def _walk(self, rng, n):
        s, out = 0, []
        for _ in range(n):
            t = self.world.valid_tokens(s)[int(rng.integers(len(self.world.valid_tokens(s))))]
            out.append(t)
            s = self.world.step(s, t)
        return tuple(out), s

    def compression_pair(self, rng):
        p1, s1 = self._walk(rng, int(rng.integers(2, 7)))
        for _ in range(200):
            p2, s2 = self._walk(rng, int(rng.integers(2, 7)))
            if s2 == s1 and p2 != p1:
                return self.make_pair(str(s1), p1, p2)
        raise wm.WorldModelError("no second prefix found")

    def distinction_pair(self, rng):
        p1, s1 = self._walk(rng, int(rng.integers(2, 7)))
        while True:
            p2, s2 = self._walk(rng, int(rng.integers(2, 7)))
            if s2 != s1:
                return self.make_pair(f"{s1}|{s2}", p1, p2)


def counter_walks(task):
    rng = np.random.default_rng(task.seed)
    sampler = CounterSampler(task.world)
    return {split: [list(sampler._walk(rng, int(rng.integers(4, 13)))[0]) for _ in range(n)]
            for split, n in (("train", 1200), ("val", 100), ("test", 60))}


CONFIG = {
    "model": {"n_layer": 1, "n_embd": 32, "n_head": 2, "n_positions": 32},
    "train": {"steps": 150, "batch_size": 32, "lr": 3e-3, "warmup": 10},
    "evaluate": {"trials": 12, "M": 8, "k": 3, "max_sample_len": 12},
}


def test_a_world_from_a_test_file_runs_end_to_end(tmp_path):
    task = wm.Task.from_world(Counter(), sampler=CounterSampler, data=counter_walks, name="counter", config=CONFIG)
    folder = task.domain.ensure_data(data_dir=tmp_path / "data")
    assert (folder / "train.txt").read_text().count("\n") == 1200

    info = wm.train(task, tmp_path / "ck", data_dir=tmp_path / "data", progress=False)
    assert info["steps"] == 150 and info["task_file"] is None
    saved = (tmp_path / "ck" / "task.toml").read_text()
    assert 'domain = "python"' in saved and "[train]" in saved and "steps = 150" in saved

    model = wm.build_model(task, checkpoint=tmp_path / "ck")
    settings = wm.settings_for(task)
    summary = wm.evaluate(task, model, ["compression", "distinction", "next-token"], settings,
                          out=tmp_path / "eval.json", data_dir=tmp_path / "data", progress=False)
    metrics = summary["metrics"]
    assert set(metrics) == {"compression_precision", "distinction_precision", "distinction_recall", "next_token"}
    assert all(m["n"] == 12 for k, m in metrics.items() if k != "next_token")
    assert json.loads((tmp_path / "eval.json").read_text())["metrics"] == metrics

    true = wm.build_model(task, model="true")
    perfect = wm.evaluate(task, true, ["compression", "distinction", "next-token"], settings,
                          data_dir=tmp_path / "data", progress=False)["metrics"]
    assert all(m["mean"] == 1.0 for m in perfect.values())

    learned = wm.extract_automaton(task, true, max_states=20, walks=50)
    assert learned["diff"]["equivalent"] and learned["diff"]["true_states"] == 5
    trained = wm.extract_automaton(task, model, max_states=20, walks=50, out=tmp_path / "extract")
    assert (tmp_path / "extract" / "report.md").exists() and trained["diff"]["true_states"] == 5


def test_explicit_dfas_from_a_dict_and_from_networkx_are_the_same_world():
    table = {s: {t: nxt for t, nxt in (("+", s + 1), ("-", s - 1), ("0", 0)) if 0 <= nxt <= 4} for s in range(5)}
    from_dict = wm.ExplicitDFA.from_dict(table, start=0, tokens=TOKENS, name="counter")
    g = nx.MultiDiGraph()
    for s, row in table.items():
        for t, nxt in row.items():
            g.add_edge(s, nxt, label=t)
    from_graph = wm.ExplicitDFA.from_networkx(g, start=0, tokens=TOKENS)
    walks = [("+", "+", "-", "0", "+"), ("-",), ("+",) * 5, ("+", "0", "-")]
    counter = Counter()
    for w in walks:
        ref = counter.initial_state()
        for t in w:
            ref = counter.step(ref, t)
        for dfa in (from_dict, from_graph):
            got = dfa.initial_state()
            for t in w:
                got = dfa.step(got, t)
            assert (got is wm.REJECT) == (ref is wm.REJECT)
            if ref is not wm.REJECT:
                assert dfa.state_key(got) == str(ref)
    assert from_dict.minimise()[0].n_states == 5
    # and it trains on random walks with the default sampler, no data given
    task = wm.Task.from_world(from_dict, config={"data": {"n_train": 10, "n_val": 2, "n_test": 2, "max_len": 12}})
    pair = task.domain.sampler().compression_pair(np.random.default_rng(0))
    assert pair.state1 == pair.state2 and pair.prefix1 != pair.prefix2


def test_nondeterministic_graphs_and_bad_data_are_one_line_errors():
    g = nx.MultiDiGraph()
    g.add_edge("a", "b", label="x")
    g.add_edge("a", "c", label="x")
    with pytest.raises(wm.WorldModelError, match="two edges labelled 'x'"):
        wm.ExplicitDFA.from_networkx(g, start="a")
    task = wm.Task.from_world(Counter(), sampler=CounterSampler, data={"train": [["-"]], "val": [], "test": []})
    with pytest.raises(wm.WorldModelError, match="train sequence 0 is not valid in the counter world"):
        task.domain.generate("default")
    with pytest.raises(wm.WorldModelError, match=r"\[data\] unknown key 'n_tran'"):
        wm.Task.from_world(Counter(), config={"data": {"n_tran": 3}})


class CounterDomain(wm.WorldDomain):
    """The counter as a Domain class a task file names by its import path."""

    def build_world(self):
        return Counter()

    def sampler(self):
        return CounterSampler(self.world)


def test_a_task_file_names_a_domain_by_its_import_path(tmp_path):
    path = tmp_path / "counter.toml"
    path.write_text(textwrap.dedent("""\
        name = "counter-file"
        domain = "test_custom_world:CounterDomain"
        [data]
        n_train = 20
        n_val = 4
        n_test = 4
        max_len = 6
    """))
    task = wm.load_task(path)
    assert isinstance(task.domain, CounterDomain) and task.world.name == "counter"
    assert set(task.domain.generate("default")) == {"train", "val", "test"}
    assert wm.load_task(CounterDomain).domain.world.name == "counter"
    bad = tmp_path / "bad.toml"
    bad.write_text('domain = "no_such_module_here:Nothing"\n')
    with pytest.raises(wm.WorldModelError, match="cannot import domain 'no_such_module_here:Nothing'"):
        wm.load_task(bad)


def test_an_installed_package_registers_a_world_and_a_metric_through_entry_points(monkeypatch):
    from worldmodel import registry

    class EP:
        def __init__(self, name, value, obj=None):
            self.name, self.value, self.obj = name, value, obj

        def load(self):
            return self.obj

    def always_two(ctx, log=None):
        from worldmodel.results import MetricResult

        return {"two": MetricResult("two", 2.0, 0.0, 1, 0)}

    spec = wm.MetricSpec("two", always_two, (("two", "Two"),), trials=False, default=False,
                         settings={"two_scale": (float, 1.0, "a setting the metric adds")})
    groups = {"worldmodel.worlds": [EP("counter-ep", "test_custom_world:CounterDomain")],
              "worldmodel.metrics": [EP("two", "x:y", spec)], "worldmodel.formats": []}
    monkeypatch.setattr(registry, "entry_points", lambda group: groups[group])
    monkeypatch.setattr(registry, "_loaded", set())
    monkeypatch.setattr(registry, "WORLDS", list(registry.WORLDS))
    monkeypatch.setattr(registry, "METRICS", list(registry.METRICS))
    assert "counter-ep" in registry.names() and registry.domain_class("counter-ep") is CounterDomain
    assert "two" in registry.metric_names() and "two" not in registry.metric_names(default_only=True)
    task = wm.Task.from_world(Counter(), sampler=CounterSampler, config={"evaluate": {"two_scale": 3.0}})
    settings = wm.settings_for(task)
    from worldmodel.settings import metric_settings

    # extra: the registered metrics' keys (the core's inductive-bias ones at their defaults), two_scale as set
    assert settings.extra["two_scale"] == 3.0 and set(settings.extra) <= set(metric_settings())
    assert settings.to_dict()["two_scale"] == 3.0
    got = wm.evaluate(task, wm.build_model(task, model="true"), ["two"], settings, progress=False)
    assert got["metrics"] == {"two": {"mean": 2.0, "stderr": 0.0, "n": 1, "n_failed": 0, "n_groups": 0, "failures": {}}}
    with pytest.raises(ValueError, match="clashes"):
        registry.register_metric(spec)
