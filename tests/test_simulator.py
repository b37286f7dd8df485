"""A simulator as a World (fingerprints, the crawl, its cache) and `compare` on deliberately broken copies."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from worldmodel.compare import WalkSampler, compare, first_disagreement
from worldmodel.dfa import REJECT, is_valid
from worldmodel.errors import WorldModelError
from worldmodel.sandbox import Limits
from worldmodel.simulator import (END, LOST, WON, Crawl, SimulatorSpec, SimulatorWorld, action_token,
                                  cached_crawl, crawl)

FIXTURES = Path(__file__).parent / "fixtures" / "simulators"
BOX = FIXTURES / "box_key.py"
LIMITS = Limits(call_s=20)
FAST = {"trials": 12, "M": 10, "sample_len": 8}
CACHE = None


@pytest.fixture(scope="module", autouse=True)
def crawl_cache(tmp_path_factory):
    """One crawl cache for the module's comparisons (the reference is crawled once)."""
    global CACHE
    CACHE = tmp_path_factory.mktemp("crawls")
    yield CACHE


@pytest.fixture(scope="module")
def box_crawl():
    return crawl(BOX, limits=LIMITS)


def broken(tmp_path: Path, old: str, new: str, name: str) -> Path:
    """A copy of the box game with one deliberate change (the snippet must exist exactly once)."""
    src = BOX.read_text()
    assert src.count(old) == 1, f"snippet not found once: {old!r}"
    path = tmp_path / name
    path.write_text(src.replace(old, new))
    return path


def test_the_crawl_closes_with_exact_states(box_crawl):
    c = box_crawl
    assert c.closed and c.failure is None and not c.errors
    dfa, _ = c.dfa().minimise()
    # box open/closed x key in box/held/on the floor x coin on the floor/held/in the box, reachable ones,
    # plus won, lost and the end state
    assert dfa.n_states == 21
    assert WON in c.alphabet and LOST in c.alphabet and c.winnable is True


def test_noops_are_invalid_and_information_is_valid(box_crawl):
    world = SimulatorWorld(box_crawl)
    s0 = world.initial_state()
    valid = world.valid_tokens(s0)
    assert "open_box" in valid and "look_around" in valid and "examine_coin" in valid
    assert "close_box" not in valid          # already closed: changes nothing
    assert "take_key" not in valid           # the key is in the closed box
    assert world.step(s0, "look_around") == s0
    s1 = world.step(s0, "open_box")
    assert "take_key" in world.valid_tokens(s1) and "close_box" in world.valid_tokens(s1)
    assert world.token_text("open_box") == "open box"
    won = ["open_box", "take_key", "unlock_door_with_key"]
    s = s0
    for t in won:
        s = world.step(s, t)
    assert world.valid_tokens(s) == [WON] and world.step(s, WON) == -1 and world.valid_tokens(-1) == []
    assert world.step(s0, "no_such_action") is REJECT


def test_the_fingerprint_ignores_the_observation_and_the_step_counter(box_crawl):
    world = SimulatorWorld(box_crawl)
    s0 = world.initial_state()
    # open, close: back to the start although numSteps and the message differ
    assert world.step(world.step(s0, "open_box"), "close_box") == s0


def test_a_counter_in_the_state_is_kept_when_not_excluded(tmp_path):
    c = crawl(BOX, SimulatorSpec(exclude=("observationStr", "possibleActions")), limits=LIMITS, max_states=200)
    # numSteps now tells every history apart: the crawl stops at the bound
    assert not c.closed and c.stop.startswith("state bound")


def test_random_state_is_part_of_the_state(tmp_path):
    game = tmp_path / "dice.py"
    game.write_text(
        "import random\n"
        "class TextGame:\n"
        "    def __init__(self, randomSeed):\n"
        "        self.r = random.Random(randomSeed); self.gameOver = False; self.gameWon = False; self.face = 1\n"
        "    def generatePossibleActions(self):\n"
        "        self.possibleActions = {'roll': 1}; return self.possibleActions\n"
        "    def step(self, a):\n"
        "        self.face = self.r.randint(1, 2)\n")
    c = crawl(game, limits=LIMITS, max_states=50)
    # the generator's state moves with every roll, so the state never repeats
    assert not c.closed and c.n_states == 50


def test_crawl_round_trips_as_json_and_is_cached(tmp_path, box_crawl):
    again = Crawl.from_json(json.loads(json.dumps(box_crawl.to_json())))
    assert again.states == box_crawl.states and again.edges == box_crawl.edges
    with pytest.raises(WorldModelError):
        Crawl.from_json({"states": []})
    first = cached_crawl(BOX, cache=tmp_path, limits=LIMITS)
    files = list(tmp_path.glob("*.json"))
    assert len(files) == 1
    second = cached_crawl(BOX, cache=tmp_path, limits=LIMITS)
    assert second.states == first.states
    files[0].write_text("{not json")  # a damaged entry is redone
    assert cached_crawl(BOX, cache=tmp_path, limits=LIMITS).states == first.states


def test_bounds(box_crawl):
    c = crawl(BOX, limits=LIMITS, max_depth=2)
    assert not c.closed and c.stop.startswith("depth bound") and max(c.depth) <= 3
    c = crawl(BOX, limits=LIMITS, per_verb=1)
    assert not c.closed and "capped" in c.stop


def test_an_open_crawl_goes_on_as_an_implicit_world(box_crawl):
    c, sim = crawl(BOX, limits=LIMITS, max_states=5, keep_open=True)
    try:
        assert not c.closed
        world = SimulatorWorld(c, box_crawl.alphabet, sim)
        path = ["open_box", "take_key", "drop_key", "take_coin", "put_coin_in_box", "take_key",
                "unlock_door_with_key", WON]
        assert is_valid(world, path)
        assert c.n_states > 5  # expanded on demand
    finally:
        sim.close()


def test_spec_checks_keys():
    with pytest.raises(WorldModelError, match="unknown key 'entri'"):
        SimulatorSpec.from_dict({"entri": "X"})
    with pytest.raises(WorldModelError, match="list of strings"):
        SimulatorSpec.from_dict({"exclude": "numSteps"})
    assert SimulatorSpec.from_dict({"entry": "Game", "init": {}}).entry == "Game"
    assert action_token(" put  key in\tbox ") == "put_key_in_box"


# ---------------------------------------------------------------------------
# compare
# ---------------------------------------------------------------------------


def _means(cmp):
    return {k: round(v.mean, 6) for k, v in cmp.metrics.items()}


def test_compare_a_game_with_itself_is_one_everywhere():
    cmp = compare(BOX, BOX, limits=LIMITS, cache=CACHE, **FAST)
    assert cmp.exact and cmp.agree and cmp.diff["equivalent"]
    assert _means(cmp) == {"compression_precision": 1.0, "distinction_precision": 1.0,
                           "distinction_recall": 1.0, "next_token": 1.0}
    assert cmp.vocabulary["reference_only"] == [] and cmp.vocabulary["candidate_only"] == []
    assert cmp.diff["merged_pairs"] == 0 and cmp.diff["split_states"] == 0


def test_taking_from_a_closed_box_is_caught(tmp_path):
    cand = broken(tmp_path, '''        if not self.getProperty("isOpen"):
            return ("The " + self.name + " is closed, so things can't be removed from it.", False)
''', "", "take_from_closed.py")
    cmp = compare(BOX, cand, limits=LIMITS, cache=CACHE, **FAST)
    d = cmp.disagreement
    assert d.history == [] and d.token == "take_key" and d.valid_in == "candidate"
    assert not cmp.diff["equivalent"] and cmp.diff["n_extra"] > 0
    assert cmp.metrics["compression_precision"].mean < 1.0 or cmp.metrics["distinction_precision"].mean < 1.0


def test_an_action_that_no_longer_changes_the_state_is_caught(tmp_path):
    cand = broken(tmp_path, '''        self.properties["isOpen"] = False
        return "The " + self.name + " is now closed."''', '''        return "The " + self.name + " is now closed."''', "close_does_nothing.py")
    cmp = compare(BOX, cand, limits=LIMITS, cache=CACHE, **FAST)
    d = cmp.disagreement
    assert d.history == ["open_box"] and d.token == "close_box" and d.valid_in == "reference"
    # the candidate cannot tell "opened" from "opened and closed"... it never closes: missing words
    assert cmp.diff["n_missing"] > 0
    assert cmp.metrics["distinction_recall"].mean < 1.0


def test_a_reversed_condition_is_caught(tmp_path):
    cand = broken(tmp_path, "        if key.parentContainer is not self.agent:\n            return \"You need to hold the key.\"",
                  "        if key.parentContainer is self.agent:\n            return \"You need to hold the key.\"",
                  "reversed_unlock.py")
    cmp = compare(BOX, cand, limits=LIMITS, cache=CACHE, **FAST)
    d = cmp.disagreement
    assert d.history == [] and d.token == "unlock_door_with_key" and d.valid_in == "candidate"
    assert not cmp.diff["equivalent"]


def test_a_candidate_with_other_actions_shows_in_the_vocabulary(tmp_path):
    cand = broken(tmp_path, '''        self.addAction("eat coin", ["eat", self.coin])''',
                  '''        self.addAction("swallow coin", ["eat", self.coin])''', "renamed.py")
    cmp = compare(BOX, cand, limits=LIMITS, cache=CACHE, **FAST)
    assert cmp.vocabulary["reference_only"] == ["eat_coin"]
    assert cmp.vocabulary["candidate_only"] == ["swallow_coin"]
    assert 0 < cmp.vocabulary["overlap"] < 1
    assert cmp.disagreement.token in ("eat_coin", "swallow_coin")


def test_a_candidate_that_does_not_load_is_recorded(tmp_path):
    cand = tmp_path / "crash.py"
    cand.write_text("raise SystemExit('no')\n")
    cmp = compare(BOX, cand, limits=LIMITS, cache=CACHE, **FAST)
    assert cmp.candidate["failure"].startswith("import: SystemExit")
    assert cmp.metrics["next_token"].mean == 0.0 and cmp.metrics["distinction_recall"].mean < 0.5
    with pytest.raises(WorldModelError, match="reference simulator"):
        compare(cand, BOX, limits=LIMITS, cache=CACHE, **FAST)


def test_open_crawls_compare_on_the_live_simulators(tmp_path):
    cand = broken(tmp_path, '''        if not self.getProperty("isOpen"):
            return ("The " + self.name + " is closed, so things can't be removed from it.", False)
''', "", "take_from_closed.py")
    same = compare(BOX, BOX, limits=LIMITS, **FAST, max_states=8)
    assert not same.exact and same.disagreement is None  # the product was exhausted on demand
    assert all(v.mean == 1.0 for v in same.metrics.values())
    cmp = compare(BOX, cand, limits=LIMITS, **FAST, max_states=8)
    assert not cmp.exact and cmp.disagreement.token == "take_key" and cmp.diff is None


def test_walk_sampler_pairs(box_crawl):
    world = SimulatorWorld(box_crawl)
    s = WalkSampler(world, walks=200, max_len=8, seed=1)
    rng = np.random.default_rng(0)
    p = s.compression_pair(rng)
    assert p.state1 == p.state2 and p.prefix1 != p.prefix2
    q = s.distinction_pair(rng)
    assert q.state1 != q.state2 and len(q.prefix1) == len(q.prefix2)
    assert first_disagreement(world, world) is None


def test_an_open_comparison_without_metrics_stays_in_the_crawl(tmp_path):
    cand = broken(tmp_path, '''        if not self.getProperty("isOpen"):
            return ("The " + self.name + " is closed, so things can't be removed from it.", False)
''', "", "take_from_closed.py")
    cmp = compare(BOX, cand, limits=LIMITS, max_states=8, open_metrics=False)
    assert not cmp.exact and cmp.metrics == {} and cmp.disagreement.token == "take_key"
    same = compare(BOX, BOX, limits=LIMITS, max_states=8, open_metrics=False)
    assert same.disagreement == "bound"  # agreement as far as both were crawled, no further claim


def test_a_reference_that_allows_no_action_is_compared_without_a_next_token_score(tmp_path):
    """A game whose start allows nothing has no walk to predict: next-token is recorded as not run."""
    ref = broken(tmp_path, '''    def generatePossibleActions(self):
        self.possibleActions = {}''', '''    def generatePossibleActions(self):
        self.possibleActions = {}
        return self.possibleActions''', "no_actions.py")
    cmp = compare(ref, ref, limits=LIMITS, cache=CACHE, **FAST)
    nt = cmp.metrics["next_token"]
    assert nt.n == 0 and nt.n_failed == FAST["trials"] and "no action" in next(iter(nt.failures))
