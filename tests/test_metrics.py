"""The metric engine: exact values on hand-built worlds, the true model, resume."""

import json

import numpy as np
import pytest

from worldmodel.dfa import ExplicitDFA, random_dfa, random_walk, run
from worldmodel.errors import TrialSkipped
from worldmodel.metrics import Settings, compression, distinction, next_token, probe
from worldmodel.models import HFModel, TrueWorldModel, Vocabulary
from worldmodel.results import TrialLog, aggregate
from worldmodel.sampling import ExplicitDFASampler, StateSampler

TOKENS = ["a", "b", "c"]
# The world: 0 -a-> 1, 0 -b-> 1; 1 -a-> 1, 1 -c-> 0.
WORLD = ExplicitDFA([[1, 1, -1], [1, -1, 0]], TOKENS, name="hand")
# The model's (wrong) world splits state 1 by how it was entered:
# 0 -a-> 1a, 0 -b-> 1b; 1a -a-> 1a, 1a -c-> 0; 1b -c-> 0 (no 'a' after 'b').
SPLIT = ExplicitDFA([[1, 2, -1], [1, -1, 0], [-1, -1, 0]], TOKENS, name="split")


class FixedPairs(StateSampler):
    """Cycles through a fixed list of prefix pairs (trial i gets pair i mod n)."""

    def __init__(self, world, comp, dist):
        super().__init__(world)
        self.comp, self.dist, self.i, self.j = comp, dist, 0, 0

    def _pick(self, pairs, rng):
        p1, p2 = pairs[int(rng.integers(len(pairs)))]
        s1, s2 = run(self.world, p1), run(self.world, p2)
        key = str(s1) if s1 == s2 else f"{s1}|{s2}"
        return self.make_pair(key, p1, p2)

    def compression_pair(self, rng):
        return self._pick(self.comp, rng)

    def distinction_pair(self, rng):
        return self._pick(self.dist, rng)


COMP = [(("a",), ("b",)), (("b",), ("a",)), ((), ("a", "c"))]
DIST = [(("a",), ("a", "c")), (("b",), ("a", "c")), (("a", "c"), ("b",))]


def settings(**kw):
    base = dict(M=30, k=5, trials=300, max_sample_len=1, seed=0, batch_trials=7)
    base.update(kw)
    return Settings(**base)


def test_split_state_model_compression_by_hand():
    # state 1: pair (a, b) fails (after 'b' the model forbids 'a'), pair (b, a) passes: 0.5
    # state 0: (), (a c) reach the same model state: 1.0. Mean over states: 0.75.
    res = compression(WORLD, TrueWorldModel(SPLIT), FixedPairs(WORLD, COMP, DIST), settings(), progress=False)
    assert res.n_groups == 2 and res.n == 300
    assert res.mean == pytest.approx(0.75)


def test_split_state_model_distinction_by_hand():
    # key 1|0: both pairs have model boundary {c}, all real: precision 1, recall 1.
    # key 0|1 (prefixes "a c" vs "b"): model boundary {a, b}; only b is real: precision 0.5.
    # The true boundaries {c} and {b} are always drawn by the model: recall 1.
    res = distinction(WORLD, TrueWorldModel(SPLIT), FixedPairs(WORLD, COMP, DIST), settings(), progress=False)
    assert res["distinction_precision"].mean == pytest.approx(0.75)
    assert res["distinction_recall"].mean == pytest.approx(1.0)


def test_merged_state_model_has_zero_recall():
    # A model that merges states 0 and 1 (allows a, b, c everywhere) cannot tell them apart.
    merged = ExplicitDFA([[0, 0, 0]], TOKENS)
    res = distinction(WORLD, TrueWorldModel(merged), FixedPairs(WORLD, COMP, DIST), settings(), progress=False)
    assert res["distinction_recall"].mean == 0.0
    assert res["distinction_precision"].mean == 1.0  # empty model boundary: precision 1 by convention
    comp = compression(WORLD, TrueWorldModel(merged), FixedPairs(WORLD, COMP, DIST), settings(), progress=False)
    assert comp.mean == 1.0


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_true_world_model_scores_one_on_random_dfas(seed):
    world = random_dfa(10, 3, seed)
    model = TrueWorldModel(world)
    sampler = ExplicitDFASampler(world, 1, 8)
    s = Settings(M=20, k=4, trials=40, max_sample_len=6, seed=seed)
    assert compression(world, model, sampler, s, progress=False).mean == 1.0
    d = distinction(world, model, sampler, s, progress=False)
    assert d["distinction_precision"].mean == 1.0
    assert d["distinction_recall"].mean == 1.0
    rng = np.random.default_rng(seed)
    seqs = [random_walk(world, 0, 12, rng) for _ in range(20)]
    assert next_token(world, model, seqs, s, progress=False).mean == 1.0


def test_untrained_network_is_below_the_true_model():
    world = random_dfa(10, 3, 0)
    vocab = Vocabulary(world.tokens)
    net = HFModel.untrained(vocab, dict(n_layer=1, n_embd=16, n_head=2, n_positions=40), seed=0)
    sampler = ExplicitDFASampler(world, 1, 8)
    s = Settings(M=10, k=3, trials=30, max_sample_len=6)
    d = distinction(world, net, sampler, s, progress=False)
    assert d["distinction_recall"].mean < 0.5


def test_probe_reads_state_from_true_one_hot_features():
    """A model whose hidden state is a one-hot of the true state is probed perfectly."""
    world = random_dfa(6, 3, 1)

    class OneHot(TrueWorldModel):
        has_hidden_states = True

        def hidden_states(self, sequences):
            out = []
            for s in sequences:
                states = [run(world, s[:j]) for j in range(len(s) + 1)]
                out.append(np.eye(world.n_states)[states])
            return out

    rng = np.random.default_rng(0)
    seqs = [random_walk(world, 0, 10, rng) for _ in range(60)]
    res = probe(world, OneHot(world), seqs, Settings(probe_epochs=60), progress=False)
    assert res.mean == 1.0 and res.n > 50
    none = probe(world, TrueWorldModel(world), seqs, Settings(), progress=False)
    assert none.n == 0 and none.n_failed == 1


def test_skipped_trials_are_counted_with_reasons():
    class Flaky(FixedPairs):
        def compression_pair(self, rng):
            if rng.random() < 0.5:
                raise TrialSkipped("no second prefix")
            return super().compression_pair(rng)

    res = compression(WORLD, TrueWorldModel(WORLD), Flaky(WORLD, COMP, DIST), settings(trials=40), progress=False)
    assert res.n + res.n_failed == 40 and res.n_failed > 5
    assert res.failures == {"no second prefix": res.n_failed}


def test_kill_and_resume_gives_the_same_summary(tmp_path):
    world = random_dfa(10, 3, 4)
    vocab = Vocabulary(world.tokens)
    net = HFModel.untrained(vocab, dict(n_layer=1, n_embd=16, n_head=2, n_positions=40), seed=3)
    sampler = ExplicitDFASampler(world, 1, 8)
    s = Settings(M=8, k=3, trials=24, max_sample_len=6, seed=11, batch_trials=5)
    whole = distinction(world, net, sampler, s, TrialLog(tmp_path / "a.jsonl", {"x": 1}), progress=False)
    # simulate a run killed after 9 trials, mid-way through writing the 10th line
    lines = (tmp_path / "a.jsonl").read_text().splitlines()
    (tmp_path / "b.jsonl").write_text("\n".join(lines[:10]) + "\n" + lines[10][:25])
    resumed = distinction(world, net, sampler, s, TrialLog(tmp_path / "b.jsonl", {"x": 1}), progress=False)
    for key in whole:
        assert resumed[key].to_dict() == whole[key].to_dict()
    trials = [json.loads(l) for l in (tmp_path / "b.jsonl").read_text().splitlines()[1:]]
    assert sorted(t["trial"] for t in trials) == list(range(24))


def test_trial_log_refuses_other_settings(tmp_path):
    from worldmodel.errors import WorldModelError

    log = TrialLog(tmp_path / "l.jsonl", {"eps": 0.01})
    log.append({"trial": 0, "status": "ok", "score": 1.0})
    log.close()
    with pytest.raises(WorldModelError, match="other settings"):
        TrialLog(tmp_path / "l.jsonl", {"eps": 0.1})


def test_aggregate_averages_pairs_then_groups():
    trials = [
        {"trial": 0, "status": "ok", "key": "A", "pair": "p", "score": 1.0},
        {"trial": 1, "status": "ok", "key": "A", "pair": "p", "score": 0.0},
        {"trial": 2, "status": "ok", "key": "A", "pair": "q", "score": 1.0},
        {"trial": 3, "status": "ok", "key": "B", "pair": "r", "score": 0.0},
        {"trial": 4, "status": "skipped", "reason": "x"},
    ]
    r = aggregate("m", trials)
    # A: mean(mean(1,0), 1) = 0.75; B: 0 -> 0.375
    assert r.mean == pytest.approx(0.375)
    assert r.stderr == pytest.approx(np.std([0.75, 0.0], ddof=1) / np.sqrt(2))
    assert (r.n, r.n_failed, r.n_groups) == (4, 1, 2)
