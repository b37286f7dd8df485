"""TextWorld through `worldmodel`: generic detours, the agent loop and the probe in words, with every backend kind.

Fast and offline: the shipped seed-1 game (its automaton cached beside it), a small
copy of the task (fewer sequences), the shared fault-injecting chat server on
127.0.0.1 and a tiny untrained local chat model.
"""

import json
from pathlib import Path

import pytest

from chatserver import ChatServer
from worldmodel.cli import main
from worldmodel.tasks import load_task
from worldmodel.worlds.textworld.llm import PROBE_METRICS, TrueAgent

REPO = Path(__file__).resolve().parent.parent
GAMES = REPO / "tests" / "fixtures" / "textworld"
GAME = "tw-simple-dense-detailed-train-seed1"


@pytest.fixture(scope="module")
def task_file(tmp_path_factory):
    """textworld-simple with small data splits and an absolute games_dir (the shipped game)."""
    text = (REPO / "tasks" / "textworld-simple.toml").read_text()
    text = text.replace('games_dir = "tests/fixtures/textworld"', f'games_dir = "{GAMES}"')
    for key, n in (("n_train", 40), ("n_val", 10), ("n_test", 30)):
        text = text.replace(f"{key} = ", f"{key} = {n} #", 1)
    path = tmp_path_factory.mktemp("task") / "tw-small.toml"
    path.write_text(text.replace('name = "textworld-simple"', 'name = "tw-small"'))
    return path


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("twdata")


@pytest.fixture(scope="module")
def world(task_file):
    return load_task(task_file).world


def test_generic_detours_reference_player_always_wins(task_file, data_dir, tmp_path, capsys):
    out = tmp_path / "det.json"
    assert main(["detours", str(task_file), "--model", "true", "--kind", "random,adversarial", "--p", "0,0.5,1",
                 "--trials", "6", "--data-dir", str(data_dir), "--out", str(out), "--no-progress"]) == 0
    data = json.loads(out.read_text())
    assert data["success"] == "the game won (the food on the stove)"
    assert data["n_starts"] == 6 and len(data["trials"]) == 36
    assert len(data["results"]) == 6 and all(r["share"] == 1.0 and r["n"] == 6 for r in data["results"])
    world = load_task(task_file).world
    for t in data["trials"]:  # every game starts with a held-out opening command and ends with the win
        assert t["tokens"][-1] in world.win_tokens and len(t["tokens"]) <= 40
    at_one = [r for r in data["results"] if r["p"] == 1.0]
    assert all(r["replaced"] > 0 for r in at_one)  # detours really happened, and the planner recovered
    assert "| adversarial | 1 |" in capsys.readouterr().out


def test_generic_detours_on_a_checkpoint_count_failures(task_file, data_dir, tmp_path):
    from worldmodel.models import HFModel, Vocabulary

    task = load_task(task_file)
    world = task.world
    ckpt = tmp_path / "untrained"
    HFModel.untrained(Vocabulary(world.tokens, world.name), task.section("model"), seed=0).save_pretrained(ckpt)
    out = tmp_path / "det.json"
    assert main(["detours", str(task_file), "--checkpoint", str(ckpt), "--p", "0,0.5", "--trials", "5",
                 "--data-dir", str(data_dir), "--out", str(out), "--no-progress"]) == 0
    data = json.loads(out.read_text())
    assert [r["n"] for r in data["results"]] == [5, 5]
    for r in data["results"]:  # an untrained network does not win; every loss has its reason counted
        assert r["successes"] + sum(r["failures"].values()) == 5
    assert data["results"][0]["share"] < 1.0


def test_probe_command_true_random_and_openai_with_faults(task_file, tmp_path, capsys, world):
    def probe(out, *extra):
        return main(["textworld-probe", str(task_file), "--states", "6", "--seed", "3", "--out", str(out),
                     "--no-progress", *extra])

    assert probe(tmp_path / "true", "--backend", "true") == 0
    true = json.loads((tmp_path / "true" / "results.json").read_text())
    assert all(true["metrics"][m]["mean"] == 1.0 and true["metrics"][m]["n"] > 0 for m in PROBE_METRICS)
    assert "| true world model |" in (tmp_path / "true" / "results.md").read_text()
    assert probe(tmp_path / "random", "--backend", "random") == 0
    rnd = json.loads((tmp_path / "random" / "results.json").read_text())
    assert rnd["metrics"]["compression_precision"]["mean"] < 1.0
    capsys.readouterr()
    with ChatServer(TrueAgent(world), faults=True) as srv:
        args = ("--backend", "openai", "--base-url", srv.url, "--model", "dfa-chat", "--api-key-env", "TW_NO_KEY",
                "--timeout", "0.5", "--retries", "8", "--backoff", "0.01", "--concurrency", "8")
        assert probe(tmp_path / "http", *args) == 0
        sent = srv.requests
        assert sum(v for k, v in srv.injected.items() if k not in ("none", "slow-ok")) > 0
        got = json.loads((tmp_path / "http" / "results.json").read_text())
        assert got["metrics"] == true["metrics"]  # the faults change nothing
        assert "asked 0 new" not in capsys.readouterr().out
        assert probe(tmp_path / "http", *args) == 0  # a rerun answers from the cache
        assert srv.requests == sent and "asked 0 new prompts" in capsys.readouterr().out
    lines = (tmp_path / "http" / "trials.jsonl").read_text().splitlines()
    assert len(lines) == 12 and "prompts" not in json.loads(lines[0])


def test_agent_command_true_random_and_openai_with_faults(task_file, tmp_path, capsys, world):
    pytest.importorskip("textworld")

    def agent(out, *extra):
        return main(["textworld-agent", str(task_file), "--out", str(out), "--no-progress", *extra])

    assert agent(tmp_path / "true", "--backend", "true") == 0
    true = json.loads((tmp_path / "true" / "results.json").read_text())
    assert true["overall"] == {"games": 1, "normalized_score": 1.0, "steps": 9.0, "win_rate": 1.0, "unparseable": 0}
    assert list(true["by_configuration"]) == ["dense-detailed (train)"]
    assert agent(tmp_path / "random", "--backend", "random", "--max-steps", "7") == 0
    rnd = json.loads((tmp_path / "random" / "results.json").read_text())["games"][0]
    assert rnd["steps"] <= 7 and rnd["unparseable"] == 0 and not rnd["won"]
    capsys.readouterr()
    with ChatServer(TrueAgent(world), faults=True) as srv:
        args = ("--backend", "openai", "--base-url", srv.url, "--model", "dfa-chat", "--api-key-env", "TW_NO_KEY",
                "--timeout", "0.5", "--retries", "8", "--backoff", "0.01")
        assert agent(tmp_path / "http", *args) == 0
        sent = srv.requests
        got = json.loads((tmp_path / "http" / "results.json").read_text())
        assert got["overall"] == true["overall"] and got["games"][0]["score"] == 8
        assert agent(tmp_path / "http", *args) == 0
        assert srv.requests == sent and "asked 0 new prompts" in capsys.readouterr().out.splitlines()[-1]
    rec = json.loads((tmp_path / "http" / "games.jsonl").read_text())
    assert rec["won"] and rec["commands"][-1] == "put milk on stove"


def test_local_hf_backend_is_counted_unparseable_not_guessed(task_file, tmp_path, world):
    from worldmodel.worlds.textworld.tiny_chat import make_tiny_chat_model

    folder = make_tiny_chat_model(tmp_path / "tiny", [world], seed=0, train_steps=0, n_positions=768)
    assert main(["textworld-probe", str(task_file), "--backend", "hf", "--model-path", str(folder), "--max-tokens",
                 "4", "--states", "2", "--samples", "2", "--out", str(tmp_path / "p"), "--no-progress"]) == 0
    rep = json.loads((tmp_path / "p" / "results.json").read_text())
    for m in PROBE_METRICS:  # a random network never writes "ANSWER: yes": all counted, none scored
        r = rep["metrics"][m]
        assert r["n_answers"] > 0 and r["n_unparseable"] == r["n_answers"] and r["n"] == 0
    assert rep["backend"]["backend"] == "hf"


@pytest.mark.parametrize("argv,match", [
    (["textworld-agent", "nav-grid-tiny", "--backend", "true", "--out", "o"], "need a textworld task"),
    (["textworld-agent", "TASK", "--backend", "true", "--games", "nope", "--out", "o"], "has no game 'nope'"),
    (["textworld-agent", "TASK", "--backend", "true", "--max-steps", "0", "--out", "o"], "max-steps"),
    (["textworld-probe", "TASK", "--backend", "openai", "--out", "o"], "needs --base-url"),
    (["textworld-probe", "TASK", "--backend", "hf", "--out", "o"], "needs --model-path"),
    (["textworld-probe", "TASK", "--backend", "true", "--states", "0", "--out", "o"], "at least 1"),
    (["detours", "TASK", "--out", "o"], "exactly one"),
    (["detours", "seating-tiny", "--model", "true", "--out", "o"], "no detour test"),
])
def test_bad_input_is_one_line(argv, match, task_file, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = [str(task_file) if a == "TASK" else a for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("worldmodel: error:") and match in err and "\n" not in err
    assert not (tmp_path / "o").exists()


def test_two_preparers_of_one_game_take_turns(tmp_path, monkeypatch):
    import threading
    import time

    from worldmodel.worlds.textworld import games

    made = []

    def fake_make(spec, z8):  # stands in for tw-make: slow, and writes the game whole
        made.append(spec.name)
        time.sleep(0.3)
        z8.parent.mkdir(parents=True)
        z8.write_bytes(b"z8")
        z8.with_suffix(".json").write_text("{}")
        return z8

    monkeypatch.setattr(games, "_make", fake_make)
    spec = games.GameSpec("sparse", "none", "test", 7)
    got = []
    threads = [threading.Thread(target=lambda: got.append(games.ensure_game(spec, tmp_path))) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert made == [spec.name] and len(set(got)) == 1 and got[0].read_bytes() == b"z8"
