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
    base = dict(M=30, k=5, trials=60, max_sample_len=1, seed=0, batch_trials=7)
    base.update(kw)
    return Settings(**base)


def test_split_state_model_compression_by_hand():
    # state 1: pair (a, b) fails (after 'b' the model forbids 'a'), pair (b, a) passes: 0.5
    # state 0: (), (a c) reach the same model state: 1.0. Mean over states: 0.75.
    res = compression(WORLD, TrueWorldModel(SPLIT), FixedPairs(WORLD, COMP, DIST), settings(), progress=False)
    assert res.n_groups == 2 and res.n == 60
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
    s = Settings(M=10, k=4, trials=12, max_sample_len=6, seed=seed)
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


# ---------------------------------------------------------------------------
# Exact behaviour of the pieces: settings, records, options, edge cases
# ---------------------------------------------------------------------------

from worldmodel.acceptance import Epsilon, TopK  # noqa: E402
from worldmodel.errors import WorldModelError  # noqa: E402
from worldmodel.metrics import context_room, _pair_fields, length_bound  # noqa: E402
from worldmodel.sampling import PrefixPair  # noqa: E402


@pytest.mark.parametrize("kw, message", [
    (dict(next_token_positions="some"), "next_token_positions must be 'world' or 'all', not 'some'"),
    (dict(next_token_pooling="pairs"), "next_token_pooling must be 'tokens' or 'sequences', not 'pairs'"),
    (dict(keep_top=1), "evaluate setting keep_top must be true or false, got 1"),
    (dict(M=0), "evaluate setting M must be a whole number >= 1, got 0"),
    (dict(k=True), "evaluate setting k must be a whole number >= 1, got True"),
    (dict(trials=2.0), "evaluate setting trials must be a whole number >= 1, got 2.0"),
    (dict(max_sample_len=0), "evaluate setting max_sample_len must be a whole number >= 1, got 0"),
    (dict(batch_trials=0), "evaluate setting batch_trials must be a whole number >= 1, got 0"),
    (dict(probe_sequences=0), "evaluate setting probe_sequences must be a whole number >= 1, got 0"),
    (dict(probe_epochs=0), "evaluate setting probe_epochs must be a whole number >= 1, got 0"),
    (dict(probe_batch=0), "evaluate setting probe_batch must be a whole number >= 1, got 0"),
    (dict(seed=-1), "evaluate setting seed must be a whole number >= 0, got -1"),
    (dict(boundary_len=0), "evaluate setting boundary_len must be a whole number >= 1, got 0"),
    (dict(max_boundary=0), "evaluate setting max_boundary must be a whole number >= 1, got 0"),
    (dict(probe_lr=0), "evaluate setting probe_lr must be a positive number, got 0"),
    (dict(probe_lr="0.1"), "evaluate setting probe_lr must be a positive number, got '0.1'"),
    (dict(boundary="guess"), "evaluate setting boundary must be 'exact' or 'sampled', got 'guess'"),
])
def test_settings_refuse_bad_values_with_one_clear_message(kw, message):
    with pytest.raises(WorldModelError) as err:
        Settings(**kw)
    assert str(err.value) == message


def test_settings_accept_the_smallest_values_and_parse_rules():
    s = Settings(M=1, k=1, trials=1, max_sample_len=1, batch_trials=1, probe_sequences=1, probe_epochs=1,
                 probe_batch=1, seed=0, boundary_len=1, max_boundary=1, probe_lr=1, boundary="sampled",
                 keep_top=False, next_token_positions="all", next_token_pooling="sequences", acceptance="top-k:3")
    assert s.acceptance == TopK(3)
    assert Settings(acceptance=0.05).acceptance == Epsilon(0.05)
    assert Settings().acceptance == Epsilon(0.01)
    d = s.to_dict()
    assert d["acceptance"] == "top-k:3" and d["M"] == 1 and d["keep_top"] is False and d["boundary"] == "sampled"
    assert Settings.from_dict(d) == s
    assert Settings.from_dict({"epsilon": 0.2, "M": 4}) == Settings(acceptance=Epsilon(0.2), M=4)
    assert Settings.from_dict({"acceptance": "top-p:0.5"}).acceptance.spec() == "top-p:0.5"
    with pytest.raises(WorldModelError, match=r"^unknown evaluate setting\(s\): bogus, zzz$"):
        Settings.from_dict({"zzz": 1, "bogus": 2, "M": 3})
    json.dumps(Settings().to_dict())


def testcontext_room():
    class Capped:                              # the attributes SequenceModel declares
        name = "capped"
        max_positions = 10
        context_tokens = 0
        trained_len = None

    class CappedNoBos(Capped):
        context_tokens = 1

    class Trained(Capped):
        trained_len = 6

    assert context_room(TrueWorldModel(WORLD), 50, 7) == 7            # no context limit
    assert context_room(Capped(), 3, 100) == 6                         # 10 - 3 - BOS
    assert context_room(Capped(), 3, 4) == 4
    assert context_room(CappedNoBos(), 3, 100) == 7                    # no BOS position
    assert context_room(Trained(), 3, 100) == 3                        # stops at the trained length, 6
    assert context_room(Trained(), 5, 100) == 1
    assert length_bound(Trained()) == (6, "trained") and length_bound(Capped()) == (9, "context")
    assert length_bound(CappedNoBos()) == (10, "context") and length_bound(TrueWorldModel(WORLD)) == (None, "none")

    class LongerThanContext(Capped):           # trained on longer sequences than its window holds now
        trained_len = 40

    assert length_bound(LongerThanContext()) == (9, "trained")     # the context still bounds it
    with pytest.raises(WorldModelError, match=r"^a prefix of 6 tokens leaves no room inside the longest sequence it "
                                              r"was trained on \(6 tokens\): the capped model was never trained there"):
        context_room(Trained(), 6, 5)
    with pytest.raises(WorldModelError, match=r"inside its context \(9 tokens\)"):
        context_room(Capped(), 12, 5)


def test_metrics_stop_at_the_trained_length_and_record_it(tmp_path):
    """Prefix + continuation never pass trained_len: samples, the exact boundary and next-token positions."""
    world = ExplicitDFA([[1, 1, -1], [1, -1, 0]], TOKENS)
    asked = []

    class Trained(TrueWorldModel):
        trained_len = 5

        def sample_contrast(self, prefixes, check_prefixes, uniforms, *args, **kw):
            asked.extend(max(len(a), len(b)) + u.shape[1] for a, b, u in zip(prefixes, check_prefixes, uniforms))
            return super().sample_contrast(prefixes, check_prefixes, uniforms, *args, **kw)

        def score(self, prefixes, suffixes, acceptance):
            asked.extend(len(p) + len(x) for p, group in zip(prefixes, suffixes) for x in group)
            return super().score(prefixes, suffixes, acceptance)

        def prefix_probs(self, sequences):
            asked.append(("next", [len(s) for s in sequences]))
            return super().prefix_probs(sequences)

    model = Trained(world)
    s = Settings(M=4, trials=6, max_sample_len=10, k=4)
    logs = [TrialLog(tmp_path / f"{m}.jsonl", {"m": m}) for m in ("c", "d")]
    compression(world, model, FixedPairs(world, COMP, DIST), s, logs[0], progress=False)
    distinction(world, model, FixedPairs(world, COMP, DIST), s, logs[1], progress=False)
    lengths = [a for a in asked if not isinstance(a, tuple)]
    assert lengths and max(lengths) == 5                                   # reaches the bound, never passes it
    trials = [json.loads(l) for log in logs for l in log.path.read_text().splitlines()[1:]]
    assert len(trials) == 12
    for t in trials:
        longer = max(len(t["prefix1"]), len(t["prefix2"]))
        assert t["continuation_len"] == 5 - longer                         # recorded per trial
    seqs = [("a", "a", "a", "a", "a", "a", "a"), ("a", "c")]
    log = TrialLog(tmp_path / "n.jsonl", {"m": "n"})
    next_token(world, model, seqs, Settings(), log, progress=False)
    scored = [json.loads(l)["n_prefixes"] for l in log.path.read_text().splitlines()[1:]]
    assert scored == [5, 2]                                                # positions 0..4: tokens 1..5 only
    model.trained_len = 2
    with pytest.raises(WorldModelError, match="a prefix of 2 tokens leaves no room inside the longest sequence"):
        compression(world, model, FixedPairs(world, COMP, DIST), s, progress=False)


def test_pair_fields():
    pair = PrefixPair("1", ("a",), ("b", "c"), 1, 0)
    assert _pair_fields(pair, WORLD) == {"key": "1", "pair": "a || b c", "prefix1": ["a"], "prefix2": ["b", "c"],
                                          "state1": "1", "state2": "0"}


def test_compression_records_and_sampler_errors(tmp_path):
    log = TrialLog(tmp_path / "c.jsonl", {"x": 1})
    res = compression(WORLD, TrueWorldModel(SPLIT), FixedPairs(WORLD, COMP, DIST), settings(trials=12, M=8), log,
                      progress=False)
    trials = [json.loads(l) for l in (tmp_path / "c.jsonl").read_text().splitlines()[1:]]
    assert sorted(t["trial"] for t in trials) == list(range(12)) and res.n == 12
    for t in trials:
        assert t["status"] == "ok" and t["n_samples"] == 8 and t["kept_top"] == 0 and t["state1"] == t["state2"]
        assert t["score"] == (0.0 if t["pair"] == "a || b" else 1.0)
        assert ("example" in t) == (t["score"] == 0.0)
        if t["score"] == 0.0:
            assert t["example"] == ["a"]                 # allowed after 'a', refused after 'b'

    class Different(FixedPairs):
        def compression_pair(self, rng):
            return self.make_pair("x", ("a",), ("a", "c"))

    with pytest.raises(WorldModelError, match="^sampler returned a compression pair with two different states$"):
        compression(WORLD, TrueWorldModel(WORLD), Different(WORLD, COMP, DIST), settings(trials=2), progress=False)

    class Same(FixedPairs):
        def compression_pair(self, rng):
            return self.make_pair("1", ("a",), ("a",))

    res = compression(WORLD, TrueWorldModel(WORLD), Same(WORLD, COMP, DIST), settings(trials=3), progress=False)
    assert res.n == 0 and res.n_failed == 3 and res.failures == {"sampler returned the same prefix twice": 3}


def test_distinction_records_and_sampler_errors(tmp_path):
    log = TrialLog(tmp_path / "d.jsonl", {"x": 1})
    distinction(WORLD, TrueWorldModel(SPLIT), FixedPairs(WORLD, COMP, DIST), settings(trials=9, M=8), log,
                progress=False)
    trials = [json.loads(l) for l in (tmp_path / "d.jsonl").read_text().splitlines()[1:]]
    by_pair = {t["pair"]: t for t in trials}
    t = by_pair["a c || b"]                 # states 0 | 1: the model's boundary {a, b}, only b real
    assert t["scores"] == {"distinction_precision": 0.5, "distinction_recall": 1.0}
    assert (t["model_boundary_size"], t["true_boundary_size"], t["true_boundary_scored"], t["kept_top"]) == (2, 1, 1, 0)
    t = by_pair["a || a c"]
    assert t["scores"] == {"distinction_precision": 1.0, "distinction_recall": 1.0}
    assert (t["model_boundary_size"], t["true_boundary_size"]) == (1, 1)

    class OneState(FixedPairs):
        def distinction_pair(self, rng):
            return self.make_pair("1", ("a",), ("b",))

    with pytest.raises(WorldModelError, match="^sampler returned a distinction pair reaching one state$"):
        distinction(WORLD, TrueWorldModel(WORLD), OneState(WORLD, COMP, DIST), settings(trials=2), progress=False)


def test_distinction_with_a_sampled_and_a_capped_true_boundary(tmp_path):
    # a world with a wide boundary: from state 0 every token is valid, from state 1 none but 'a'
    tokens = ["a", "b", "c", "d", "e"]
    wide = ExplicitDFA([[1, 0, 0, 0, 0], [1, -1, -1, -1, -1]], tokens)
    pairs = [((), ("a",))]
    sampler = FixedPairs(wide, pairs, pairs)
    exact = distinction(wide, TrueWorldModel(wide), sampler, Settings(M=40, k=2, trials=3, max_sample_len=2),
                        progress=False)
    assert exact["distinction_recall"].mean == 1.0
    log = TrialLog(tmp_path / "s.jsonl", {})
    sampled = distinction(wide, TrueWorldModel(wide), sampler,
                          Settings(M=40, k=2, trials=3, max_sample_len=2, boundary="sampled", max_boundary=2), log,
                          progress=False)
    assert sampled["distinction_recall"].mean == 1.0 and sampled["distinction_precision"].mean == 1.0
    for t in log.trials():
        assert t["true_boundary_size"] == 4 and t["true_boundary_scored"] == 2      # b, c, d, e; two scored
    # the merged model (everything allowed everywhere) draws none of them: recall 0 on the sampled boundary too
    merged = ExplicitDFA([[0] * 5], tokens)
    r = distinction(wide, TrueWorldModel(merged), sampler,
                    Settings(M=40, k=2, trials=3, max_sample_len=2, boundary="sampled", boundary_len=1),
                    progress=False)
    assert r["distinction_recall"].mean == 0.0 and r["distinction_precision"].mean == 1.0


def test_next_token_options_and_errors():
    class Ending(ExplicitDFA):
        def next_token_positions(self, sequence):
            return range(1, len(sequence))           # the first token is given context

    world = Ending([[1, 1, -1], [1, -1, 0]], TOKENS)
    seqs = [("a", "c", "b", "a"), ("b", "a", "a")]
    true = TrueWorldModel(world)
    assert next_token(world, true, seqs, Settings(trials=5), progress=False).mean == 1.0

    class Wrong(TrueWorldModel):
        """Always puts its mass on 'b' (valid only from state 0)."""

        def next_token_probs(self, prefixes):
            p = np.zeros((len(prefixes), 3))
            p[:, 1] = 1.0
            return p

    wrong = Wrong(world)
    # states along ("a","c","b","a"): 0 1 0 1; along ("b","a","a"): 0 1 1. 'b' is right at state 0 only.
    res = next_token(world, wrong, seqs, Settings(), progress=False)            # positions 1.. : tokens pooled
    assert res.mean == pytest.approx(1 / 5) and res.n == 2
    per_seq = next_token(world, wrong, seqs, Settings(next_token_pooling="sequences"), progress=False)
    assert per_seq.mean == pytest.approx((1 / 3 + 0 / 2) / 2)
    every = next_token(world, wrong, seqs, Settings(next_token_positions="all"), progress=False)
    assert every.mean == pytest.approx(3 / 7)
    first_only = next_token(world, wrong, seqs, Settings(trials=1, next_token_positions="all"), progress=False)
    assert first_only.mean == 0.5 and first_only.n == 1

    class NoBos(Wrong):
        context_tokens = 1

    assert next_token(world, NoBos(world), seqs, Settings(next_token_positions="all"), progress=False).mean == \
        pytest.approx(1 / 5)

    class Silent(TrueWorldModel):
        def next_token_probs(self, prefixes):
            return np.zeros((len(prefixes), 3))

    assert next_token(world, Silent(world), seqs, Settings(), progress=False).mean == 0.0
    with pytest.raises(WorldModelError, match="^next-token test: no held-out sequences$"):
        next_token(world, true, [], Settings(), progress=False)
    with pytest.raises(WorldModelError, match="^held-out sequence 1 is not valid in the dfa world$"):
        next_token(world, true, [("a",), ("c", "a")], Settings(next_token_positions="all"), progress=False)
    single = next_token(world, true, [("a",), ("a", "a")], Settings(), progress=False)
    assert single.n == 1 and single.n_failed == 1 and single.failures == {"no scored position": 1}


def test_runner_batches_resumes_and_runs_only_its_shard(tmp_path):
    from worldmodel.metrics import _Runner

    calls = []

    def draw(i, rng):
        if i == 4:
            raise TrialSkipped("four")
        return i * 10

    def evaluate_batch(items):
        calls.append([it[1] for it in items])
        return [{**base, "status": "ok", "score": 1.0, "value": x} for base, x, _ in items]

    log = TrialLog(None, {})
    out = _Runner("m", Settings(batch_trials=3, seed=2), log, False).run(8, draw, evaluate_batch)
    assert calls == [[0, 10, 20], [30, 50], [60, 70]]
    assert [t["trial"] for t in out] == list(range(8))
    assert out[4] == {"trial": 4, "seed": out[4]["seed"], "status": "skipped", "reason": "four"}
    assert out[0]["seed"] != out[1]["seed"] and out[1]["value"] == 10
    # resume: only trials not in the log are drawn again
    calls.clear()
    log2 = TrialLog(None, {})
    for t in out[:5]:
        log2.append(t)
    again = _Runner("m", Settings(batch_trials=3, seed=2), log2, False).run(8, draw, evaluate_batch)
    assert calls == [[50, 60, 70]] and again == out
    # a shard runs every size-th batch of what is left, starting at its rank
    calls.clear()
    log3 = TrialLog(None, {})
    log3.shard = (1, 2)
    _Runner("m", Settings(batch_trials=2, seed=2), log3, False).run(8, draw, evaluate_batch)
    assert calls == [[20, 30], [60, 70]]
    # waves: a process's consecutive batches evaluated together, up to `wave` trials, same records
    calls.clear()
    waved = _Runner("m", Settings(batch_trials=3, seed=2), TrialLog(None, {}), False, wave=6).run(8, draw, evaluate_batch)
    assert calls == [[0, 10, 20, 30, 50], [60, 70]] and waved == out
    calls.clear()
    log4 = TrialLog(None, {})
    log4.shard = (1, 2)
    _Runner("m", Settings(batch_trials=2, seed=2), log4, False, wave=4).run(8, draw, evaluate_batch)
    assert calls == [[20, 30, 60, 70]]  # the shard's own batches, never another's
    calls.clear()
    _Runner("m", Settings(batch_trials=3, seed=2), TrialLog(None, {}), False, wave=2).run(8, draw, evaluate_batch)
    assert calls == [[0, 10, 20], [30, 50], [60, 70]]  # a wave is never smaller than a batch
    # a batch where every trial is skipped does not call the model
    calls.clear()
    _Runner("m", Settings(batch_trials=1, seed=2), TrialLog(None, {}), False).run(5, draw, evaluate_batch)
    assert calls == [[0], [10], [20], [30]]


def test_probe_results_and_refusals():
    world = random_dfa(6, 3, 1)

    class OneHot(TrueWorldModel):
        has_hidden_states = True

        def hidden_states(self, sequences):
            states = [[run(world, s[:j]) for j in range(len(s) + 1)] for s in sequences]
            return [np.eye(world.n_states)[[q if isinstance(q, int) else 0 for q in row]] for row in states]

    rng = np.random.default_rng(0)
    seqs = [random_walk(world, 0, 10, rng) for _ in range(20)]
    res = probe(world, OneHot(world), seqs, Settings(probe_epochs=60, probe_sequences=10), progress=False)
    # 10 sequences: 2 held out (one fifth), each of its 10 positions scored
    assert res.mean == 1.0 and res.n == 20 and res.n_groups == 2 and res.stderr == 0.0 and res.n_failed == 0
    res = probe(world, OneHot(world), seqs, Settings(probe_epochs=60, probe_batch=7), progress=False)
    assert res.mean == 1.0 and res.n == 40

    class Noise(OneHot):
        def hidden_states(self, sequences):
            r = np.random.default_rng(1)
            return [r.normal(size=(len(s) + 1, 4)) for s in sequences]

    noisy = probe(world, Noise(world), seqs, Settings(probe_epochs=5), progress=False)
    assert 0 < noisy.mean < 1 and noisy.stderr == pytest.approx(np.sqrt(noisy.mean * (1 - noisy.mean) / noisy.n))

    none = probe(world, TrueWorldModel(world), seqs, Settings(), progress=False)
    assert np.isnan(none.mean) and none.n == 0 and none.failures == {"true model has no hidden states": 1}
    one = probe(world, OneHot(world), seqs[:1], Settings(), progress=False)
    assert np.isnan(one.mean) and one.failures == {"too few sequences to split 80/20": 1}

    class NoTargets(ExplicitDFA):
        def probe_targets(self, state):
            return None

    blank = NoTargets(world.delta, world.tokens, name="blank")
    nt = probe(blank, OneHot(world), seqs, Settings(), progress=False)
    assert np.isnan(nt.mean) and nt.failures == {"the blank world defines no probe targets": 1}
    # a sequence that leaves the world stops there: its later positions are not examples
    bad = [s + ("zzz",) + s for s in seqs]
    assert probe(world, OneHot(world), bad, Settings(probe_epochs=60), progress=False).n == 40


def test_metrics_pass_their_settings_to_the_model():
    """What the model is asked: uniforms cut to its context, the rule, stop tokens, keep_top, halting."""

    class Ending(ExplicitDFA):
        stop_tokens = frozenset({"c"})

    world = Ending([[1, 1, -1], [1, -1, 0]], TOKENS)

    calls = []

    class Recording(TrueWorldModel):
        max_positions = 4                     # with a BOS: room for 4 - len(longer prefix) - 1 tokens

        def sample_contrast(self, prefixes, check_prefixes, uniforms, acceptance, stop_tokens=frozenset(),
                            halt_on_reject=False, keep_top=True):
            calls.append(dict(shapes=[u.shape for u in uniforms], lens=[max(len(a), len(b)) for a, b in
                                                                                zip(prefixes, check_prefixes)],
                                        acceptance=acceptance, stop=stop_tokens, halt=halt_on_reject, keep=keep_top))
            return super().sample_contrast(prefixes, check_prefixes, uniforms, acceptance, stop_tokens,
                                           halt_on_reject, keep_top)

    model = Recording(world)
    s = Settings(M=4, trials=6, max_sample_len=3, keep_top=False, acceptance="top-k:1", batch_trials=4)
    compression(world, model, FixedPairs(world, COMP, DIST), s, progress=False)
    distinction(world, model, FixedPairs(world, COMP, DIST), s, progress=False)
    comp_calls, dist_calls = calls[:2], calls[2:]
    assert [len(c["shapes"]) for c in comp_calls] == [4, 2] and [len(c["shapes"]) for c in dist_calls] == [4, 2]
    for c in calls:
        for shape, n in zip(c["shapes"], c["lens"]):
            assert shape == (4, min(3, 4 - n - 1))
        assert c["acceptance"] == TopK(1) and c["stop"] == frozenset({"c"}) and c["keep"] is False
    assert all(c["halt"] for c in comp_calls) and not any(c["halt"] for c in dist_calls)
    assert {shape[1] for c in calls for shape in c["shapes"]} == {1, 2}      # cut to the room left


def test_next_token_logs_its_trials_and_shows_progress_by_default(tmp_path, capsys):
    import re

    from worldmodel.results import trial_seed

    world = ExplicitDFA([[1, 1, -1], [1, -1, 0]], TOKENS)
    seqs = [("a", "c", "b"), ("b", "a")]
    log = TrialLog(tmp_path / "n.jsonl", {"k": 1})
    res = next_token(world, TrueWorldModel(world), seqs, Settings(seed=4), log)
    assert res.mean == 1.0
    assert re.search(r"(^|\r)next-token: ", capsys.readouterr().err)
    trials = [json.loads(l) for l in (tmp_path / "n.jsonl").read_text().splitlines()[1:]]
    assert [(t["trial"], t["seed"], t["n_prefixes"], t["n_correct"]) for t in trials] == [
        (0, trial_seed(4, "next-token", 0), 3, 3), (1, trial_seed(4, "next-token", 1), 2, 2)]
    assert all(t["key"] == t["pair"] == str(t["trial"]) and t["status"] == "ok" for t in trials)   # one group each
    assert Settings.from_dict({"M": 3}) == Settings(M=3)


def test_results_are_named_and_seeded_per_metric_and_show_progress_by_default(tmp_path, capsys):
    import re

    from worldmodel.results import trial_seed

    log = TrialLog(tmp_path / "c.jsonl", {})
    res = compression(WORLD, TrueWorldModel(WORLD), FixedPairs(WORLD, COMP, DIST), settings(trials=3, M=2, seed=5),
                      log)
    assert res.name == "compression_precision" and re.search(r"(^|\r)compression: ", capsys.readouterr().err)
    assert [t["seed"] for t in log.trials()] == [trial_seed(5, "compression", i) for i in range(3)]
    world = ExplicitDFA([[1, 1, -1], [1, -1, 0]], TOKENS)
    seqs = [("a", "c"), ("a",)]
    assert next_token(world, TrueWorldModel(world), seqs, Settings(), progress=False).name == "next_token"
    per_seq = next_token(world, TrueWorldModel(world), [("a", "c"), ()], Settings(next_token_pooling="sequences"),
                         progress=False)
    assert per_seq.name == "next_token" and per_seq.mean == 1.0 and per_seq.n == 1 and per_seq.n_failed == 1
    none = probe(world, TrueWorldModel(world), seqs, Settings(), progress=False)
    assert none.name == "probe"


# ---------------------------------------------------------------------------
# distinction, probe and the trial runner: what their survivors of the mutation run could change
# ---------------------------------------------------------------------------


def _bar_segments(err: str, name: str) -> list[str]:
    """The successive states of the progress bar named ``name`` (tqdm redraws with carriage returns)."""
    return [seg for seg in err.replace("\n", "\r").split("\r") if seg.startswith(f"{name}: ")]


def test_a_finished_progress_bar_is_cleared_from_the_terminal(capsys):
    """The per-metric bar disappears when the metric is done (leave=False): a table follows, not stale bars."""
    compression(WORLD, TrueWorldModel(WORLD), FixedPairs(WORLD, COMP, DIST), settings(trials=3, M=2, seed=5))
    err = capsys.readouterr().err
    assert "compression: " in err and err.endswith("\r") and not err.endswith("\n")


def test_distinction_is_named_seeded_and_shows_progress_by_default(tmp_path, capsys):
    from worldmodel.results import trial_seed

    log = TrialLog(tmp_path / "d.jsonl", {})
    res = distinction(WORLD, TrueWorldModel(SPLIT), FixedPairs(WORLD, COMP, DIST), settings(trials=4, M=2, seed=3), log)
    assert res["distinction_precision"].name == "distinction_precision"
    assert res["distinction_recall"].name == "distinction_recall"
    assert [t["seed"] for t in log.trials()] == [trial_seed(3, "distinction", i) for i in range(4)]
    err = capsys.readouterr().err
    bars = _bar_segments(err, "distinction")
    assert bars and bars[0].startswith("distinction:   0%|") and " 0/4 " in bars[0]
    assert err.replace("\n", "\r").split("\r")[-1].strip() == ""          # the bar is cleared when done (leave=False)


def test_runner_progress_counts_resumed_trials_and_returns_only_the_trials_asked(tmp_path, capsys):
    log = TrialLog(tmp_path / "r.jsonl", {})
    compression(WORLD, TrueWorldModel(WORLD), FixedPairs(WORLD, COMP, DIST), settings(trials=3, M=2), log,
                progress=False)
    assert capsys.readouterr().err == ""                                  # progress=False: no bar at all
    again = TrialLog(tmp_path / "r.jsonl", {})
    res = compression(WORLD, TrueWorldModel(WORLD), FixedPairs(WORLD, COMP, DIST), settings(trials=5, M=2), again)
    bars = _bar_segments(capsys.readouterr().err, "compression")
    assert bars[0].startswith("compression:  60%|") and " 3/5 " in bars[0]
    assert res.n == 5
    fewer = TrialLog(tmp_path / "r.jsonl", {})                            # the log holds 5 trials; ask for 2
    res = compression(WORLD, TrueWorldModel(WORLD), FixedPairs(WORLD, COMP, DIST), settings(trials=2, M=2), fewer,
                      progress=False)
    assert res.n == 2


def test_distinction_recall_is_one_where_the_true_boundary_is_empty(tmp_path):
    """Two states with the same valid tokens differ only deeper than k: empty true boundary, recall 1."""
    # 0 -a-> 1, 0 -b-> 2; 1 -a-> 3; 2 -a-> 0; 3 -c-> 0: states 1 and 2 both allow only 'a' (k = 1 sees nothing)
    world = ExplicitDFA([[1, 2, -1], [3, -1, -1], [0, -1, -1], [-1, -1, 0]], TOKENS, name="deep")
    pairs = [(("a",), ("b",))]
    log = TrialLog(tmp_path / "e.jsonl", {})
    res = distinction(world, TrueWorldModel(world), FixedPairs(world, pairs, pairs),
                      Settings(M=5, k=1, trials=3, max_sample_len=1), log, progress=False)
    assert res["distinction_recall"].mean == 1.0 and res["distinction_recall"].n == 3
    assert all(t["true_boundary_size"] == 0 for t in log.trials())


def test_distinction_refuses_an_unknown_boundary_kind():
    s = Settings(M=2, k=1, trials=1)
    s.boundary = "guessed"
    with pytest.raises(Exception, match="boundary must be 'exact' or 'sampled', not 'guessed'"):
        distinction(WORLD, TrueWorldModel(WORLD), FixedPairs(WORLD, COMP, DIST), s, progress=False)


def test_a_capped_true_boundary_is_a_subset_drawn_without_replacement(tmp_path):
    """max_boundary keeps distinct suffixes: with one of four recalled, a trial's recall is 0 or 1/3, never 2/3."""
    tokens = ["a", "b", "c", "d", "e"]
    wide = ExplicitDFA([[1, 0, 0, 0, 0], [1, -1, -1, -1, -1]], tokens)
    # the model allows a, b after the first prefix and only a after the second: of b, c, d, e it recalls b only
    model = TrueWorldModel(ExplicitDFA([[1, 0, -1, -1, -1], [1, -1, -1, -1, -1]], tokens))
    pairs = [((), ("a",))]
    log = TrialLog(tmp_path / "cap.jsonl", {})
    distinction(wide, model, FixedPairs(wide, pairs, pairs), Settings(M=4, k=1, trials=40, max_sample_len=1,
                                                                      max_boundary=3), log, progress=False)
    recalls = [t["scores"]["distinction_recall"] for t in log.trials()]
    assert set(np.round(recalls, 6)) == {0.0, round(1 / 3, 6)}


class _OneHot(TrueWorldModel):
    """Hidden state = a one-hot of the true state after each prefix (an unknown state: zeros)."""

    has_hidden_states = True

    def __init__(self, world, noise=0.0, offset=0.0):
        super().__init__(world)
        self.noise, self.offset = noise, offset

    def hidden_states(self, sequences):
        r = np.random.default_rng(7)
        out = []
        for s in sequences:
            rows = []
            for j in range(len(s) + 1):
                q = run(self.world, s[:j])
                v = np.zeros(self.world.n_states)
                if isinstance(q, (int, np.integer)) and q >= 0:
                    v[q] = 1.0
                rows.append(v * 3.0 + self.offset + self.noise * r.normal(size=v.shape))
            out.append(np.stack(rows))
        return out


class _TwoTargets(ExplicitDFA):
    """Two probe targets per state (the state, and its parity), as numpy int8 (an int array of another width)."""

    def probe_targets(self, state):
        return np.array([state, state % 2], dtype=np.int8)


def _reference_probe(world, model, seqs, s):
    """The probe as its docstring defines it, written out step by step (the test's own copy of the spec)."""
    import math

    import torch

    from worldmodel.dfa import REJECT
    from worldmodel.results import trial_seed

    seqs = list(seqs)[: s.probe_sequences]
    feats, labels, owner = [], [], []
    for i, (seq, h) in enumerate(zip(seqs, model.hidden_states(seqs))):
        state = world.initial_state()
        for j, tok in enumerate(seq, 1):
            state = world.step(state, tok)
            if state is REJECT:
                break
            y = world.probe_targets(state)
            if y is not None:
                feats.append(h[j])
                labels.append([int(v) for v in y])
                owner.append(i)
    order = np.random.default_rng(trial_seed(s.seed, "probe", 0)).permutation(len(seqs))
    held = set(order[: max(1, len(seqs) // 5)].tolist())
    test = torch.tensor([o in held for o in owner])
    X = torch.tensor(np.stack(feats), dtype=torch.float32)
    Y = torch.tensor(labels, dtype=torch.int64)
    X = (X - X[~test].mean(0)) / (X[~test].std(0) + 1e-6)          # standardised by the training positions
    targets, classes = Y.shape[1], int(Y.max()) + 1
    torch.manual_seed(trial_seed(s.seed, "probe", 1))
    lin = torch.nn.Linear(X.shape[1], targets * classes)
    opt = torch.optim.Adam(lin.parameters(), lr=s.probe_lr)
    Xtr, Ytr = X[~test], Y[~test]
    for _ in range(s.probe_epochs):
        perm = torch.randperm(len(Xtr))
        for b in range(0, len(Xtr), s.probe_batch):
            idx = perm[b:b + s.probe_batch]
            loss = torch.nn.functional.cross_entropy(lin(Xtr[idx]).view(len(idx), targets, classes)
                                                     .reshape(-1, classes), Ytr[idx].reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
    with torch.no_grad():
        acc = float((lin(X[test]).view(int(test.sum()), targets, classes).argmax(-1) == Y[test]).float().mean())
    n = int(test.sum())
    return acc, math.sqrt(acc * (1 - acc) / n), n, len(held)


@pytest.mark.parametrize("noise,offset,n_seqs,epochs,batch", [(0.8, 0.0, 9, 3, 5), (1.5, 40.0, 23, 3, 5),
                                                            (1.5, 40.0, 23, 1, 4096), (0.5, 0.0, 31, 1, 5)])
def test_probe_is_exactly_the_documented_computation(noise, offset, n_seqs, epochs, batch):
    """Noisy features far from the origin: the probe's accuracy, error, count and split equal the spec's.

    After a single optimiser step the accuracy is nearly that of the initial linear map, which depends
    on every detail of its shape and seed (a class too many, another seed: another accuracy)."""
    world = _TwoTargets([[1, 2, -1], [3, -1, 0], [0, 3, -1], [-1, 1, 2]], TOKENS, name="two")
    rng = np.random.default_rng(5)
    seqs = [random_walk(world, 0, int(rng.integers(2, 9)), rng) for _ in range(n_seqs)]
    s = Settings(probe_epochs=epochs, probe_batch=batch, seed=2)
    got = probe(world, _OneHot(world, noise, offset), seqs, s, progress=False)
    acc, se, n, groups = _reference_probe(world, _OneHot(world, noise, offset), seqs, s)
    assert 0 < acc < 1
    assert (got.name, got.mean, got.stderr, got.n, got.n_failed, got.n_groups) == ("probe", acc, se, n, 0, groups)


def test_probe_skips_positions_without_targets_and_reads_the_rest_of_the_sequence():
    class Partial(ExplicitDFA):
        def probe_targets(self, state):
            return None if state == 1 else np.array([state])

    world = Partial([[1, 1, -1], [1, -1, 0]], TOKENS, name="partial")
    seqs = [("a", "c", "b", "c")] * 10                      # states 1 0 1 0: two positions with targets each
    res = probe(world, _OneHot(world), seqs, Settings(probe_epochs=1), progress=False)
    assert res.n == 2 * 2 and res.n_groups == 2              # two held-out sequences, both target positions


def test_probe_degenerate_results_are_complete():
    world = random_dfa(6, 3, 1)
    rng = np.random.default_rng(0)
    seqs = [random_walk(world, 0, 10, rng) for _ in range(6)]

    class NoTargets(ExplicitDFA):
        def probe_targets(self, state):
            return None

    cases = [probe(world, TrueWorldModel(world), seqs, Settings(), progress=False),
             probe(world, _OneHot(world), seqs[:1], Settings(), progress=False),
             probe(NoTargets(world.delta, world.tokens, name="blank"), _OneHot(world), seqs, Settings(),
                   progress=False)]
    for r in cases:
        assert r.name == "probe" and r.n == 0 and r.n_failed == 1 and r.n_groups == 0
        assert np.isnan(r.mean) and np.isnan(r.stderr) and sum(r.failures.values()) == 1


def test_probe_shows_progress_by_default_and_clears_it(capsys):
    world = random_dfa(6, 3, 1)
    rng = np.random.default_rng(0)
    seqs = [random_walk(world, 0, 10, rng) for _ in range(10)]
    probe(world, _OneHot(world), seqs, Settings(probe_epochs=4))
    err = capsys.readouterr().err
    bars = _bar_segments(err, "probe")
    assert bars and " 0/4 " in bars[0]
    assert err.replace("\n", "\r").split("\r")[-1].strip() == ""
    probe(world, _OneHot(world), seqs, Settings(probe_epochs=4), progress=False)
    assert capsys.readouterr().err == ""


def test_probe_trains_on_the_models_device(monkeypatch):
    """Every tensor and the regression go to ``model.device`` (on a CPU-only machine: recorded, not seen)."""
    import torch

    world = random_dfa(6, 3, 1)
    rng = np.random.default_rng(0)
    seqs = [random_walk(world, 0, 10, rng) for _ in range(10)]
    moved = []
    real_tensor_to, real_module_to = torch.Tensor.to, torch.nn.Module.to

    def tensor_to(self, *args, **kwargs):
        moved.append(("tensor", args[0] if args else kwargs.get("device")))
        return real_tensor_to(self, *args, **kwargs)

    def module_to(self, *args, **kwargs):
        moved.append(("module", args[0] if args else kwargs.get("device")))
        return real_module_to(self, *args, **kwargs)

    model = _OneHot(world)
    model.device = "cpu:0"                     # a device spelled with its index: it must be used as given
    monkeypatch.setattr(torch.Tensor, "to", tensor_to)
    monkeypatch.setattr(torch.nn.Module, "to", module_to)
    probe(world, model, seqs, Settings(probe_epochs=2), progress=False)
    monkeypatch.undo()
    assert ("module", torch.device("cpu:0")) in moved
    assert sum(1 for kind, d in moved if kind == "tensor") >= 3 + 2      # X, Y, the test mask, a batch order per epoch
    assert all(d == torch.device("cpu:0") for _, d in moved), moved
    model.device = None                        # no device declared: the CPU
    moved.clear()
    monkeypatch.setattr(torch.Tensor, "to", tensor_to)
    monkeypatch.setattr(torch.nn.Module, "to", module_to)
    probe(world, model, seqs, Settings(probe_epochs=1), progress=False)
    monkeypatch.undo()
    assert moved and all(d == torch.device("cpu") for _, d in moved)


def test_probe_standardises_each_feature_on_its_own_training_positions():
    """A one-hot state beside a pure-noise feature 1000 times larger, and a state that only held-out
    sequences visit: standardised per feature, the probe still reads the state off perfectly."""
    from worldmodel.results import trial_seed

    world = ExplicitDFA([[1, 1, 2], [1, 0, -1], [0, 1, -1]], TOKENS, name="rare")

    class Loud(_OneHot):
        def hidden_states(self, sequences):
            r = np.random.default_rng(3)
            return [np.concatenate([h, 1000.0 * r.normal(size=(len(h), 1))], axis=1)
                    for h in super().hidden_states(sequences)]

    n = 20
    held = set(np.random.default_rng(trial_seed(0, "probe", 0)).permutation(n)[: n // 5].tolist())
    rng = np.random.default_rng(1)
    seqs = []
    for i in range(n):           # state 2 ('c' from state 0) appears in held-out sequences only
        s = [str(rng.choice(["a", "b"])) for _ in range(6)]
        seqs.append(tuple(["c", "a"] + s if i in held else ["a", "b"] + s))
    seqs = [tuple(t for t in s) for s in seqs]
    res = probe(world, Loud(world), seqs, Settings(probe_epochs=40), progress=False)
    ref = _reference_probe(world, Loud(world), seqs, Settings(probe_epochs=40))
    assert (res.mean, res.stderr, res.n, res.n_groups) == ref
    assert res.n_groups == len(held)


def test_compression_and_distinction_run_in_the_models_waves():
    """A model that takes waves of 8 trials gets one sampling call per 8 trials, whatever batch_trials is."""
    calls = []

    class Waves(TrueWorldModel):
        wave_trials = 8

        def sample_contrast(self, prefixes, *args, **kwargs):
            calls.append(len(prefixes))
            return super().sample_contrast(prefixes, *args, **kwargs)

    s = settings(trials=16, M=2, batch_trials=2)
    compression(WORLD, Waves(WORLD), FixedPairs(WORLD, COMP, DIST), s, progress=False)
    assert calls == [8, 8]
    calls.clear()
    distinction(WORLD, Waves(WORLD), FixedPairs(WORLD, COMP, DIST), s, progress=False)
    assert calls == [8, 8]


def test_the_registered_run_functions_pass_the_context_through(tmp_path, capsys):
    """run_compression / run_distinction / run_next_token / run_probe: the domain's sampler and data, the
    context's settings and progress, the log given, and their result keys."""
    from worldmodel.api.metric import MetricContext
    from worldmodel.metrics import run_compression, run_distinction, run_next_token, run_probe
    from worldmodel.results import trial_seed

    world = random_dfa(6, 3, 1)
    rng = np.random.default_rng(0)
    split = {"test": [random_walk(world, 0, 6, rng) for _ in range(4)],
             "train": [random_walk(world, 0, 10, rng) for _ in range(10)]}
    asked = []

    class Domain:
        def sampler(self):
            return FixedPairs(WORLD, COMP, DIST)

        def sequences(self, name, dataset, data_dir):
            asked.append((name, dataset, data_dir))
            return split[name]

    def ctx(model, w, progress):
        return MetricContext(None, Domain(), w, model, Settings(M=2, trials=3, seed=9, probe_epochs=2), "ds",
                             tmp_path / "data", progress)

    log = TrialLog(tmp_path / "c.jsonl", {})
    got = run_compression(ctx(TrueWorldModel(WORLD), WORLD, False), log)
    assert list(got) == ["compression_precision"] and got["compression_precision"].n == 3
    assert [t["seed"] for t in log.trials()] == [trial_seed(9, "compression", i) for i in range(3)]
    assert capsys.readouterr().err == ""
    run_compression(ctx(TrueWorldModel(WORLD), WORLD, True), None)
    assert _bar_segments(capsys.readouterr().err, "compression")
    got = run_distinction(ctx(TrueWorldModel(SPLIT), WORLD, True), None)
    assert list(got) == ["distinction_precision", "distinction_recall"]
    assert got["distinction_precision"].n == got["distinction_recall"].n == 3
    assert _bar_segments(capsys.readouterr().err, "distinction")
    dlog = TrialLog(tmp_path / "d.jsonl", {})
    run_distinction(ctx(TrueWorldModel(WORLD), WORLD, False), dlog)
    assert len(dlog.trials()) == 3 and capsys.readouterr().err == ""
    got = run_next_token(ctx(TrueWorldModel(world), world, False), None)
    assert list(got) == ["next_token"] and got["next_token"].mean == 1.0 and capsys.readouterr().err == ""
    assert got["next_token"].n == 3 and asked[-1] == ("test", "ds", tmp_path / "data")
    nlog = TrialLog(tmp_path / "n.jsonl", {})
    run_next_token(ctx(TrueWorldModel(world), world, True), nlog)
    assert len(nlog.trials()) == 3 and _bar_segments(capsys.readouterr().err, "next-token")
    got = run_probe(ctx(_OneHot(world), world, True))
    assert list(got) == ["probe"] and got["probe"].n > 0 and asked[-1] == ("train", "ds", tmp_path / "data")
    err = capsys.readouterr().err
    assert _bar_segments(err, "probe") and "\n" not in err      # shown, then cleared when done (leave=False)
    run_probe(ctx(_OneHot(world), world, False))
    assert capsys.readouterr().err == ""


class _LacksC(TrueWorldModel):
    """The true world's model, but declaring that its vocabulary lacks the world token ``c``."""

    missing_tokens = frozenset({"c"})


def test_a_model_lacking_a_token_skips_prefixes_that_hold_it_and_scores_positions_up_to_it(tmp_path):
    """Compression and distinction skip a pair whose prefix holds the missing token, naming it; the
    next-token test scores each held-out sequence up to and including the position before it."""
    why = "prefix holds 'c', a world token the model lacks"
    got = compression(WORLD, _LacksC(WORLD), FixedPairs(WORLD, COMP, DIST), settings(trials=3), progress=False)
    assert (got.n, got.n_failed, got.failures) == (2, 1, {why: 1})
    got = distinction(WORLD, _LacksC(WORLD), FixedPairs(WORLD, COMP, DIST), settings(trials=3), progress=False)
    assert got["distinction_recall"].n_failed == 3 and got["distinction_recall"].failures == {why: 3}
    log = TrialLog(tmp_path / "nt.jsonl", {})
    seqs = [["a", "a", "c", "b"], ["b", "a", "a"]]       # 'c' at index 2: positions 0, 1, 2 are scored
    next_token(WORLD, _LacksC(WORLD), seqs, settings(trials=2, next_token_positions="all"), log, progress=False)
    assert [t["n_prefixes"] for t in log.trials()] == [3, 3]


class _KeptTop(TrueWorldModel):
    """The true world's model whose contrast samples report that ``keep_top`` was used in two of them."""

    def sample_contrast(self, *args, **kw):
        from worldmodel.models import SampleGroup

        return [SampleGroup(g, kept_top=2) for g in super().sample_contrast(*args, **kw)]


def test_each_trial_records_how_many_samples_used_keep_top(tmp_path):
    for metric, name in ((compression, "c"), (distinction, "d")):
        log = TrialLog(tmp_path / f"{name}.jsonl", {})
        metric(WORLD, _KeptTop(WORLD), FixedPairs(WORLD, COMP, DIST), settings(trials=3), log, progress=False)
        assert [t["kept_top"] for t in log.trials()] == [2, 2, 2], metric.__name__
