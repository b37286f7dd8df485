"""Model adapters: KV-cache scoring against naive scoring, sampling, checkpoints."""


import numpy as np
import pytest
import torch

from worldmodel.acceptance import Epsilon, TopK
from worldmodel.dfa import ExplicitDFA, is_valid, random_dfa
from worldmodel.errors import WorldModelError
from worldmodel.models import HFModel, TrueWorldModel, Vocabulary


@pytest.fixture(scope="module")
def world():
    return random_dfa(8, 4, 3)


@pytest.fixture(scope="module")
def model(world):
    return HFModel.untrained(Vocabulary(world.tokens), dict(n_layer=2, n_embd=32, n_head=2, n_positions=64), seed=1)


def naive_probs(model, prefix, suffix):
    """Full-sequence forward pass, one sequence at a time: the reference."""
    ids = torch.tensor([model.vocab.encode(list(prefix) + list(suffix))])
    with torch.no_grad():
        p = torch.softmax(model.model(ids).logits[0].double(), -1)
    return np.array([float(p[len(prefix) + j, model.vocab.stoi[t]]) for j, t in enumerate(suffix)])


@pytest.mark.parametrize("trie_max_len", [16, 0], ids=["trie", "padded"])
def test_kv_cache_scoring_matches_naive(world, model, trie_max_len, monkeypatch):
    monkeypatch.setattr(model, "trie_max_len", trie_max_len)
    rng = np.random.default_rng(0)
    toks = world.tokens
    prefixes = [tuple(rng.choice(toks, size=n)) for n in (0, 1, 5, 12, 3)]
    suffixes = [[tuple(rng.choice(toks, size=int(rng.integers(1, 9)))) for _ in range(int(rng.integers(1, 6)))]
                for _ in prefixes]
    scored = model.score(prefixes, suffixes, Epsilon(0.2))
    worst = 0.0
    for p, group, res in zip(prefixes, suffixes, scored):
        for s, sc in zip(group, res):
            ref = naive_probs(model, p, s)
            worst = max(worst, float(np.abs(ref - sc.probs).max()))
            assert sc.accepted.tolist() == (ref > 0.2).tolist() or np.abs(ref - 0.2).min() < 1e-5
    assert worst < 1e-5


def test_prefix_probs_and_next_token_probs_agree(world, model):
    seqs = [("t0", "t1", "t2"), ("t3",), ()]
    full = model.prefix_probs(seqs)
    for s, rows in zip(seqs, full):
        assert rows.shape == (len(s) + 1, len(world.tokens))
        direct = model.next_token_probs([s[:j] for j in range(len(s) + 1)])
        assert np.allclose(rows, direct, atol=1e-5)


def test_sampling_follows_acceptance_and_is_batch_independent(world, model):
    rng = np.random.default_rng(5)
    prefixes = [("t0",), ("t1", "t2", "t3", "t0"), ()]
    us = [rng.random((6, 7)) for _ in prefixes]
    rule = TopK(2)
    together = model.sample(prefixes, us, rule)
    alone = [model.sample([p], [u], rule)[0] for p, u in zip(prefixes, us)]
    assert together == alone
    scored = model.score(prefixes, together, rule)
    for group, res in zip(together, scored):
        for s, sc in zip(group, res):
            assert len(s) == 7 and sc.all_accepted()


def test_true_world_model_samples_valid_continuations(world):
    m = TrueWorldModel(world)
    rng = np.random.default_rng(0)
    samples = m.sample([()], [rng.random((20, 10))], Epsilon())
    assert all(is_valid(world, s) and len(s) == 10 for s in samples[0])
    probs = m.next_token_probs([()])[0]
    valid = set(world.valid_tokens(world.initial_state()))
    assert {t for t, p in zip(world.tokens, probs) if p > 0} == valid


def test_stop_tokens_end_samples():
    dfa = ExplicitDFA([[1, -1], [1, 2], [-1, -1]], ["go", "end"])
    m = TrueWorldModel(dfa)
    out = m.sample([("go",)], [np.full((1, 50), 0.99)], Epsilon(), frozenset({"end"}))
    assert out[0][0] == ("end",)


def test_checkpoint_round_trip_and_errors(tmp_path, world, model):
    model.save_pretrained(tmp_path / "ck")
    again = HFModel.from_pretrained(tmp_path / "ck", world)
    p = [("t0", "t1")]
    assert np.allclose(again.next_token_probs(p), model.next_token_probs(p), atol=1e-6)
    other = random_dfa(5, ["x", "y"], 0)
    with pytest.raises(WorldModelError, match="does not match"):
        HFModel.from_pretrained(tmp_path / "ck", other)
    with pytest.raises(WorldModelError, match="does not exist"):
        HFModel.from_pretrained(tmp_path / "nope", world)
    # truncated weights file
    weights = next((tmp_path / "ck").glob("*.safetensors"))
    weights.write_bytes(weights.read_bytes()[:100])
    with pytest.raises(WorldModelError, match="incomplete or corrupt"):
        HFModel.from_pretrained(tmp_path / "ck", world)
    (tmp_path / "ck" / "vocab.json").write_text("{not json")
    with pytest.raises(WorldModelError, match="malformed"):
        HFModel.from_pretrained(tmp_path / "ck", world)


def test_vocabulary_rejects_unknown_tokens():
    v = Vocabulary(["a", "b"])
    assert v.encode(["a", "b"]) == [1, 2, 3]
    with pytest.raises(WorldModelError, match="'z'"):
        v.encode(["a", "z"])


def test_mixed_lengths_fit_the_context_row_by_row(world):
    """A long prefix with a short continuation beside a short prefix with a long one."""
    m = HFModel.untrained(Vocabulary(world.tokens), dict(n_layer=1, n_embd=16, n_head=2, n_positions=20), seed=0)
    long_p, short_p = tuple(["t0"] * 16), ("t1",)
    rng = np.random.default_rng(0)
    out = m.sample([long_p, short_p], [rng.random((3, 3)), rng.random((3, 18))], TopK(2))
    assert [len(x) for x in out[0]] == [3, 3, 3] and [len(x) for x in out[1]] == [18] * 3
    scored = m.score([long_p, short_p], [[("t0",) * 4], [("t1",) * 19]], TopK(2))
    assert len(scored[1][0].probs) == 19
    with pytest.raises(WorldModelError, match="longer than the model's context"):
        m.sample([long_p], [rng.random((1, 6))], TopK(2))


def test_lock_step_contrast_equals_sample_then_score(world, model):
    """HFModel's lock-step decoding gives the same samples and verdicts as sampling, then scoring."""
    from worldmodel.models import SequenceModel

    rng = np.random.default_rng(9)
    p1 = [("t0",), ("t1", "t2"), (), ("t3", "t3", "t1")]
    p2 = [("t2", "t2", "t2"), ("t0",), ("t1",), ()]
    us = [rng.random((8, int(n))) for n in (6, 9, 4, 7)]
    rule = Epsilon(0.15)
    fast = model.sample_contrast(p1, p2, us, rule)
    slow = SequenceModel.sample_contrast(model, p1, p2, us, rule)
    assert fast == slow
    assert any(j is not None for g in fast for _, j in g) and any(j is None for g in fast for _, j in g)
    # halting a group after its first rejection never changes whether the group had one
    halted = model.sample_contrast(p1, p2, us, rule, halt_on_reject=True)
    for a, b in zip(fast, halted):
        assert any(j is not None for _, j in a) == any(j is not None for _, j in b)


def test_cache_keyword_follows_the_installed_release():
    """transformers 5.0–5.23 take ``past_key_values``; 5.24+ ``cache``: the adapter reads which."""
    from worldmodel.models.hf import cache_keyword

    class Old(torch.nn.Module):
        def forward(self, input_ids=None, past_key_values=None, use_cache=None):
            return input_ids

    class New(torch.nn.Module):
        def forward(self, input_ids=None, cache=None, use_cache=None):
            return input_ids

    assert cache_keyword(Old()) == "past_key_values"
    assert cache_keyword(New()) == "cache"
    import transformers
    from transformers import GPT2Config, GPT2LMHeadModel

    gpt = GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=8, n_head=1, vocab_size=5))
    major, minor = (int(x) for x in transformers.__version__.split(".")[:2])
    assert cache_keyword(gpt) == ("cache" if (major, minor) >= (5, 24) else "past_key_values")
