"""The "8" world: arcs read back, the automaton's sizes and rules, the simulator against the automaton."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from worldmodel.dfa import REJECT, equivalent, is_valid, random_walk, run
from worldmodel.errors import WorldModelError
from worldmodel.worlds.eight.arcs import load_arc, parse_arc
from worldmodel.worlds.eight.automaton import Structure, expand
from worldmodel.worlds.eight.data import generate, judge_transcript
from worldmodel.worlds.eight.game import Game
from worldmodel.worlds.eight.rules import CALLS, DOOR, RESET, difficulty
from worldmodel.worlds.eight.world import tokens_of, transcript_verdicts

from eighthelp import ARCS, arc, world

DIFFS = ("easy", "normal", "hard", "insane")


# -- arcs ---------------------------------------------------------------------------------------


def test_every_sentence_reads_back_to_its_meaning():
    for arc_id in ("hallway-eight", "stairway8"):
        a = arc(arc_id)
        for p in a.props:
            for v in p.values:
                for s in p.pools[v]:
                    for sign in a.signs:
                        assert a.meaning(s.replace("{SIGN}", sign)) == a.token(p.name, v)
        assert a.meaning("Something no pool says.") is None
    assert len(arc("stairway8").props) == 10 and arc("hallway-eight").late == ("camera", "floor")


def test_a_malformed_arc_file_is_one_error(tmp_path):
    data = json.loads((ARCS / "hallway-eight.json").read_text())
    data["anchor_order"] = data["anchor_order"][:-1]
    with pytest.raises(WorldModelError, match="anchor_order"):
        parse_arc(data, "x.json")
    data = json.loads((ARCS / "hallway-eight.json").read_text())
    data["properties"]["sound"]["anomalies"]["drip"] = list(data["properties"]["lighting"]["values"]["steady"])
    with pytest.raises(WorldModelError, match="says two things"):
        parse_arc(data, "x.json")
    (tmp_path / "coach8.json").write_text("{not json")
    with pytest.raises(WorldModelError, match="not valid JSON"):
        load_arc(tmp_path, "coach8")
    with pytest.raises(WorldModelError, match="no arc file"):
        load_arc(tmp_path, "stairway8")


# -- the automaton --------------------------------------------------------------------------------


def test_sizes_and_which_difficulties_share_an_automaton():
    sizes = {d: world("hallway-eight", d).n_states for d in ("easy", "normal", "hard")}
    assert sizes == {"easy": 443, "normal": 443, "hard": 1356}
    for d in ("easy", "normal", "hard"):
        raw = world("hallway-eight", d).raw_sizes
        assert raw["live"] == raw["reachable"]                       # no dead state is built
        assert world("hallway-eight", d).is_minimal()
    assert equivalent(world("hallway-eight", "easy"), world("hallway-eight", "normal"))  # normal's hold only removes
    assert not equivalent(world("hallway-eight", "normal"), world("hallway-eight", "hard"))
    assert world("stairway8", "hard").n_states == 1589


@pytest.mark.slow
def test_canonical_holds_and_pruning_keep_the_language():
    """Holds in canonical form, and the early liveness check, change the states built, never the language."""
    a = arc()
    for d in ("easy", "normal", "hard"):
        loose = Structure(a, difficulty(d), prune=False).enumerate()
        assert loose.n_live < loose.n_reachable  # without the check, dead ends are built and then trimmed
        exact = Structure(a, difficulty(d)).enumerate()
        assert exact.n_live == exact.n_reachable
        m = [expand(r, tokens_of(a)).minimise()[0] for r in (loose, exact)]
        assert equivalent(m[0], m[1]) and equivalent(m[1], world("hallway-eight", d))


def _loop(a, values: dict[str, str]) -> list[str]:
    return [a.token(p, values[p]) for p in a.names if p in values]


def test_the_rules_the_automaton_enforces():
    a = arc()
    w = world("hallway-eight", "normal")
    base = {p.name: p.baseline for p in a.props}
    clean = _loop(a, {k: base[k] for k in ("lighting", "sound", "poster", "figure")})
    assert is_valid(w, clean + ["go_on"])
    assert not is_valid(w, clean[:3] + ["go_on"])                       # fewer than 4 details
    assert not is_valid(w, [clean[1], clean[0]])                          # not in canonical order
    assert not is_valid(w, _loop(a, base))                                # 9 details: more than 6
    assert run(w, clean + ["turn_back"]) == w.reset_state                 # a wrong call ...
    assert w.valid_tokens(run(w, clean + ["turn_back"])) == [RESET]      # ... only reset follows
    assert run(w, clean + ["turn_back", RESET]) == w.initial_state()
    climb = (clean + ["go_on"]) * 8
    assert w.valid_tokens(run(w, climb)) == [DOOR] and w.valid_tokens(run(w, climb + [DOOR])) == []
    one = dict(list(base.items())[:4], lighting="dim")
    two = dict(one, sound="drip")
    assert w.verdict(run(w, _loop(a, one)), "turn_back") is True and w.verdict(run(w, _loop(a, one)), "go_on") is False
    assert not is_valid(w, _loop(a, two))                                 # never two changes in normal
    h = world("hallway-eight", "hard")
    assert not is_valid(h, _loop(a, two))                                 # in hard, not before level 4 ...
    assert is_valid(h, (clean + ["go_on"]) * 4 + _loop(a, two) + ["turn_back"])   # ... from level 4 on
    late = _loop(a, {"lighting": "steady", "sound": "vent", "camera": "away", "floor": "dry"})
    assert is_valid(w, late + ["go_on"])
    assert not is_valid(h, late)                                          # hard always holds one of them back
    camera_first = _loop(a, {"lighting": "steady", "sound": "vent", "poster": "travel", "camera": "away"})
    assert is_valid(h, camera_first + ["go_on"])                          # the other one is free
    assert h.level(run(h, (clean + ["go_on"]) * 3)) == 3 and h.changed(run(h, _loop(a, one)[:1]))


def test_insane_remembers_the_climbs_baseline():
    a = arc()
    w = world("hallway-eight", "insane")
    base = {p.name: p.baseline for p in a.props}
    first = _loop(a, {"lighting": "steady", "sound": "drip", "poster": "travel", "figure": "distant"})
    assert is_valid(w, first + ["go_on"])                                 # drip is a possible baseline
    assert not is_valid(w, _loop(a, dict(list(base.items())[:3], figure="closer")))  # a first appearance is calm
    again = _loop(a, {"lighting": "steady", "sound": "vent", "poster": "travel", "figure": "distant"})
    s = run(w, first + ["go_on"] + again)
    assert w.verdict(s, "turn_back") is True                              # vent is the change in this climb
    s = run(w, first + ["go_on"] + first)
    assert w.verdict(s, "go_on") is True
    unseen_changed = _loop(a, {"lighting": "steady", "sound": "vent", "poster": "travel", "camera": "atyou"})
    assert not is_valid(w, again + ["go_on"] + unseen_changed)           # nothing changes before it was seen
    assert is_valid(world("hallway-eight", "normal"), again + ["go_on"] + unseen_changed)


# -- the simulator against the automaton ----------------------------------------------------------


def _play(game: Game, policy, rng, max_loops=40) -> tuple[list[str], list[bool]]:
    toks, truth = [], []
    game.new()
    for _ in range(max_loops):
        room = game.room
        toks += game.tokens()
        call = policy(room, rng)
        toks.append(call)
        res = game.act(call)
        truth.append(res["correct"])
        assert res["correct"] == ((call == "turn_back") == room.has_anomaly)
        if not res["correct"]:
            toks.append(RESET)
        if res["won"]:
            toks.append(DOOR)
            break
    return toks, truth


POLICIES = (lambda room, rng: rng.choice(CALLS), lambda room, rng: "turn_back" if room.has_anomaly else "go_on",
            lambda room, rng: ("turn_back" if room.has_anomaly else "go_on") if rng.random() < 0.85 else rng.choice(CALLS))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), d=st.sampled_from(DIFFS), a=st.sampled_from(("hallway-eight", "stairway8")),
       p=st.integers(0, 2))
def test_every_simulated_transcript_is_accepted_and_judged_alike(seed, d, a, p):
    """The game generator's transcripts are valid, and every call is judged as the simulator judged it."""
    w = world(a, d)
    for i in range(4):
        toks, truth = _play(Game(arc(a), d, random.Random(f"{seed}:{i}")), POLICIES[p], random.Random(seed + i))
        assert is_valid(w, toks)
        assert transcript_verdicts(w, toks) == truth


def _judge(a, loop_tokens, base) -> str:
    return "turn_back" if any(base.get(a.split(t)[0], a.split(t)[1]) != a.split(t)[1] for t in loop_tokens) else "go_on"


@pytest.mark.parametrize("d", DIFFS)
def test_every_call_the_automaton_marks_correct_is_the_rules_call(d):
    """On uniform walks of the automaton, a call is correct exactly when the loop shows a change from the baseline."""
    a, w = arc(), world("hallway-eight", d)
    rng = np.random.default_rng(0)
    checked = 0
    for _ in range(150):
        s, loop, base = w.initial_state(), [], {}
        for t in random_walk(w, w.initial_state(), 60, rng):
            if t in CALLS:
                if d != "insane":
                    base = {p.name: p.baseline for p in a.props}
                assert w.verdict(s, t) == (t == _judge(a, loop, base))
                checked += 1
                if d == "insane":
                    for x in loop:
                        base.setdefault(*a.split(x))
                loop = []
            elif t == RESET:
                base = {}
            elif t != DOOR:
                p, v = a.split(t)
                if d == "insane" and p not in base:
                    assert v in a.safe_baselines(p)
                loop.append(t)
            s = w.step(s, t)
            assert s is not REJECT
    assert checked > 500


def test_datasets_are_valid_and_the_judge_never_errs():
    w = world("hallway-eight", "hard")
    data = generate(w, arc(), "hard", "judge", {"train": 30, "val": 5, "test": 5}, seed=1, max_len=64)
    for seq in data["train"]:
        assert is_valid(w, seq) and seq[-1] == DOOR and RESET not in seq
        assert sum(t in CALLS for t in seq) == 8
    uni = generate(w, arc(), "hard", "uniform", {"train": 30, "val": 5, "test": 5}, seed=1, max_len=64)
    assert all(is_valid(w, s) for s in uni["train"]) and any(RESET in s for s in uni["train"])
    assert uni == generate(w, arc(), "hard", "uniform", {"train": 30, "val": 5, "test": 5}, seed=1, max_len=64)
    assert judge_transcript(Game(arc(), "insane", random.Random(3)))[-1] == DOOR


def test_the_odds_follow_the_game():
    """The simulator's anomaly rate per level follows the difficulty's ramp (a statistical check)."""
    g = Game(arc(), "normal", random.Random(5))
    counts = {}
    for _ in range(3000):
        g.new()
        r = g.room
        counts.setdefault(0, []).append(r.has_anomaly)
    assert abs(np.mean(counts[0]) - difficulty("normal").anomaly_chance(0)) < 0.015
    g = Game(arc(), "hard", random.Random(6))
    holds = [len(g.held) for _ in range(500) if g.new()]
    assert set(holds) == {1, 2}
