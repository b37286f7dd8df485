"""The inductive-bias probe: the state lookup's 1.0, a model that is a function of the state, one that
ignores it, pseudo-states, resuming, and real networks of two families end to end."""

from __future__ import annotations

import json
import zlib

import numpy as np
import pytest
import torch

from worldmodel import evaluator
from worldmodel.dfa import run
from worldmodel.inductive_bias import _pair_counts, inductive_bias, white_noise_label
from worldmodel.models import TrueWorldModel, Vocabulary
from worldmodel.models.features import FeatureNet
from worldmodel.results import TrialLog
from worldmodel.tasks import load_task


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    task = load_task("toy-dfa")
    root = tmp_path_factory.mktemp("ib")
    return task, task.domain.sequences("train", None, root)[:300], task.domain.sequences("test", None, root)[:200]


def settings(task, **kw):
    """The task's settings with the probe's keys (a registered metric's settings, in ``extra``)."""
    return evaluator.settings_for(task, **{**dict(ib_tasks=8, ib_examples=400, ib_finetune="head", ib_lr=0.05,
                                                  ib_steps=150), **kw})


class StateFeatures(FeatureNet):
    """Features that are a function of the true state only (``how="state"``), of nothing
    (``"constant"``), or of the input itself and not of its state (``"noise"``: a random code per prefix)."""

    def __init__(self, world, how):
        self.world, self.how = world, how
        self.network = torch.nn.Module()
        self.vocab = Vocabulary(world.tokens)
        self.device = torch.device("cpu")
        self.n = world.n_states

    def batch(self, sequences):
        T = max(len(s) for s in sequences) + 1
        ids = torch.zeros((len(sequences), T), dtype=torch.long)
        for r, s in enumerate(sequences):
            for j in range(len(s) + 1):
                ids[r, j] = run(self.world, s[:j]) if self.how == "state" else zlib.crc32(" ".join(s[:j]).encode()) % 4096
        return ids

    def features(self, network, ids):
        if self.how == "constant":
            return torch.ones(ids.shape + (4,))
        if self.how == "state":
            return torch.nn.functional.one_hot(ids, self.n).float()
        g = torch.Generator().manual_seed(0)
        return torch.randn(4096, 256, generator=g)[ids]        # a fixed random code per prefix


class FakeModel(TrueWorldModel):
    """The world's tokens and a feature network (the probe asks nothing else of a model)."""

    name = "fake"

    def __init__(self, world, how):
        super().__init__(world)
        self.how = how

    def feature_net(self):
        return StateFeatures(self.world, self.how)


def test_the_state_lookup_is_the_ceiling(toy):
    task, train, test = toy
    got = inductive_bias(task.world, TrueWorldModel(task.world), train, test, settings(task), progress=False)
    for name in ("inductive_bias_r", "inductive_bias_d", "inductive_bias_d_same_pseudo", "inductive_bias_d_diff_pseudo",
                 "ib_fit"):
        assert got[name].mean == 1.0 and got[name].n == 8, name
        assert got[name].stderr == 0.0


def test_a_model_that_is_a_function_of_the_state_scores_one(toy):
    task, train, test = toy
    got = inductive_bias(task.world, FakeModel(task.world, "state"), train, test, settings(task), progress=False)
    assert got["ib_coverage"].mean == 1.0          # every held-out state occurs in each task's sample
    assert got["ib_fit"].mean == 1.0
    assert got["inductive_bias_r"].mean == 1.0 and got["inductive_bias_d"].mean == 1.0


def test_a_model_that_ignores_the_state_separates_nothing(toy):
    task, train, test = toy
    got = inductive_bias(task.world, FakeModel(task.world, "constant"), train, test, settings(task), progress=False)
    assert got["inductive_bias_r"].mean == 1.0    # one prediction for everything: consistent, trivially
    assert got["inductive_bias_d"].mean == 0.0
    noise = inductive_bias(task.world, FakeModel(task.world, "noise"), train, test, settings(task), progress=False)
    assert noise["inductive_bias_r"].mean < 0.5 < noise["inductive_bias_d"].mean
    assert noise["ib_fit"].mean > 0.9             # it fits its sample, and extrapolates by something else


def test_pair_counts_split_by_state_and_pseudo_state():
    pred = np.array([0, 0, 1, 1])
    labels = np.array([0, 1, 1, 1])
    keys = np.array(["a", "a", "b", "c"], dtype=object)
    same = keys[:, None] == keys[None, :]
    pseudo_id = np.array([0, 0, 1, 0])
    pseudo = pseudo_id[:, None] == pseudo_id[None, :]
    c = _pair_counts(pred, labels, same, pseudo, 2)
    assert (c["same_pairs"], c["same_pred_disagree"]) == (1, 0)
    assert (c["diff_pairs"], c["diff_pred_disagree"], c["diff_label_disagree"]) == (5, 4, 2)
    # pairs of different states with the same pseudo-state: (0,3), (1,3)
    assert (c["diff_same_pseudo_pairs"], c["diff_same_pseudo_pred_disagree"]) == (2, 2)
    assert white_noise_label(3, "q7", 2) == white_noise_label(3, "q7", 2)
    labels = [white_noise_label(s, "q7", 3) for s in range(300)]
    assert set(labels) == {0, 1, 2} and abs(np.mean(np.array(labels) == 0) - 1 / 3) < 0.1


def test_trials_are_logged_and_a_rerun_resumes(toy, tmp_path):
    task, train, test = toy
    s = settings(task, ib_tasks=4)
    log = TrialLog(tmp_path / "ib.jsonl", {"metric": "inductive-bias"})
    first = inductive_bias(task.world, FakeModel(task.world, "noise"), train, test, s, log, progress=False)
    again = inductive_bias(task.world, FakeModel(task.world, "noise"), train, test, s,
                           TrialLog(tmp_path / "ib.jsonl", {"metric": "inductive-bias"}), progress=False)
    assert {k: v.mean for k, v in first.items()} == {k: v.mean for k, v in again.items()}
    assert len((tmp_path / "ib.jsonl").read_text().splitlines()) == 1 + 4


@pytest.mark.parametrize("cfg", [dict(n_layer=1, n_embd=16, n_head=2, n_positions=64),
                                 dict(family="lstm", n_layer=1, n_embd=16)], ids=["gpt2", "lstm"])
def test_real_networks_are_fine_tuned_whole(toy, cfg):
    from worldmodel.models import HFModel

    task, train, test = toy
    m = HFModel.untrained(Vocabulary(task.world.tokens), cfg, seed=0)
    before = {k: v.clone() for k, v in m.model.state_dict().items()}
    got = inductive_bias(task.world, m, train, test, settings(task, ib_tasks=2, ib_steps=3, ib_finetune="full",
                                                                ib_lr=6e-4), progress=False)
    assert got["inductive_bias_d"].n == 2 and 0 <= got["inductive_bias_d"].mean <= 2
    assert all(torch.equal(before[k], v) for k, v in m.model.state_dict().items())   # a copy was adapted


def test_the_command_runs_it_only_when_named(tmp_path, capsys):
    from worldmodel.cli import main

    out = tmp_path / "ib.json"
    args = ["evaluate", "toy-dfa", "--model", "true", "--data-dir", str(tmp_path / "d"), "--no-progress"]
    assert main(args + ["--metrics", "inductive-bias", "--out", str(out)]) == 0
    metrics = json.loads(out.read_text())["metrics"]
    assert metrics["inductive_bias_r"]["mean"] == 1.0 and metrics["inductive_bias_d"]["mean"] == 1.0
    assert "compression_precision" not in metrics
    assert "| R-IB | D-IB |" in capsys.readouterr().out
    assert main(args + ["--metrics", "inductive-bais"]) == 2
    assert "unknown metric" in capsys.readouterr().err


def test_probe_settings_are_declared_and_checked(tmp_path):
    from worldmodel import registry
    from worldmodel.errors import WorldModelError
    from worldmodel.inductive_bias import ProbeSettings
    from worldmodel.tasks import EVALUATE

    assert registry.metric("inductive-bias").default is False       # run only when named
    assert EVALUATE["ib_tasks"] is int and EVALUATE["ib_finetune"] is str
    task = load_task("toy-dfa")
    assert ProbeSettings(evaluator.settings_for(task)).ib_tasks == 20  # the default when unset
    assert ProbeSettings(settings(task)).ib_tasks == 8
    for bad in (dict(ib_finetune="all"), dict(ib_tasks=0), dict(ib_lr=-1.0)):
        with pytest.raises(WorldModelError, match=next(iter(bad))):
            ProbeSettings(settings(task, **bad))
    text = (load_task("toy-dfa").path.read_text().replace("[evaluate]", "[evaluate]\nib_task = 3"))
    (tmp_path / "t.toml").write_text(text)
    with pytest.raises(WorldModelError, match="ib_task"):
        load_task(str(tmp_path / "t.toml"))


def test_pairs_of_identical_inputs_are_not_counted_as_respecting_the_state(toy, tmp_path):
    """Held-out positions that repeat one prefix get one prediction from any model: left out of the pairs."""
    task, train, test = toy
    repeated = [list(s) for s in test[:10]] * 20            # every input occurs 20 times
    log = TrialLog(tmp_path / "ib.jsonl", {"metric": "inductive-bias"})
    got = inductive_bias(task.world, FakeModel(task.world, "noise"), train, repeated, settings(task, ib_tasks=3), log,
                         progress=False)
    assert got["inductive_bias_r"].mean < 0.5              # counted, the repeats would put it near 1
    recs = log.trials(3)
    assert all(r["identical_input_pairs"] > 100 and len(r["predictions"]) == 400 for r in recs)
