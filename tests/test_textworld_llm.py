"""TextWorld LLM agents: the world-model probe in words and the agent loop, end to end over HTTP with faults."""

from pathlib import Path

import pytest

from chatserver import ChatServer, client  # the shared fault-injecting chat server (tests/chatserver.py)
from worldmodel.chat import CachedBackend, ResponseCache
from worldmodel.worlds.textworld.house import load_house
from worldmodel.worlds.textworld.llm import (PROBE_METRICS, ProbeSettings, RandomAgent, TrueAgent, agent_prompt,
                                             parse_command, parse_yes_no, play, probe_in_words, read_agent_prompt,
                                             read_validity_prompt, validity_prompt)
from worldmodel.worlds.textworld.world import TextWorldWorld

GAME = Path(__file__).parent / "fixtures" / "textworld" / "tw-simple-dense-detailed-train-seed1" / "game.json"
SETTINGS = ProbeSettings(states=6, seed=2)


@pytest.fixture(scope="module")
def world():
    return TextWorldWorld(load_house(GAME, build=False), name="tw-seed1")


def test_prompts_read_back_and_answers_are_read_strictly(world):
    p = validity_prompt(world, ["open_antique_trunk"], ["take_old_key_from_antique_trunk"])
    assert read_validity_prompt(p) == (["open_antique_trunk"], ["take_old_key_from_antique_trunk"])
    assert "You are in the bedroom." in p and "The wooden door is locked." in p
    a = agent_prompt("Find the milk.", ["look"], "You are in a bedroom.", ["go east", "look"])
    assert read_agent_prompt(a) == (["look"], ["go east", "look"])
    assert parse_yes_no("I think so. ANSWER: **Yes**.") is True and parse_yes_no("ANSWER: maybe") is None
    assert parse_yes_no("yes") is None
    assert parse_command("ANSWER: Go East", ["go east", "look"]) == "go east"
    assert parse_command("ANSWER: go east now", ["go east"]) is None and parse_command("go east", ["go east"]) is None
    truth = TrueAgent(world)
    assert truth.answer(p).endswith("yes")
    assert truth.answer(validity_prompt(world, [], ["go_east"])).endswith("no")


def test_true_and_random_rows(world):
    rep = probe_in_words(TrueAgent(world), world, SETTINGS)
    assert all(rep.metrics[m].mean == 1.0 and rep.metrics[m].n > 0 for m in PROBE_METRICS)
    rnd = probe_in_words(RandomAgent(0), world, SETTINGS)
    assert rnd.metrics["compression_precision"].mean < 1.0
    assert sum(rnd.unparseable.values()) == 0


def test_probe_over_http_with_faults_matches_fault_free_and_caches(world, tmp_path):
    with ChatServer() as clean:
        clean.truth = TrueAgent(world)
        b = CachedBackend(client(clean.url), ResponseCache(tmp_path / "clean.jsonl"), progress=False)
        want = probe_in_words(b, world, SETTINGS)
        b.close()
    with ChatServer(faults=True) as faulty:
        faulty.truth = TrueAgent(world)
        inner = client(faulty.url)
        b = CachedBackend(inner, ResponseCache(tmp_path / "faulty.jsonl"), progress=False)
        got = probe_in_words(b, world, SETTINGS)
        b.close()
        sent = faulty.requests
        assert sum(v for k, v in faulty.injected.items() if k not in ("none", "slow-ok")) > 0
        assert got.summary()["metrics"] == want.summary()["metrics"]
        assert all(got.metrics[m].mean == 1.0 for m in PROBE_METRICS)
        b2 = CachedBackend(client(faulty.url), ResponseCache(tmp_path / "faulty.jsonl"), progress=False)
        again = probe_in_words(b2, world, SETTINGS)
        b2.close()
        assert faulty.requests == sent and b2.asked == 0 and again.summary() == got.summary()


def test_agent_loop_over_http_with_faults_wins_and_caches(world, tmp_path):
    pytest.importorskip("textworld")
    games = {"seed1": GAME.with_suffix(".z8")}
    direct = play(TrueAgent(world), games, progress=False)
    assert direct[0]["won"] and direct[0]["score"] == direct[0]["max_score"] == 8 and direct[0]["steps"] == 9
    with ChatServer(faults=True) as faulty:
        faulty.truth = TrueAgent(world)
        b = CachedBackend(client(faulty.url), ResponseCache(tmp_path / "play.jsonl"), progress=False)
        got = play(b, games, progress=False)
        b.close()
        sent = faulty.requests
        assert got == direct
        b2 = CachedBackend(client(faulty.url), ResponseCache(tmp_path / "play.jsonl"), progress=False)
        assert play(b2, games, progress=False) == direct
        b2.close()
        assert faulty.requests == sent and b2.asked == 0
    rnd = play(RandomAgent(0), games, max_steps=10, progress=False)
    assert rnd[0]["steps"] <= 10 and rnd[0]["unparseable"] == 0
