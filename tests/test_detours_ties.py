"""Detour choices when the model's probabilities tie: exact tokens, not just rates."""

from __future__ import annotations

import numpy as np
import pytest

from worldmodel.detours import run_detours
from worldmodel.dfa import REJECT, World
from worldmodel.models import SequenceModel


class FreeWorld(World):
    """Tokens a, b, c, d are always valid; 'stop' is valid (and ends) after `n` tokens."""

    tokens = ("a", "b", "c", "d", "stop")
    stop_tokens = frozenset({"stop"})
    name = "free"

    def __init__(self, n: int, banned: frozenset[str] = frozenset()):
        self.n = n
        self.banned = banned  # tokens that are never valid

    def initial_state(self):
        return 0

    def step(self, state, token):
        if state is REJECT or state == "done":
            return REJECT
        if token == "stop":
            return "done" if state >= self.n else REJECT
        if token not in self.tokens or token in self.banned:
            return REJECT
        return state + 1


class Fixed(SequenceModel):
    """The same next-token distribution at every step until ``n`` tokens, then 'stop'."""

    tokens = FreeWorld.tokens
    name = "fixed"

    def __init__(self, probs, n: int):
        self.probs = np.asarray(probs, dtype=float)
        self.n = n

    def next_token_probs(self, prefixes):
        stop = np.eye(5)[4]
        return np.stack([stop if len(p) >= self.n else self.probs for p in prefixes])

    def score(self, *a, **k):  # pragma: no cover
        raise NotImplementedError

    def sample(self, *a, **k):  # pragma: no cover
        raise NotImplementedError


def decode(probs, kind, n=5, p=1.0, world=None, allowed=None):
    world = world or FreeWorld(n)
    res, trials = run_detours(Fixed(probs, n), world, [[]], kind, [p], max_len=n + 1, seed=0,
                              allowed=allowed or (lambda s, t, length: s < n))
    return res[0], trials[0]


@pytest.mark.parametrize("probs, want", [
    ([0.5, 0.1, 0.1, 0.3, 0.0], "b"),     # b and c tie for lowest: the first in token order
    ([0.5, 0.3, 0.1, 0.1, 0.0], "c"),     # c and d tie
    ([0.4, 0.2, 0.2, 0.2, 0.0], "b"),     # three-way tie
    ([0.1, 0.1, 0.1, 0.7, 0.0], "a"),     # the tie includes the first token
    ([0.25, 0.25, 0.25, 0.25, 0.0], "b"),  # all tie: a is the model's top (first), so b
])
def test_adversarial_ties_take_the_first_token_in_model_order(probs, want):
    r, t = decode(probs, "adversarial")
    assert t.tokens == [want] * 5 + ["stop"]
    # a detour is drawn at all 6 steps; at the last one no candidate is allowed ('stop' is due)
    assert t.success and (r.steps, r.drawn, r.replaced, r.impossible) == (6, 6, 5, 1)


def test_top_choice_ties_take_the_first_token_and_are_never_the_detour():
    # a and b tie for the top: the model's token is a; the adversarial detour is d (lowest)
    r, t = decode([0.35, 0.35, 0.2, 0.1, 0.0], "adversarial")
    assert t.tokens == ["d"] * 5 + ["stop"]
    r, t = decode([0.35, 0.35, 0.2, 0.1, 0.0], "random", p=0.0)
    assert t.tokens == ["a"] * 5 + ["stop"] and r.drawn == r.replaced == 0
    # random detours never pick the model's own token, and use every other candidate
    res, trials = run_detours(Fixed([0.35, 0.35, 0.2, 0.1, 0.0], 30), FreeWorld(30), [[]] * 20, "random", [1.0],
                              allowed=lambda s, tok, length: s < 30, max_len=31, seed=1)
    picked = {tok for tr in trials for tok in tr.tokens[:-1]}
    assert picked == {"b", "c", "d"}


def test_adversarial_ties_skip_invalid_and_disallowed_tokens():
    # b (lowest, tied with c) is never valid; c is not allowed: d is the lowest remaining
    world = FreeWorld(5, banned=frozenset({"b"}))
    r, t = decode([0.5, 0.1, 0.1, 0.1, 0.2], "adversarial", world=world,
                  allowed=lambda s, tok, length: s < 5 and tok != "c")
    assert t.tokens == ["d"] * 5 + ["stop"] and t.success


def test_adversarial_ignores_zero_probability_invalid_tokens():
    # 'stop' has probability 0 (the lowest) but is not valid before n tokens: never a candidate
    r, t = decode([0.7, 0.2, 0.06, 0.04, 0.0], "adversarial")
    assert t.tokens == ["d"] * 5 + ["stop"]


# ---------------------------------------------------------------------------
# Parsing, several kinds, the table and the JSON summary
# ---------------------------------------------------------------------------

import json  # noqa: E402

from worldmodel.detours import (DetourResult, format_results, parse_kinds, parse_ps, report,  # noqa: E402
                                run_kinds, write_results)
from worldmodel.errors import WorldModelError  # noqa: E402


def test_parse_ps_bounds_lists_and_messages():
    assert parse_ps("1, 0 ,0.25,") == [1.0, 0.0, 0.25]          # both ends of [0, 1] are allowed
    assert parse_ps([0, 1, "0.5"]) == [0.0, 1.0, 0.5]
    assert parse_ps((0.1,)) == [0.1]
    with pytest.raises(WorldModelError, match=r"^give at least one detour probability$"):
        parse_ps(" , ")
    with pytest.raises(WorldModelError, match=r"^give at least one detour probability$"):
        parse_ps([])
    with pytest.raises(WorldModelError, match=r"^detour probability -0.1 is not in \[0, 1\]$"):
        parse_ps([0.5, -0.1, 2])
    with pytest.raises(WorldModelError, match=r"^detour probabilities '0.1;0.2': give numbers separated by commas$"):
        parse_ps("0.1;0.2")


def test_parse_kinds():
    assert parse_kinds("random, adversarial") == ["random", "adversarial"]
    assert parse_kinds("adversarial,") == ["adversarial"]
    for bad in ("", "sideways", "random,sideways"):
        with pytest.raises(WorldModelError, match=r"^--kind '.*': choose from random, adversarial \(comma-separated\)$"):
            parse_kinds(bad)


def test_run_kinds_concatenates_kinds_in_order():
    model, world = Fixed([0.5, 0.1, 0.1, 0.3, 0.0], 3), FreeWorld(3)
    results, trials = run_kinds(model, world, [[], ["a"]], ["adversarial", "random"], [0.0, 1.0],
                                allowed=lambda s, t, length: s < 3, max_len=10, seed=2)
    assert [(r.kind, r.p, r.n) for r in results] == [("adversarial", 0.0, 2), ("adversarial", 1.0, 2),
                                                      ("random", 0.0, 2), ("random", 1.0, 2)]
    assert [(t.kind, t.p, t.trial) for t in trials[:4]] == [("adversarial", 0.0, 0), ("adversarial", 0.0, 1),
                                                           ("adversarial", 1.0, 0), ("adversarial", 1.0, 1)]
    assert trials[2].tokens == ["b", "b", "b", "stop"] and trials[3].tokens == ["a", "b", "b", "stop"]
    assert trials[0].tokens == ["a", "a", "a", "stop"]
    assert all(r.successes == 2 for r in results)


def test_table_and_summary_file(tmp_path, capsys):
    r = DetourResult(kind="random", p=0.05, n=8, successes=6, share=0.75, stderr=0.153093, steps=40, drawn=3,
                     replaced=2, impossible=1, failures={"too long": 2})
    assert r.replace_rate == 0.05
    assert DetourResult("random", 0.0, 1, 1, 1.0, 0.0, 0, 0, 0, 0).replace_rate == 0.0
    table = format_results([r])
    assert table.splitlines() == [
        "| kind | p | success share | stderr | n | replaced / steps |",
        "|---|---|---|---|---|---|",
        "| random | 0.05 | 0.750 | 0.153 | 8 | 2 / 40 (0.050) |",
    ]
    _, trials = run_detours(Fixed([0.5, 0.1, 0.1, 0.3, 0.0], 2), FreeWorld(2), [[]], "random", [0.0])
    out = tmp_path / "sub" / "d.json"
    report(out, [r], trials, {"task": "t"}, "HEADER")
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "HEADER" and printed[1:4] == table.splitlines() and printed[4] == f"wrote {out}"
    data = json.loads(out.read_text())
    assert data["task"] == "t" and data["results"] == [{**r.__dict__, "replace_rate": 0.05}]
    assert data["trials"][0]["tokens"] == ["a", "a", "stop"] and data["trials"][0]["reason"] == "ok"
    assert not list((tmp_path / "sub").glob("*.tmp"))
    assert out.read_text().startswith('{\n "task": "t",\n "results": [\n  {\n   "kind": "random"')   # indent 1
    write_results(out, [], [])
    assert json.loads(out.read_text()) == {"results": [], "trials": []}


def test_cached_reuses_a_file_only_when_its_settings_match(tmp_path):
    from worldmodel.detours import cached

    calls = []

    def run():
        calls.append(1)
        res, trials = run_detours(Fixed([0.5, 0.1, 0.1, 0.3, 0.0], 2), FreeWorld(2), [[]], "random", [0.0])
        return res, trials, {"extra": len(calls)}

    path = tmp_path / "d" / "e" / "cache.json"
    first = cached(path, {"seed": 1, "p": [0.0]}, run)
    assert len(calls) == 1 and first["seed"] == 1 and first["extra"] == 1 and 0 <= first["seconds"] < 600
    assert first["results"][0]["successes"] == 1 and first["trials"][0]["tokens"] == ["a", "a", "stop"]
    again = cached(path, {"seed": 1, "p": [0.0]}, run)
    assert len(calls) == 1 and again == first == json.loads(path.read_text())
    other = cached(path, {"seed": 2, "p": [0.0]}, run)            # settings differ: rerun and overwrite
    assert len(calls) == 2 and other["seed"] == 2 and other["extra"] == 2
    assert json.loads(path.read_text())["seed"] == 2


def test_run_detours_defaults_and_messages(capsys):
    class Never(Fixed):
        def next_token_probs(self, prefixes):
            return np.tile(self.probs, (len(prefixes), 1))

    model, world = Never([0.4, 0.3, 0.2, 0.1, 0.0], 0), FreeWorld(1)
    no_stop = {"allowed": lambda s, t, length: t != "stop"}
    res, trials = run_detours(model, world, [["a"]], "random", [0.5], **no_stop)
    assert len(trials[0].tokens) == 100 and trials[0].reason == "too long"          # max_len defaults to 100
    assert capsys.readouterr().err == ""                                             # no progress bar by default
    again = run_detours(model, world, [["a"]], "random", [0.5], seed=0, **no_stop)[1]
    other = run_detours(model, world, [["a"]], "random", [0.5], seed=1, **no_stop)[1]
    assert trials[0].tokens == again[0].tokens != other[0].tokens                   # seed defaults to 0
    with pytest.raises(WorldModelError, match=r"^detours need at least one start prefix$"):
        run_detours(model, world, [], "random", [0.5])
    with pytest.raises(WorldModelError, match=r"^detour kind 'sideways' is not one of random, adversarial$"):
        run_detours(model, world, [[]], "sideways", [0.5])
    with pytest.raises(WorldModelError, match=r"^detour start 1 \(stop a\) is not valid in the free world$"):
        run_detours(model, world, [["a"], ["stop", "a"]], "random", [0.5])


def test_goal_steps_and_progress(capsys):
    model, world = Fixed([0.5, 0.1, 0.1, 0.3, 0.0], 3), FreeWorld(3)
    seen = []

    def goal(seq, state):
        seen.append((list(seq), state))
        return seq[0] == "a"

    res, trials = run_detours(model, world, [["a"], ["b"]], "adversarial", [0.0], goal=goal, progress=True)
    assert seen == [(["a", "a", "a", "stop"], "done"), (["b", "a", "a", "stop"], "done")]
    assert [(t.success, t.reason, t.steps) for t in trials] == [(True, "ok", 3), (False, "goal not reached", 3)]
    assert res[0].failures == {"goal not reached": 1} and res[0].successes == 1
    assert "detours (adversarial)" in capsys.readouterr().err
