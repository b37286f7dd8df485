"""The "8" benchmark harness: responders, the episode loop, the HTTP path, the probe in words, the commands."""

from __future__ import annotations

import json
import random

import pytest

from chatserver import ChatServer
from worldmodel.chat import CachedBackend, PromptByPromptBackend, ResponseCache
from worldmodel.cli import main
from worldmodel.errors import WorldModelError
from worldmodel.worlds.eight.agents import (AlwaysGoOn, LastLoopCaller, RandomCaller, TrueCaller, play, summarize,
                                            win_probability)
from worldmodel.worlds.eight.probe import PROBE_METRICS, ProbeSettings, probe_in_words
from worldmodel.worlds.eight.prompts import parse_reply, parse_reply_lenient, read_prompt
from worldmodel.worlds.eight.sampler import EightSampler, InsaneClimbSampler
from worldmodel.worlds.eight.server import EightServer, slot_seed
from worldmodel.worlds.eight.sessions import HTTPSession, LocalSession

from eighthelp import arc, world, write_task

ARCS = {"hallway-eight": arc("hallway-eight"), "stairway8": arc("stairway8")}


def local(arc_id, diff, n, seed=0, tag="t"):
    return [LocalSession(ARCS[arc_id], diff, slot_seed(seed, f"{tag}-{i}", 0)) for i in range(n)]


def test_replies_are_read_strictly_unless_lenient():
    legal = ["go_on", "turn_back", "touch:door"]
    assert parse_reply('{"reason": "same", "actions": ["go_on"]}', legal) == ["go_on"]
    assert parse_reply('```json\n{"reason": "x", "actions": ["touch:door", "turn_back"]}\n```', legal) == \
        ["touch:door", "turn_back"]
    for bad in ('{"reason": "x", "actions": ["go_on"]}.', "go_on", '{"actions": ["turn_back", "go_on"]}',
                '{"actions": ["touch:door"]}', '{"actions": ["fly"]}', '{"actions": []}', "[1]", ""):
        assert parse_reply(bad, legal) is None, bad
    assert parse_reply_lenient('{"reason": "x", "actions": ["go_on"]}.', legal) == ["go_on"]
    assert parse_reply_lenient("I would turn_back here", legal) == ["turn_back"]
    assert parse_reply_lenient("no idea", legal) == ["go_on"]


def test_win_probability_is_the_run_of_eight_chance():
    assert win_probability(7) == 0 and win_probability(8) == pytest.approx(0.5 ** 8)
    assert win_probability(9) == pytest.approx(1.5 * 0.5 ** 8)      # HHHHHHHH? or THHHHHHHH
    # the textbook recurrence for "no run of 8 heads in n tosses": Q(n) = Q(n-1) - Q(n-9) / 2**9
    q = [1.0] * 8 + [1 - 0.5 ** 8]
    for n in range(9, 121):
        q.append(q[n - 1] - q[n - 9] / 2 ** 9)
    assert win_probability(120) == pytest.approx(1 - q[120], abs=1e-12) and round(1 - q[120], 4) == 0.2025
    assert win_probability(8, p=1.0) == 1.0


@pytest.mark.parametrize("diff", ["easy", "hard", "insane"])
def test_the_judge_wins_every_episode_in_eight_rounds(diff):
    eps = play(local("stairway8", diff, 6), ARCS, TrueCaller(ARCS["stairway8"], diff), "c", "simple",
               worlds={("stairway8", diff): world("stairway8", diff)}, progress=False)
    s = summarize(eps)
    assert s["win_rate"] == 1.0 and s["rounds"] == 8 and s["resets"] == 0 and s["call_accuracy"] == 1.0
    assert s["automaton_disagrees"] == 0 and s["automaton_invalid"] == 0
    assert all(e.tokens[-1] == "door" for e in eps)


def test_baselines_and_the_round_cap():
    w = {("hallway-eight", "normal"): world("hallway-eight", "normal")}
    eps = play(local("hallway-eight", "normal", 300, tag="r"), ARCS, RandomCaller(0), "c", max_rounds=20,
               worlds=w, progress=False)
    s = summarize(eps)
    p = win_probability(20)                               # about 0.023: a coin flip per call
    assert abs(s["win_rate"] - p) < 4 * (p * (1 - p) / 300) ** 0.5 + 0.01
    assert 0.45 < s["call_accuracy"] < 0.55 and all(e.rounds <= 20 for e in eps)
    assert s["automaton_disagrees"] == 0
    go = summarize(play(local("hallway-eight", "hard", 40, tag="g"), ARCS, AlwaysGoOn(), "c", max_rounds=30,
                        progress=False))
    assert go["win_rate"] < 0.5 and go["call_accuracy"] > 0.5


def test_the_last_loop_agent_is_trapped_by_hard_mode():
    s = summarize(play(local("hallway-eight", "hard", 30, tag="l"), ARCS, LastLoopCaller(ARCS["hallway-eight"]), "c",
                       max_rounds=60, progress=False))
    assert s["call_accuracy"] < 0.9


class Garbage(PromptByPromptBackend):
    backend, model = "garbage", "g"

    def answer(self, prompt):
        return 'Sure! {"actions": ["turn_back"]} is my answer.'


def test_unparseable_replies_end_the_episode_unless_lenient():
    s = summarize(play(local("hallway-eight", "normal", 3), ARCS, Garbage(), "c", progress=False))
    assert s["unparseable"] == 3 and s["calls"] == 0 and s["wins"] == 0
    s = summarize(play(local("hallway-eight", "normal", 3), ARCS, Garbage(), "c", lenient=True, max_rounds=5,
                       progress=False))
    assert s["unparseable"] == 0 and s["calls"] == 15


def test_prompts_read_back_and_touches():
    eps = play(local("hallway-eight", "normal", 2), ARCS, TrueCaller(ARCS["hallway-eight"], "normal"), "c",
               touch=True, progress=False)
    assert all(e.won for e in eps)
    sess = local("hallway-eight", "normal", 1)[0]
    payload = sess.new()
    from worldmodel.worlds.eight.prompts import actions_offered, build_prompt, render_loop

    room = payload["room"]
    text = build_prompt("normal", [], render_loop(0, room["heading"], room["sentences"]),
                        actions_offered([t["prop"] for t in room["touch"]]))
    loops, acts = read_prompt(text)
    assert loops[0].sentences == room["sentences"] and acts[:2] == ["go_on", "turn_back"]
    assert "touch" in text and acts[2:] == [f"touch:{t['prop']}" for t in room["touch"]]
    with pytest.raises(WorldModelError):
        read_prompt("hello")


def test_the_http_path_plays_the_same_games_as_the_simulator():
    with EightServer(ARCS, seed=7) as srv:
        for diff in ("normal", "insane"):
            sids = [f"s-{diff}-{i}" for i in range(4)]
            http = [HTTPSession(srv.url, "hallway-eight", diff, sid) for sid in sids]
            loc = [LocalSession(ARCS["hallway-eight"], diff, slot_seed(7, sid, 0)) for sid in sids]
            for agent in (RandomCaller(3), TrueCaller(ARCS["hallway-eight"], diff)):
                w = {("hallway-eight", diff): world("hallway-eight", diff)}
                a = play(http, ARCS, agent, "c", max_rounds=30, worlds=w, progress=False)
                b = play(loc, ARCS, agent, "c", max_rounds=30, worlds=w, progress=False)
                assert [e.to_dict() for e in a] == [e.to_dict() for e in b]
                http = [HTTPSession(srv.url, "hallway-eight", diff, sid) for sid in sids]  # their second climbs
                loc = [LocalSession(ARCS["hallway-eight"], diff, slot_seed(7, sid, 1)) for sid in sids]
        bad = HTTPSession(srv.url, "coach8", "normal", "x")
        with pytest.raises(WorldModelError, match="started arc 'hallway-eight'"):
            bad.new()
    with pytest.raises(WorldModelError, match="cannot reach"):
        HTTPSession(srv.url, "hallway-eight", "normal", "x", timeout=1).new()


def test_the_probe_in_words():
    s = ProbeSettings(states=12, samples=3, seed=1)
    for diff in ("hard", "insane"):
        w = world("hallway-eight", diff)
        sampler = InsaneClimbSampler(w, 40) if diff == "insane" else EightSampler(w, 1, 40, climb_only=True)
        true = probe_in_words(TrueCaller(arc(), diff), w, sampler, s).summary()["metrics"]
        assert all(true[m]["mean"] == 1.0 and true[m]["n"] > 0 for m in PROBE_METRICS), true
        go = probe_in_words(AlwaysGoOn(), w, sampler, s).summary()["metrics"]
        assert go["compression_precision"]["mean"] == 1.0 and go["distinction_recall"]["mean"] == 0.0
        last = probe_in_words(LastLoopCaller(arc()), w, sampler, s).summary()["metrics"]
        assert last["compression_precision"]["mean"] < 1.0


# -- the commands ---------------------------------------------------------------------------------


@pytest.fixture
def task_file(tmp_path):
    return write_task(tmp_path, arcs=("hallway-eight", "stairway8"), difficulties=["easy"],
                      registers=["normal", "simple"], episodes=2, max_rounds=30)


def test_agent_command_true_random_and_the_games_api(task_file, tmp_path, capsys):
    out = tmp_path / "true"
    assert main(["eight-agent", str(task_file), "--agent", "true", "--out", str(out), "--no-progress"]) == 0
    res = json.loads((out / "results.json").read_text())
    assert len(res["cells"]) == 4 and all(c["win_rate"] == 1 and c["rounds"] == 8 and c["resets"] == 0
                                          for c in res["cells"])
    printed = capsys.readouterr().out
    assert "| arc | difficulty | reading | episodes | win% | rounds | resets |" in printed
    assert "judged all" in printed
    assert main(["eight-agent", str(task_file), "--agent", "random", "--arcs", "hallway-eight", "--difficulties",
                 "insane", "--registers", "simple", "--out", str(tmp_path / "rnd"), "--no-progress"]) == 0
    assert f"rules imply a win rate of {win_probability(30):.3f} within 30 rounds" in capsys.readouterr().out
    with EightServer({a: arc(a) for a in ARCS}) as srv:
        assert main(["eight-agent", str(task_file), "--agent", "last-loop", "--game-url", srv.url, "--out",
                     str(tmp_path / "http"), "--no-progress"]) == 0
    lines = (tmp_path / "http" / "episodes.jsonl").read_text().splitlines()
    assert len(lines) == 8 and all(json.loads(x)["automaton_disagrees"] == 0 for x in lines)


def test_agent_and_probe_through_an_openai_endpoint_with_faults(task_file, tmp_path, capsys):
    with ChatServer(TrueCaller(arc("stairway8"), "hard"), faults=True) as srv:
        args = ["--agent", "openai", "--base-url", srv.url, "--model", "dfa-chat", "--api-key-env", "EIGHT_NO_KEY",
                "--timeout", "0.5", "--retries", "8", "--backoff", "0.01", "--no-progress"]
        assert main(["eight-agent", str(task_file), "--arcs", "stairway8", "--difficulties", "hard", "--registers",
                     "normal", "--out", str(tmp_path / "a"), *args]) == 0
        cell = json.loads((tmp_path / "a" / "results.json").read_text())["cells"][0]
        assert cell["win_rate"] == 1 and cell["rounds"] == 8
        sent = srv.requests
        assert main(["eight-agent", str(task_file), "--arcs", "stairway8", "--difficulties", "hard", "--registers",
                     "normal", "--out", str(tmp_path / "a"), *args]) == 0
        assert srv.requests == sent                                   # a rerun answers from the cache
        hard = write_task(tmp_path, name="eight-hard", difficulty="hard", arcs=("stairway8",))
        assert main(["eight-probe", str(hard), "--states", "4", "--samples", "2", "--out", str(tmp_path / "p"),
                     *args]) == 0
    rep = json.loads((tmp_path / "p" / "results.json").read_text())
    assert rep["metrics"]["compression_precision"]["mean"] == 1.0
    assert (tmp_path / "p" / "trials.jsonl").exists()


def test_local_hf_backend_is_counted_unparseable(task_file, tmp_path):
    from worldmodel.worlds.eight.tiny_chat import make_tiny_chat_model

    folder = make_tiny_chat_model(tmp_path / "tiny", [arc("hallway-eight")], train_steps=0)
    assert main(["eight-agent", str(task_file), "--agent", "hf", "--model-path", str(folder), "--max-tokens", "4",
                 "--arcs", "hallway-eight", "--difficulties", "easy", "--registers", "normal", "--out",
                 str(tmp_path / "h"), "--no-progress"]) == 0
    cell = json.loads((tmp_path / "h" / "results.json").read_text())["cells"][0]
    assert cell["unparseable"] == 2 and cell["calls"] == 0


def test_evaluate_true_scores_one_and_detours(task_file, tmp_path):
    out = tmp_path / "ev.json"
    assert main(["evaluate", str(task_file), "--model", "true", "--metrics", "compression,distinction,next-token",
                 "--out", str(out), "--no-progress", "--data-dir", str(tmp_path / "d")]) == 0
    metrics = json.loads(out.read_text())["metrics"]
    assert all(m["mean"] == 1.0 and m["n"] > 0 for m in metrics.values()), metrics
    assert main(["detours", str(task_file), "--model", "true", "--p", "0,0.5", "--trials", "6", "--data-dir",
                 str(tmp_path / "d"), "--out", str(tmp_path / "det.json"), "--no-progress"]) == 0
    det = json.loads((tmp_path / "det.json").read_text())
    assert all(r["share"] == 1.0 for r in det["results"])


def test_data_train_evaluate_in_seconds(task_file, tmp_path):
    """The whole path on a tiny GPT-2: data, training, every metric including the probe (level, changed so far)."""
    d, ck, out = tmp_path / "d", tmp_path / "ck", tmp_path / "ev.json"
    assert main(["train", str(task_file), "--out", str(ck), "--dataset", "uniform", "--steps", "20", "--data-dir",
                 str(d), "--no-progress"]) == 0
    assert main(["evaluate", str(task_file), "--checkpoint", str(ck), "--trials", "6", "--out", str(out),
                 "--data-dir", str(d), "--no-progress"]) == 0
    metrics = json.loads(out.read_text())["metrics"]
    assert set(metrics) >= {"compression_precision", "distinction_precision", "distinction_recall", "next_token",
                            "probe"}
    assert all(0 <= m["mean"] <= 1 for m in metrics.values() if m.get("n"))


@pytest.mark.parametrize("argv,match", [
    (["eight-agent", "toy-dfa", "--agent", "true", "--out", "o"], "need a eight task"),
    (["eight-agent", "TASK", "--agent", "true", "--difficulties", "brutal", "--out", "o"], "unknown difficulty"),
    (["eight-agent", "TASK", "--agent", "true", "--registers", "loud", "--out", "o"], "reading register"),
    (["eight-agent", "TASK", "--agent", "true", "--episodes", "0", "--out", "o"], "at least 1"),
    (["eight-agent", "TASK", "--agent", "openai", "--out", "o"], "needs --base-url"),
    (["eight-agent", "TASK", "--agent", "true", "--game-url", "ftp://x", "--out", "o"], "http://"),
    (["eight-probe", "TASK", "--agent", "true", "--states", "0", "--out", "o"], "at least 1"),
])
def test_bad_input_is_one_line(argv, match, task_file, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = [str(task_file) if a == "TASK" else a for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("worldmodel: error:") and match in err and "\n" not in err
    assert not (tmp_path / "o").exists()


def test_fetch_from_a_mirror(tmp_path, monkeypatch, capsys):
    from worldmodel import datasets as D
    from worldmodel.worlds.eight.data_sets import EIGHT

    from eighthelp import FIX

    monkeypatch.setenv("WORLDMODEL_CACHE", str(tmp_path / "cache"))
    mirror = tmp_path / "mirror" / "eight"
    (mirror / "arcs").mkdir(parents=True)
    for name in ("LICENSE", "NOTICE", "arcs/hallway-eight.json", "arcs/stairway8.json"):
        (mirror / name).write_bytes((FIX / name).read_bytes())
    cut = D.DataSet("eight-cut", "eight", "test", {n: s for n, s in EIGHT.files.items() if "coach8" not in n}, ())
    rep = D.fetch(cut, mirror=tmp_path / "mirror", progress=False)
    assert rep.status == "installed" and (tmp_path / "cache" / "data" / "eight" / "arcs" / "stairway8.json").exists()
    (mirror / "NOTICE").write_text("changed")
    with pytest.raises(D.FetchError, match="checksum mismatch"):
        D.fetch(cut, mirror=tmp_path / "mirror", progress=False, force=True)
    main(["fetch", "--list"])
    assert "eight" in capsys.readouterr().out


def test_sessions_are_seeded():
    a = LocalSession(arc(), "hard", "x").new()
    b = LocalSession(arc(), "hard", "x").new()
    assert a == b and a["room"]["sentences"]
    assert random.Random("x").random() != random.Random("y").random()
