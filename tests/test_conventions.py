"""Conventions shared with the paper's code: keep the top token, next-token positions and
pooling, acceptance rules that never allow probability 0, the dataset in the run header."""

from pathlib import Path

import numpy as np
import pytest

from worldmodel.acceptance import Epsilon, TopK, TopP
from worldmodel.cli import main
from worldmodel.dfa import ExplicitDFA, random_dfa
from worldmodel.metrics import Settings, compression, distinction, next_token
from worldmodel.models import HFModel, SequenceModel, TrueWorldModel, Vocabulary
from worldmodel.results import pooled
from worldmodel.sampling import ExplicitDFASampler
from worldmodel.tasks import TASKS_DIR, load_task


@pytest.mark.parametrize("rule", [Epsilon(0.01), TopK(1), TopK(3), TopP(0.5), TopP(0.9)], ids=str)
def test_true_world_model_scores_exactly_one_under_every_rule(rule):
    task = load_task("nav-grid-tiny")
    world, sampler = task.world, task.domain.sampler()
    s = Settings(acceptance=rule, trials=24, M=8, k=3, max_sample_len=12, batch_trials=8)
    model = TrueWorldModel(world)
    assert compression(world, model, sampler, s, progress=False).mean == 1.0
    d = distinction(world, model, sampler, s, progress=False)
    assert d["distinction_precision"].mean == 1.0 and d["distinction_recall"].mean == 1.0
    # the toy world too (up to 3 valid tokens per state)
    toy = random_dfa(8, 4, 3)
    tsampler = ExplicitDFASampler(toy)
    assert compression(toy, TrueWorldModel(toy), tsampler, s, progress=False).mean == 1.0
    d = distinction(toy, TrueWorldModel(toy), tsampler, s, progress=False)
    assert d["distinction_precision"].mean == 1.0 and d["distinction_recall"].mean == 1.0


def test_keep_top_is_the_default_and_is_recorded():
    """An untrained network over 300 tokens puts no token above ε = 0.01."""
    world = random_dfa(6, 300, 1)
    model = HFModel.untrained(Vocabulary(world.tokens), dict(n_layer=1, n_embd=16, n_head=2, n_positions=64), seed=0)
    assert model.next_token_probs([("t0",)]).max() < 0.01
    sampler = ExplicitDFASampler(world, max_len=4)
    s = Settings(trials=8, M=5, k=2, max_sample_len=6, batch_trials=8)
    comp = compression(world, model, sampler, s, progress=False)
    assert comp.mean == 0.0  # the kept top token is refused after the other prefix, as in the authors' code
    # every sample of every trial needed the fallback, and the trials say so
    from worldmodel.results import TrialLog

    log = TrialLog(None, {})
    compression(world, model, sampler, s, log=log, progress=False)
    assert [t["kept_top"] for t in log.trials()] == [5] * 8
    off = Settings(trials=8, M=5, k=2, max_sample_len=6, batch_trials=8, keep_top=False)
    log = TrialLog(None, {})
    assert compression(world, model, sampler, off, log=log, progress=False).mean == 1.0  # empty samples
    assert all(t["kept_top"] == 0 for t in log.trials())
    # sampling directly: the fallback draws the top token; without it nothing is drawn
    u = [np.full((2, 3), 0.5)]
    top = world.tokens[int(np.argmax(model.next_token_probs([("t0",)])[0]))]
    got = model.sample([("t0",)], u, Epsilon())
    assert got[0][0][0] == top and got[0].kept_top == 2
    assert model.sample([("t0",)], u, Epsilon(), keep_top=False)[0] == [(), ()]


class AlwaysFirst(SequenceModel):
    """Puts all its mass on the alphabet's first token."""

    name = "first"

    def __init__(self, world, context_tokens=0):
        self.tokens = tuple(world.tokens)
        self.context_tokens = context_tokens

    def next_token_probs(self, prefixes):
        p = np.zeros((len(prefixes), len(self.tokens)))
        p[:, 0] = 1.0
        return p

    def score(self, *a, **k):  # pragma: no cover
        raise NotImplementedError

    def sample(self, *a, **k):  # pragma: no cover
        raise NotImplementedError


def test_next_token_positions_and_pooling():
    # 0 -a-> 1 -a-> 2 -b-> 0; 'a' is valid at 0 and 1, not at 2
    world = ExplicitDFA([[1, -1], [2, -1], [-1, 0]], ["a", "b"], name="cycle")
    seqs = [["a", "a", "b"], ["a", "a", "b", "a", "a", "b", "a"]]
    # per position j: valid iff state(x[:j]) != 2
    per_seq = [[1, 1, 0], [1, 1, 0, 1, 1, 0, 1]]
    s = Settings(trials=2, next_token_pooling="tokens")
    assert next_token(world, AlwaysFirst(world), seqs, s, progress=False).mean == pytest.approx(7 / 10)
    s.next_token_pooling = "sequences"
    assert next_token(world, AlwaysFirst(world), seqs, s, progress=False).mean == pytest.approx(
        np.mean([np.mean(x) for x in per_seq]))
    # a model without BOS never predicts the first token
    s.next_token_pooling = "tokens"
    assert next_token(world, AlwaysFirst(world, 1), seqs, s, progress=False).mean == pytest.approx(5 / 8)


def test_navigation_names_the_moves_after_origin_and_destination():
    task = load_task("nav-grid-tiny")
    world = task.world
    seq = task.domain.generate("shortest-paths")["test"][0]
    assert list(world.next_token_positions(seq)) == list(range(2, len(seq)))
    model = TrueWorldModel(world)
    res = next_token(world, model, [seq], Settings(trials=1), progress=False)
    assert res.mean == 1.0 and res.n == 1
    s = Settings(trials=1, next_token_positions="all")
    from worldmodel.results import TrialLog

    log = TrialLog(None, {})
    next_token(world, model, [seq], s, log=log, progress=False)
    assert log.trials()[0]["n_prefixes"] == len(seq)


def test_pooled_standard_error_is_the_clustered_ratio_one():
    trials = [{"status": "ok", "h": 3, "n": 4}, {"status": "ok", "h": 1, "n": 2}, {"status": "ok", "h": 5, "n": 5},
              {"status": "skipped", "reason": "x"}]
    r = pooled("x", trials, "h", "n")
    h, n = np.array([3, 1, 5.0]), np.array([4, 2, 5.0])
    ratio = h.sum() / n.sum()
    assert r.mean == pytest.approx(ratio) and r.n == 3 and r.n_failed == 1
    assert r.stderr == pytest.approx(np.sqrt(3 / 2 * ((h - ratio * n) ** 2).sum()) / n.sum())


def test_settings_reject_unknown_conventions():
    from worldmodel.errors import WorldModelError

    with pytest.raises(WorldModelError, match="pooling"):
        Settings(next_token_pooling="states")
    with pytest.raises(WorldModelError, match="positions"):
        Settings(next_token_positions="some")


def test_dataset_is_part_of_the_resumable_header(tmp_path, capsys):
    base = ["evaluate", "nav-grid-tiny", "--model", "true", "--metrics", "next-token", "--trials", "3",
            "--data-dir", str(tmp_path / "data"), "--out", str(tmp_path / "e.json"), "--no-progress"]
    assert main(base + ["--dataset", "shortest-paths"]) == 0
    assert main(base + ["--dataset", "shortest-paths"]) == 0  # same data: resumes
    capsys.readouterr()
    assert main(base + ["--dataset", "random-walks"]) == 2
    assert "other settings" in capsys.readouterr().err


def test_sampler_settings_are_part_of_the_resumable_header(tmp_path, capsys):
    """A trial log drawn under one [sampler] is never resumed under another (the prefixes differ)."""
    text = (Path(TASKS_DIR) / "nav-grid-tiny.toml").read_text()
    assert "max_len = 8 " in text
    short = tmp_path / "nav-grid-tiny.toml"
    short.write_text(text.replace("max_len = 8 ", "max_len = 6 ", 1))
    base = ["--model", "true", "--metrics", "compression", "--trials", "3", "--data-dir", str(tmp_path / "data"),
            "--out", str(tmp_path / "e.json"), "--no-progress"]
    assert main(["evaluate", "nav-grid-tiny", *base]) == 0
    assert main(["evaluate", "nav-grid-tiny", *base]) == 0       # the same sampler: resumes
    capsys.readouterr()
    assert main(["evaluate", str(short), *base]) == 2
    assert "other settings" in capsys.readouterr().err


def test_a_log_from_before_the_later_header_keys_still_resumes(tmp_path):
    """Logs written before the header named the sampler and the weights resume as they did then."""
    import json

    from worldmodel.results import LATER_HEADER_KEYS, TrialLog

    settings = {"eps": 0.01, "task_sections": {"sampler": {"max_len": 8}}, "weights": "ab12"}
    old = {k: v for k, v in settings.items() if k not in LATER_HEADER_KEYS}
    path = tmp_path / "l.jsonl"
    path.write_text(json.dumps({"settings": old}) + "\n" + json.dumps({"trial": 0, "status": "ok", "score": 1.0}) + "\n")
    log = TrialLog(path, settings)
    assert sorted(log.done) == [0]
    log.close()
    from worldmodel.errors import WorldModelError

    with pytest.raises(WorldModelError, match="other settings"):   # a header that names them is held to them
        TrialLog(path, {**settings, "eps": 0.1})
    new = tmp_path / "n.jsonl"
    log = TrialLog(new, settings)
    log.append({"trial": 0, "status": "ok", "score": 1.0})
    log.close()
    with pytest.raises(WorldModelError, match="other settings"):
        TrialLog(new, {**settings, "weights": "cd34"})


def test_weights_fingerprint_tells_two_trainings_apart(tmp_path):
    from worldmodel.checkpoints import weights_fingerprint

    a, b, c = (tmp_path / x for x in "abc")
    for folder, blob in ((a, b"\x00\x01"), (b, b"\x00\x02"), (c, b"\x00\x01")):
        folder.mkdir()
        (folder / "model.safetensors").write_bytes(blob)
        (folder / "training.json").write_text("{}")                 # not a weight file: not hashed
    assert weights_fingerprint(a) == weights_fingerprint(c) != weights_fingerprint(b)
    (c / "training.json").write_text('{"steps": 2}')
    assert weights_fingerprint(a) == weights_fingerprint(c)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert weights_fingerprint(empty) is None
