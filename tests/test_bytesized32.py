"""ByteSized32: the corpus's validity crawl on small games of our own, the data set entry, the label
reader, and the LLM judges through the loopback chat server."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
import shutil
from pathlib import Path

import pytest

from worldmodel import datasets as D
from worldmodel.chat import CachedBackend, OpenAIChatBackend, ResponseCache
from worldmodel.sandbox import Limits
from worldmodel.worlds.bytesized32 import corpus
from worldmodel.worlds.bytesized32.data_sets import BYTESIZED32, COMMIT, DATA_SETS
from worldmodel.worlds.bytesized32.judges import (agreement, alignment_prompt, compliance_prompt, judge_alignment,
                                                  judge_compliance, parse_alignment, yes_no)
from worldmodel.worlds.bytesized32.validity import check_validity, sample_actions

from chatserver import KEY, ChatServer, client

HERE = Path(__file__).parent
BOX = HERE / "fixtures" / "simulators" / "box_key.py"
FIX = HERE / "fixtures" / "bytesized32"
LIMITS = Limits(call_s=20)

# A game with actions a, b, c; BODY decides what each does; LIST what generatePossibleActions lists.
GAME = '''
class TextGame:
    def __init__(self, randomSeed):
        self.gameOver = False
        self.gameWon = False
        self.log = []
        INIT
    def getTaskDescription(self):
        return "a test"
    def calculateScore(self):
        pass
    def generatePossibleActions(self):
        LIST
        self.possibleActions = {a: [a] for a in acts}
        return self.possibleActions
    def step(self, action):
        if action not in self.possibleActions:
            return ("I don't understand that.", 0, 0, False, False)
        self.log.append(action)
        BODY
'''


def game(tmp_path, body="pass", listing="acts = ['a', 'b', 'c']", init="pass", name="g.py") -> Path:
    p = tmp_path / name
    p.write_text(GAME.replace("BODY", body).replace("LIST", listing).replace("INIT", init))
    return p


def test_a_good_game_is_runnable_and_winnable_within_three_steps():
    v = check_validity(BOX, limits=LIMITS)
    assert (v.TextGame, v.getTaskDescription, v.calculateScore, v.generatePossibleActions, v.step, v.runnable) == \
        (True,) * 6
    assert v.winnable and v.num_valid_actions == 16 and v.error_msg == ""
    # the memo: far fewer steps run than the corpus's crawl replays
    assert v.steps < v.sequences


def test_a_step_that_raises_at_depth_two_is_not_runnable(tmp_path):
    v = check_validity(game(tmp_path, "if self.log == ['a', 'b']:\n            raise ValueError('boom')"), limits=LIMITS)
    assert v.TextGame and v.generatePossibleActions and not v.step and not v.runnable
    assert v.stage == "step" and "ValueError: boom" in v.error_msg


def test_a_later_action_listing_that_raises_clears_valid_actions(tmp_path):
    listing = "acts = ['a', 'b']\n        if self.log == ['b']:\n            raise KeyError('listing')"
    v = check_validity(game(tmp_path, listing=listing), limits=LIMITS)
    assert v.TextGame and not v.generatePossibleActions and not v.runnable and v.stage == "generatePossibleActions"


def test_init_and_import_failures(tmp_path):
    v = check_validity(game(tmp_path, init="raise RuntimeError('no')"), limits=LIMITS)
    assert not v.TextGame and v.stage == "init" and "RuntimeError" in v.error_msg
    bad = tmp_path / "bad.py"
    bad.write_text("class TextGame(:\n")
    v = check_validity(bad, limits=LIMITS)
    assert not v.TextGame and v.stage == "import" and "SyntaxError" in v.error_msg


def test_a_task_description_that_raises(tmp_path):
    p = game(tmp_path).read_text().replace('return "a test"', 'raise IndexError("desc")')
    f = tmp_path / "desc.py"
    f.write_text(p)
    v = check_validity(f, limits=LIMITS)
    assert v.TextGame and not v.getTaskDescription and not v.calculateScore and v.stage == "getTaskDescription"


def test_later_actions_are_looked_up_in_the_first_listing(tmp_path):
    # "z" appears only after "a"; the corpus's replay looks it up in the first state's dict, where it is
    # unknown ("I don't understand"), so stepping it after "a" never raises
    listing = "acts = ['a'] + (['z'] if self.log == ['a'] else [])"
    v = check_validity(game(tmp_path, "if action == 'z':\n            raise ValueError('z ran')", listing),
                       limits=LIMITS)
    assert v.runnable, v.error_msg


def test_a_game_over_is_not_extended_and_a_win_is_seen(tmp_path):
    body = "if action == 'c':\n            self.gameOver = True\n            self.gameWon = True\n" \
           "        if self.log[:1] == ['c'] and len(self.log) > 1:\n            raise ValueError('played on')"
    v = check_validity(game(tmp_path, body), limits=LIMITS)
    assert v.runnable and v.winnable


def test_a_hanging_game_is_not_runnable(tmp_path):
    v = check_validity(game(tmp_path, "if self.log == ['b']:\n            while True: pass"),
                       limits=Limits(call_s=2), budget_s=60)
    assert not v.runnable and v.timed_out and v.stage == "timeout"


def test_sample_actions_follows_the_corpus():
    acts = [f"take x{i}" for i in range(30)] + ["look", "look around"] + [f"put x{i} in y" for i in range(5)]
    got = sample_actions(acts, 10, 0)
    want = random.Random(0).sample([a for a in acts if a.startswith("take")], 10) + ["look", "look around"] + \
        [a for a in acts if a.startswith("put")]
    assert got == want


# -- the corpus on disk --------------------------------------------------------------------------------


def test_names_and_reflection_rounds():
    n = corpus.parse_name("0512_action_test_10_p_gpt-4-32k_thermometer_generation_v2.py")
    assert (n.experiment, n.test, n.fold, n.prompt, n.version) == ("action", 10, "p", "thermometer", 2)
    assert n.game == "action_test_10_p_thermometer"
    assert corpus.parse_name("0512_object_test_3_n_gpt-4-32k_wash-clothes_generation.py").version is None
    chosen = corpus.table2_versions({0: Path("v0"), 1: Path("v1")})
    assert chosen == {0: Path("v0"), 1: Path("v1"), 2: Path("v1"), 3: Path("v1")}
    with pytest.raises(Exception, match="not a ByteSized32"):
        corpus.parse_name("game.py")


def test_the_label_reader_and_kappa(tmp_path):
    root = tmp_path / "corpus"
    (root / "data" / "programs").mkdir(parents=True)
    gpt4 = root / corpus.GPT4
    gpt4.mkdir(parents=True)
    for exp in ("object", "action", "distractor"):
        shutil.copy(FIX / "compliance_evaluation_action.csv", gpt4 / f"compliance_evaluation_{exp}.csv")
    shutil.copytree(FIX / "data", root / "data", dirs_exist_ok=True)
    labels = corpus.compliance_labels(root)
    assert len(labels) == 18 and labels[0]["file"].startswith("0512_action_test_1_p")
    assert corpus.test_eval(root)[1] == {"object": "Stove", "action": "use", "distractor": "1"}
    a = agreement([1, 1, 0, 0], [1, 0, 0, 0])
    assert a["agreement"] == 0.75 and a["kappa"] == pytest.approx(0.5)
    assert agreement([1, 1], [1, 1])["kappa"] is None  # undefined for constant labels


# -- the data set ----------------------------------------------------------------------------------------


def test_the_data_set_is_pinned_file_by_file():
    assert DATA_SETS == (BYTESIZED32,) and BYTESIZED32.folder == "bytesized32"
    assert len(BYTESIZED32.files) == 648 and len(BYTESIZED32.remotes) == 648
    programs = [n for n in BYTESIZED32.files if n.startswith("data/programs/")]
    assert len(programs) == 33  # the 32 reference games and one variant of dishwasher
    for r in BYTESIZED32.remotes:
        assert len(r.sha256) == 64 and r.urls == (f"https://raw.githubusercontent.com/cognitiveailab/BYTESIZED32/"
                                                  f"{COMMIT}/{r.name}",)
    for name in ("LICENSE", "data/test_eval.csv"):
        assert BYTESIZED32.files[name] == hashlib.sha256((FIX / name).read_bytes()).hexdigest()


def _cut(urls) -> D.DataSet:
    names = ("LICENSE", "data/test_eval.csv")
    remotes = tuple(dataclasses.replace(r, urls=urls(r.name)) for r in BYTESIZED32.remotes if r.name in names)
    return dataclasses.replace(BYTESIZED32, name="bytesized32-cut", files={n: BYTESIZED32.files[n] for n in names},
                               remotes=remotes)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("WORLDMODEL_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("WORLDMODEL_SHARED", raising=False)
    monkeypatch.setattr(D, "BESIDE", tmp_path / "no-shared-here")
    return tmp_path / "cache"


def test_fetch_from_a_mirror_with_folders(tmp_path, cache):
    mirror = tmp_path / "mirror" / "bytesized32"
    shutil.copytree(FIX, mirror)
    report = D.fetch(_cut(lambda n: ("http://127.0.0.1:9/unused",)), mirror=tmp_path / "mirror", progress=False)
    assert report.status == "installed"
    got = cache / "data" / "bytesized32" / "data" / "test_eval.csv"
    assert got.read_bytes() == (FIX / "data" / "test_eval.csv").read_bytes()
    (mirror / "data" / "test_eval.csv").write_text("tampered\n")
    with pytest.raises(D.FetchError, match="checksum mismatch"):
        D.fetch(_cut(lambda n: ("http://127.0.0.1:9/unused",)), mirror=tmp_path / "mirror", force=True,
                progress=False)


def test_download_with_folders(cache):
    from test_datasets import Server

    with Server() as server:
        server.files = {f"/{n}": (FIX / n).read_bytes() for n in ("LICENSE", "data/test_eval.csv")}
        report = D.fetch(_cut(lambda n: (f"{server.url}/{n}",)), progress=False)
    assert report.status == "installed"
    assert (cache / "data" / "bytesized32" / "LICENSE").read_bytes() == (FIX / "LICENSE").read_bytes()


def test_the_cli_knows_the_data_set(capsys):
    from worldmodel.cli import main

    assert main(["fetch"]) == 0
    assert "bytesized32" in capsys.readouterr().out


# -- LLM judges through the chat backends -------------------------------------------------------------


class Responder:
    """Answers like a judge would: compliance 'Yes' when the code mentions the requirement; alignment
    'no' for playthroughs whose observation says the box is closed."""

    def answer(self, prompt: str) -> str:
        if prompt.startswith("Below are short playthroughs"):
            lines = [l for l in prompt.splitlines() if l.startswith('{"idx"')]
            out = []
            for l in lines:
                d = json.loads(l)
                bad = any("closed" in s["observation"] for s in d["playthrough"])
                out.append(json.dumps({"idx": d["idx"], "evaluation": "no" if bad else "yes", "reason": "test"}))
            return "\n".join(out)
        import re

        code = prompt.split("```python")[1].split("```")[0]
        word = re.search(r"contain the object (.+?)\?", prompt).group(1)
        return "Yes, it does." if word.lower() in code.lower() else "No. It is missing."


def test_judges_through_the_loopback_chat_server(tmp_path, monkeypatch):
    monkeypatch.setenv("WM_TEST_KEY", KEY)
    with ChatServer(Responder(), faults=True) as server:
        backend = CachedBackend(client(server.url, key_env="WM_TEST_KEY"), ResponseCache(tmp_path / "cache.jsonl"),
                                progress=False)
        try:
            items = [{"specification": "# Task: unlock a door", "code": BOX.read_text(), "experiment": "object",
                      "requirement": r} for r in ("coin", "thermometer")]
            verdicts = judge_compliance(backend, items)
            assert [v.passed for v in verdicts] == [True, False]
            plays = [[("open box", "The box is now open.")], [("take key", "The box is closed, so no.")]]
            res = judge_alignment(backend, "Unlock the door.", plays, batch=2)
            assert res["verdicts"] == [True, False] and res["score"] == 0.5
            n = server.requests
            assert [v.passed for v in judge_compliance(backend, items)] == [True, False]
            assert server.requests == n  # the cache answered
        finally:
            backend.close()


def test_answer_parsing():
    assert yes_no("Yes, the stove is there") is True and yes_no("**No**.") is False and yes_no("Maybe") is None
    assert parse_alignment('noise\n{"idx": 1, "evaluation": "No"}\n{"idx": 0, "evaluation": "yes"}', 3) == \
        [True, False, None]
    assert "Independent" not in compliance_prompt("s", "c", "action", "open door")
    assert '"idx": 0' in alignment_prompt("t", [[("a", "o")]])


def test_dead_attributes_are_found_conservatively():
    from worldmodel.worlds.bytesized32.validity import dead_attributes

    src = BOX.read_text()
    assert dead_attributes(src) == {"observationStr": "", "numSteps": 0}
    reads = src.replace('        self.observationStr = ""\n        if actionStr', '        if self.observationStr == "x":\n'
                        '            self.score = 7\n        if actionStr')
    assert "observationStr" not in dead_attributes(reads)
    assert dead_attributes(src + "\nx = getattr(TextGame, 'a', None)\n") == {}
    assert dead_attributes(src.replace("self.numSteps += 1", "self.numSteps += 1\n        self.score = self.numSteps")) \
        == {"observationStr": ""}


def test_blanking_dead_attributes_changes_no_verdict(tmp_path):
    # a game whose step reads the last observation: it must not be blanked, and the crash it causes is found
    body = "if self.observationStr == 'b':\n            raise ValueError('read the old message')\n" \
           "        self.observationStr = action"
    v = check_validity(game(tmp_path, body, init="self.observationStr = ''"), limits=LIMITS)
    assert v.blanked == ["numSteps"] or "observationStr" not in v.blanked
    assert not v.runnable and "read the old message" in v.error_msg


# -- a game as a task world --------------------------------------------------------------------------------


def test_a_closed_game_is_a_task_world(tmp_path, monkeypatch):
    from worldmodel.evaluator import build_model, evaluate, settings_for
    from worldmodel.simulator import WON
    from worldmodel.tasks import load_task

    monkeypatch.setenv("WORLDMODEL_CACHE", str(tmp_path / "cache"))
    toml = tmp_path / "tasks" / "box.toml"
    toml.parent.mkdir()
    toml.write_text(f'name = "box"\ndomain = "bytesized32"\nseed = 0\n[world]\ngame = "{BOX}"\n'
                    '[data]\nn_train = 20\nn_val = 5\nn_test = 20\nmin_len = 4\nmax_len = 12\n'
                    '[sampler]\nmax_prefix = 6\n[evaluate]\nM = 10\nk = 3\ntrials = 12\nmax_sample_len = 12\n')
    task = load_task(toml)
    world = task.domain.world
    assert world.n_states == 21 and WON in world.tokens and world.stop_tokens
    splits = task.domain.generate("default")
    assert len(splits["train"]) == 20 and all(len(s) >= 1 for s in splits["train"])
    model = build_model(task, None, "true")
    summary = evaluate(task, model, ["compression", "distinction", "next-token"], settings_for(task),
                       data_dir=tmp_path / "data")
    assert {k: v["mean"] for k, v in summary["metrics"].items()} == {
        "compression_precision": 1.0, "distinction_precision": 1.0, "distinction_recall": 1.0, "next_token": 1.0}
    # a game whose crawl does not close is refused as a task world
    toml.write_text(toml.read_text().replace("[world]\n", "[world]\nmax_states = 5\n"))
    with pytest.raises(Exception, match="did not close"):
        _ = load_task(toml).domain.world
