"""The App. E protocol: the true responder scores 1, the random one its expectation; caching; CLI."""

import hashlib
import json
import math

import numpy as np
import pytest

from worldmodel.dfa import exact_boundary, is_valid, run
from worldmodel.errors import TrialSkipped, WorldModelError
from worldmodel.chat import Backend, CachedBackend, ResponseCache
from worldmodel.worlds.seating.responders import RandomResponder, TrueResponder
from worldmodel.worlds.seating.protocol import METRICS, ProtocolSettings, evaluate_in_words
from worldmodel.worlds.seating.world import SeatingWorld


@pytest.fixture(scope="module")
def true_report():
    return evaluate_in_words(TrueResponder(), ProtocolSettings())


def test_true_responder_scores_one(true_report):
    for m in METRICS:
        r = true_report.metrics[m]
        assert r.mean == 1.0 and r.n > 0, m
        assert true_report.unparseable[m] == 0
    assert true_report.metrics["capability"].n == 100
    assert true_report.metrics["compression_precision"].n == 100
    # only pairs whose k=1 boundary is empty are not scored, and they say so
    d = true_report.metrics["distinction_recall"]
    assert d.n + d.n_failed == 100 and set(d.failures) <= {"empty true boundary (k=1)"}


def test_planned_trials_follow_the_protocol(true_report):
    w = SeatingWorld(3)
    for t in true_report.trials["capability"]:
        state = run(w, t["statements"])
        assert len(state) == 1 and "".join(next(iter(state))) == t["state"]
    sources = []
    for t in true_report.trials["compression_precision"]:
        q1, q2 = run(w, t["prefix1"]), run(w, t["prefix2"])
        assert q1 == q2 and t["prefix1"] != t["prefix2"]
        assert len(t["continuations"]) == 5
        for c, src in zip(t["continuations"], t["sources"]):
            if src == "valid":
                assert is_valid(w, c, q1)
        sources += t["sources"]
    share = sources.count("valid") / len(sources)
    assert 0.4 < share < 0.6  # half from the valid set, half uniform
    for t in true_report.trials["distinction_recall"]:
        q1, q2 = run(w, t["prefix1"]), run(w, t["prefix2"])
        assert q1 != q2
        if t["status"] == "ok":
            b = exact_boundary(w, q1, q2, 1)
            assert 1 <= len(t["suffixes"]) <= 5 and all(tuple(x) in b for x in t["suffixes"])


def test_random_responder_scores_near_its_expectation():
    s = ProtocolSettings(states=200, seed=3)
    rep = evaluate_in_words(RandomResponder(seed=1), s)
    n = rep.metrics["capability"].n
    assert abs(rep.metrics["capability"].mean - 1 / 3) < 4 * math.sqrt((1 / 3) * (2 / 3) / n)
    # a state passes when both prefixes get the same answer for every distinct continuation
    comp = rep.trials["compression_precision"]
    expect = np.mean([0.5 ** len({tuple(c) for c in t["continuations"]}) for t in comp])
    sd = np.sqrt(np.mean([p * (1 - p) for p in [0.5 ** len({tuple(c) for c in t["continuations"]}) for t in comp]]))
    assert abs(rep.metrics["compression_precision"].mean - expect) < 4 * sd / math.sqrt(len(comp))
    assert rep.metrics["compression_precision"].mean < 0.2
    d = rep.metrics["distinction_recall"]
    assert abs(d.mean - 0.25) < 4 * max(d.stderr, 0.02)


def test_runs_are_seeded():
    a = evaluate_in_words(RandomResponder(0), ProtocolSettings(states=20, seed=5))
    b = evaluate_in_words(RandomResponder(0), ProtocolSettings(states=20, seed=5))
    c = evaluate_in_words(RandomResponder(0), ProtocolSettings(states=20, seed=6))
    assert a.summary() == b.summary()
    assert a.trials["compression_precision"][0]["prefix1"] == b.trials["compression_precision"][0]["prefix1"]
    assert [t.get("prefix1") for t in a.trials["compression_precision"]] != \
           [t.get("prefix1") for t in c.trials["compression_precision"]]


class Mumbler(Backend):
    """The truth, except every ``every``-th distinct prompt gets an answer that does not parse."""

    backend = "mumbler"
    model = "test"

    def __init__(self, every=3):
        self.truth = TrueResponder()
        self.every = every
        self.garbled = set()

    def ask(self, prompts):
        out = []
        for p in prompts:
            if int(hashlib.sha256(p.encode()).hexdigest(), 16) % self.every == 0:
                self.garbled.add(p)
                out.append("I believe the answer is yes.")
            else:
                out.append(self.truth.answer(p))
        return out


def test_unparseable_answers_are_counted_never_guessed():
    mum = Mumbler()
    rep = evaluate_in_words(mum, ProtocolSettings(states=40, seed=2))
    total_bad = sum(rep.unparseable.values())
    assert total_bad > 0
    # every prompt occurrence with a garbled answer is counted
    occurrences = sum(p in mum.garbled for m in METRICS for t in rep.trials[m] for p in t.get("prompts", []))
    assert total_bad == occurrences
    cap = rep.metrics["capability"]
    assert cap.mean == 1.0 and cap.failures.get("unparseable answer", 0) > 0
    # scored continuations are only those with two parsed answers: the truth still scores 1
    assert rep.metrics["compression_precision"].mean == 1.0
    assert rep.metrics["distinction_recall"].mean == 1.0


class Counting(Backend):
    def __init__(self, inner, fail_after=None):
        self.inner = inner
        self.backend, self.model = inner.backend, inner.model
        self.calls = 0
        self.fail_after = fail_after
        self.batch_size = 50

    def ask(self, prompts):
        if self.fail_after is not None and self.calls + len(prompts) > self.fail_after:
            raise KeyboardInterrupt("simulated interruption")
        self.calls += len(prompts)
        return self.inner.ask(prompts)


def test_interrupted_run_resumes_and_rerun_is_free(tmp_path):
    path = tmp_path / "cache.jsonl"
    s = ProtocolSettings(states=30, seed=1)
    first = Counting(RandomResponder(4), fail_after=120)
    with pytest.raises(KeyboardInterrupt):
        evaluate_in_words(CachedBackend(first, ResponseCache(path), progress=False), s)
    cached = len(ResponseCache(path))
    assert cached == first.calls == 100
    second = Counting(RandomResponder(4))
    cb = CachedBackend(second, ResponseCache(path), progress=False)
    rep = evaluate_in_words(cb, s)
    cb.close()
    total = len(ResponseCache(path))
    assert second.calls == total - cached > 0
    third = Counting(RandomResponder(4))
    rep2 = evaluate_in_words(CachedBackend(third, ResponseCache(path), progress=False), s)
    assert third.calls == 0
    assert rep2.summary() == rep.summary() == evaluate_in_words(RandomResponder(4), s).summary()


def test_cache_drops_a_partial_last_line_and_rejects_corruption(tmp_path):
    path = tmp_path / "c.jsonl"
    c = ResponseCache(path)
    c.put("b", "m", "p1", "r1")
    c.put("b", "m", "p2", "r2")
    c.close()
    with path.open("a") as f:
        f.write('{"key": "abc", "resp')  # killed mid-write
    c = ResponseCache(path)
    assert len(c) == 2 and c.get("b", "m", "p2") == "r2" and c.get("x", "m", "p2") is None
    c.put("b", "m", "p3", "r3")
    c.close()
    assert len(ResponseCache(path)) == 3
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], "not json", lines[1]]) + "\n")
    with pytest.raises(WorldModelError, match=r"c.jsonl:2"):
        ResponseCache(path)


def test_cli_writes_results_and_reuses_its_cache(tmp_path, capsys):
    from worldmodel.cli import main

    out = tmp_path / "run"
    assert main(["llm-eval", "seating", "--backend", "true", "--states", "8", "--out", str(out), "--no-progress"]) == 0
    first = capsys.readouterr().out
    summary = json.loads((out / "results.json").read_text())
    assert summary["metrics"]["capability"]["mean"] == 1.0
    assert summary["metrics"]["compression_precision"]["n_unparseable"] == 0
    assert "| true:dfa |" in (out / "results.md").read_text()
    assert len((out / "trials.jsonl").read_text().splitlines()) == 24
    assert main(["llm-eval", "seating", "--backend", "true", "--states", "8", "--out", str(out), "--no-progress"]) == 0
    assert "asked 0 new prompts" in capsys.readouterr().out and "asked 0 new" not in first
    assert main(["llm-eval", "seating", "--backend", "openai", "--out", str(out)]) == 2
    assert "needs --base-url" in capsys.readouterr().err
    assert main(["llm-eval", "seating", "--backend", "true", "--states", "0", "--out", str(out)]) == 2


# ---------------------------------------------------------------------------
# Exact behaviour of the pieces (fast; no model)
# ---------------------------------------------------------------------------

from worldmodel.results import MetricResult  # noqa: E402
from worldmodel.worlds.seating import protocol  # noqa: E402


@pytest.mark.parametrize("field, value, message", [
    ("states", 0, "--states must be at least 1, got 0"),
    ("samples", 0, "--samples must be at least 1, got 0"),
    ("k", 0, "--k must be at least 1, got 0"),
    ("max_statements", 0, "max_statements must be at least 1, got 0"),
    ("metrics", ("capability", "recall"), "unknown metric 'recall' (known: capability, compression_precision, "
                                           "distinction_recall)"),
])
def test_settings_refuse_bad_values_with_a_clear_message(field, value, message):
    s = ProtocolSettings(**{field: value})
    with pytest.raises(WorldModelError) as err:
        s.check()
    assert str(err.value) == message
    with pytest.raises(WorldModelError):
        evaluate_in_words(RandomResponder(0), s)


def test_the_smallest_valid_settings_pass():
    ProtocolSettings(states=1, samples=1, k=1, max_statements=1, metrics=("capability",)).check()
    rep = evaluate_in_words(TrueResponder(), ProtocolSettings(states=1, samples=1, max_statements=1, seed=3))
    assert sorted(rep.metrics) == sorted(METRICS)


def test_expected_random_scores():
    assert protocol.expected_random(ProtocolSettings(n=4, samples=3)) == {
        "capability": 0.25, "compression_precision": 0.125, "distinction_recall": 0.25}


def _report(metrics, unparseable, answers):
    return protocol.SeatingReport(ProtocolSettings(states=7, metrics=tuple(metrics)), {"backend": "b", "model": "m"},
                                  metrics, unparseable, answers)


def test_summary_and_markdown_table_are_exact():
    cap = MetricResult("capability", 0.5, 0.125, 8, 2, 8, {"unparseable answer": 2})
    comp = MetricResult("compression_precision", 1.0, 0.0, 0, 7, 0, {"x": 7})
    rep = _report({"capability": cap, "compression_precision": comp},
                  {"capability": 2, "compression_precision": 0}, {"capability": 10, "compression_precision": 0})
    out = rep.summary()
    assert out["backend"] == {"backend": "b", "model": "m"}
    assert out["settings"]["states"] == 7 and out["settings"]["metrics"] == ["capability", "compression_precision"]
    assert out["metrics"]["capability"] == {"mean": 0.5, "stderr": 0.125, "n": 8, "n_failed": 2, "n_groups": 8,
                                            "failures": {"unparseable answer": 2}, "n_unparseable": 2,
                                            "n_answers": 10}
    assert out["metrics"]["compression_precision"]["n_unparseable"] == 0
    assert out["metrics"]["compression_precision"]["n_answers"] == 0
    json.dumps(out)
    table = protocol.markdown_row_table({"a:b": rep})
    assert table.splitlines() == [
        "| Model | Capability | unparseable | Compr. P | unparseable | Dist. R | unparseable |",
        "|---|---|---|---|---|---|---|",
        "| a:b | 0.50 (0.12), n=8 | 2/10 | n/a, n=0 | 0/0 | — | — |",
    ]


def test_scoring_a_capability_answer():
    t = {"truth": 2}
    assert protocol._score_capability(t, ["thinking... ANSWER: 2"], 3) == 0
    assert t["answer"] == 2 and t["score"] == 1.0
    t = {"truth": 2}
    assert protocol._score_capability(t, ["ANSWER: 3"], 3) == 0 and t["score"] == 0.0
    t = {"truth": 2, "status": "ok"}
    long = "x" * 400 + " ANSWER: 9"
    assert protocol._score_capability(t, [long], 3) == 1
    assert t["status"] == "skipped" and t["reason"] == "unparseable answer" and t["raw"] == long[-300:]
    assert t["answer"] is None and "score" not in t


def test_scoring_validity_answers():
    yes, no, bad = "ANSWER: yes", "ANSWER: no", "maybe"
    t = {"status": "ok"}
    assert protocol._score_compression(t, [yes, yes, no, no, bad, yes]) == 1
    assert t["score"] == 1.0 and t["n_scored"] == 2 and t["answers"] == [[True, True], [False, False], [None, True]]
    assert t["raw_unparseable"] == ["maybe"]
    t = {"status": "ok"}
    assert protocol._score_compression(t, [yes, no, yes, yes]) == 0
    assert t["score"] == 0.0 and "raw_unparseable" not in t
    t = {"status": "ok"}
    assert protocol._score_compression(t, [bad, yes, no, bad]) == 2
    assert t["status"] == "skipped" and t["reason"] == "all answers unparseable" and "score" not in t
    # recall: yes after the first prefix and no after the second
    t = {"status": "ok"}
    assert protocol._score_distinction(t, [yes, no, yes, yes, no, no, no, yes, bad, no]) == 1
    assert t["score"] == 0.25 and t["n_scored"] == 4
    t = {"status": "ok"}
    assert protocol._score_distinction(t, [bad, bad]) == 2
    assert t["status"] == "skipped" and t["reason"] == "all answers unparseable"
    assert t["raw_unparseable"] == ["maybe", "maybe"]
    t = {}
    raw = ["y" * 500 + "?"] * 6
    protocol._score_pairs(t, raw)
    assert t["raw_unparseable"] == [raw[0][-300:]] * 4           # at most four, each its last 300 characters


def test_skipped_trial_record():
    assert protocol._skipped(4, "why") == {"trial": 4, "status": "skipped", "key": "4", "pair": "4", "reason": "why"}


def test_only_the_chosen_metrics_are_planned_and_asked():
    class Recording(TrueResponder):
        def __init__(self):
            super().__init__()
            self.prompts = []

        def ask(self, prompts):
            self.prompts += list(prompts)
            return super().ask(prompts)

    b = Recording()
    rep = evaluate_in_words(b, ProtocolSettings(states=6, seed=4, metrics=("capability",)))
    assert list(rep.trials) == ["capability"] and list(rep.metrics) == ["capability"]
    assert rep.answers == {"capability": 6} and rep.unparseable == {"capability": 0}
    assert len(b.prompts) == 6 and all("where is" in p for p in b.prompts)
    assert rep.metrics["capability"].mean == 1.0 and rep.metrics["capability"].n == 6


def test_planned_trials_are_exact_records():
    """Each trial is drawn from its own stream, trial_seed(seed, "seating:<metric>", i), and records what it drew."""
    from worldmodel.results import trial_seed
    from worldmodel.worlds.seating.prompts import validity_prompt
    from worldmodel.worlds.seating.world import (determining_statements, two_prefixes_different_states,
                                                 two_prefixes_same_state)

    w = SeatingWorld(3)
    s = ProtocolSettings(states=3, seed=9)

    def rng(metric, i):
        return np.random.default_rng(trial_seed(9, f"seating:{metric}", i))

    sources = []
    for i in range(12):
        cap = protocol.plan_capability(w, s, i)
        stmts, seating = determining_statements(w, rng("capability", i))
        assert cap["status"] == "ok" and (cap["trial"], cap["key"], cap["pair"]) == (i, str(i), str(i))
        assert cap["statements"] == list(stmts) and cap["state"] == "".join(seating)
        assert cap["truth"] == w.seat_of(seating, cap["person"])
        assert cap["person"] in w.people and len(cap["prompts"]) == 1
        assert protocol.plan_capability(w, s, i) == cap                      # a function of (seed, trial)
        comp = protocol.plan_compression(w, s, i)
        p1, p2, q = two_prefixes_same_state(w, rng("compression", i), s.max_statements, s.max_prefix)
        assert set(comp) == {"trial", "status", "key", "pair", "state", "prefix1", "prefix2", "continuations",
                             "sources", "truth", "prompts"}
        assert (comp["prefix1"], comp["prefix2"], comp["state"]) == (list(p1), list(p2), w.state_key(q))
        assert (comp["trial"], comp["key"], comp["pair"], comp["status"]) == (i, str(i), str(i), "ok")
        assert comp["truth"] == [is_valid(w, c, q) for c in comp["continuations"]]
        assert all(len(c) == s.k for c in comp["continuations"]) and len(comp["sources"]) == s.samples
        assert comp["prompts"] == [x for c in comp["continuations"]
                                   for x in (validity_prompt(3, p1, c), validity_prompt(3, p2, c))]
        for c, src in zip(comp["continuations"], comp["sources"]):
            assert src in ("valid", "uniform") and (src == "uniform" or is_valid(w, c, q))
        sources += comp["sources"]
        dist = protocol.plan_distinction(w, s, i)
        p1, p2, q1, q2 = two_prefixes_different_states(w, rng("distinction", i), s.max_statements, s.max_prefix)
        assert (dist["prefix1"], dist["prefix2"]) == (list(p1), list(p2))
        assert (dist["trial"], dist["key"], dist["pair"]) == (i, str(i), str(i))
        assert dist["state"] == f"{w.state_key(q1)}|{w.state_key(q2)}"
        if dist["status"] == "ok":
            b = exact_boundary(w, q1, q2, s.k)
            assert set(dist) == {"trial", "status", "key", "pair", "state", "prefix1", "prefix2", "boundary_size",
                                 "suffixes", "prompts"}
            assert dist["boundary_size"] == len(b) and len(dist["suffixes"]) == min(5, len(b))
            assert all(tuple(x) in b for x in dist["suffixes"])
            assert len({tuple(x) for x in dist["suffixes"]}) == len(dist["suffixes"])    # without replacement
            assert dist["prompts"] == [y for x in dist["suffixes"]
                                       for y in (validity_prompt(3, p1, x), validity_prompt(3, p2, x))]
        else:
            assert dist["reason"] == "empty true boundary (k=1)" and not exact_boundary(w, q1, q2, s.k)
    assert 15 < sources.count("valid") < 45 and 15 < sources.count("uniform") < 45


def test_a_trial_whose_draw_fails_is_skipped_with_the_reason(monkeypatch):
    def refuse(*args, **kw):
        raise TrialSkipped("cannot draw")

    w = SeatingWorld(3)
    s = ProtocolSettings(states=2)
    for name, planner in [("determining_statements", protocol.plan_capability),
                          ("two_prefixes_same_state", protocol.plan_compression),
                          ("two_prefixes_different_states", protocol.plan_distinction)]:
        with monkeypatch.context() as m:
            m.setattr(protocol, name, refuse)
            assert planner(w, s, 1) == {"trial": 1, "status": "skipped", "key": "1", "pair": "1",
                                        "reason": "cannot draw"}


def test_report_names_its_metrics_and_backend_and_asks_nothing_when_nothing_is_planned():
    class Counting(TrueResponder):
        calls = 0

        def ask(self, prompts):
            Counting.calls += 1
            return super().ask(prompts)

    rep = evaluate_in_words(Counting(), ProtocolSettings(states=2, max_prefix=0, metrics=("compression_precision",)))
    assert Counting.calls == 0 and rep.metrics["compression_precision"].n == 0
    rep = evaluate_in_words(Counting(), ProtocolSettings(states=2, seed=1))
    assert Counting.calls == 1 and rep.backend == TrueResponder().describe() and rep.backend
    assert all(rep.metrics[m].name == m for m in METRICS)
    assert rep.summary()["backend"] == rep.backend


def test_markdown_table_skips_any_missing_metric():
    comp = MetricResult("compression_precision", 0.25, 0.5, 4, 0, 4)
    rep = _report({"compression_precision": comp}, {"compression_precision": 1}, {"compression_precision": 8})
    assert protocol.markdown_row_table({"x": rep}).splitlines()[2] == "| x | — | — | 0.25 (0.50), n=4 | 1/8 | — | — |"


def test_trials_that_cannot_be_drawn_are_skipped_with_their_reason_and_ask_nothing():
    class Recording(TrueResponder):
        asked = 0

        def ask(self, prompts):
            Recording.asked += len(prompts)
            return super().ask(prompts)

    # no prefix may have a statement: only the capability trials can be drawn
    rep = evaluate_in_words(Recording(), ProtocolSettings(states=3, max_prefix=0, seed=1))
    comp, dist = rep.metrics["compression_precision"], rep.metrics["distinction_recall"]
    assert comp.n == 0 and comp.failures == {"no two different prefixes to one state in 50 draws": 3}
    assert dist.n == 0 and dist.failures == {"no two different states in 50 draws": 3}
    for m in ("compression_precision", "distinction_recall"):
        assert all(t == protocol._skipped(i, t["reason"]) for i, t in enumerate(rep.trials[m]))
    assert rep.answers["compression_precision"] == 0 and rep.answers["distinction_recall"] == 0
    assert Recording.asked == 3 == rep.answers["capability"]


def test_a_pair_with_an_empty_bounded_boundary_is_skipped_with_its_states():
    w = SeatingWorld(3)
    s = ProtocolSettings(states=40, seed=0)
    skipped = [t for t in (protocol.plan_distinction(w, s, i) for i in range(40)) if t["status"] == "skipped"]
    assert skipped
    for t in skipped:
        q1, q2 = run(w, t["prefix1"]), run(w, t["prefix2"])
        assert t["reason"] == "empty true boundary (k=1)" and t["state"] == f"{w.state_key(q1)}|{w.state_key(q2)}"
        assert q1 != q2 and exact_boundary(w, q1, q2, 1) == [] and "prompts" not in t
        assert (t["trial"], t["key"], t["pair"]) == (int(t["key"]), t["key"], t["key"])
