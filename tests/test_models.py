"""Model adapters: KV-cache scoring against naive scoring, sampling, checkpoints."""


import numpy as np
import pytest
import torch

from worldmodel.acceptance import Epsilon, TopK
from worldmodel.dfa import ExplicitDFA, is_valid, random_dfa
from worldmodel.errors import WorldModelError
from worldmodel.models import HFModel, TrueWorldModel, Vocabulary

from scorehelp import worst_scoring_gap


@pytest.fixture(scope="module")
def world():
    return random_dfa(8, 4, 3)


@pytest.fixture(scope="module")
def model(world):
    return HFModel.untrained(Vocabulary(world.tokens), dict(n_layer=2, n_embd=32, n_head=2, n_positions=64), seed=1)


@pytest.mark.parametrize("trie_max_len", [16, 0], ids=["trie", "padded"])
def test_kv_cache_scoring_matches_naive(world, model, trie_max_len, monkeypatch):
    monkeypatch.setattr(model, "trie_max_len", trie_max_len)
    assert worst_scoring_gap(model, world) < 1e-5


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


# -- the lean GPT-2 forward (worldmodel.models.lean) against transformers' own ------------------------

def _gpt2(seed=0, **cfg):
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(seed)
    base = dict(vocab_size=11, n_positions=40, n_embd=24, n_layer=2, n_head=3, resid_pdrop=0.0, embd_pdrop=0.0,
                attn_pdrop=0.0)
    model = GPT2LMHeadModel(GPT2Config(**{**base, **cfg})).eval()
    with torch.no_grad():  # LayerNorms away from their initial 1/0, so they are really exercised
        for name, p in model.named_parameters():
            if "ln" in name:
                p.add_(0.3 * torch.randn_like(p))
    return model


def _hf_logits(model, ids, mask):
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad():
        return model(input_ids=ids, attention_mask=mask, position_ids=pos).logits


@pytest.mark.parametrize("cfg", [
    {},
    {"activation_function": "gelu_new", "layer_norm_epsilon": 1e-3},
    {"activation_function": "relu", "n_inner": 40},
    {"activation_function": "gelu_pytorch_tanh", "tie_word_embeddings": False},
], ids=["default", "gelu_new-eps", "relu-inner", "untied"])
def test_lean_forward_matches_transformers_on_padded_batches(cfg):
    from worldmodel.models.lean import LeanGPT2

    model = _gpt2(**cfg)
    lean = LeanGPT2.wrap(model)
    assert lean is not None
    rng = np.random.default_rng(1)
    lens = [9, 3, 1, 7]
    S = max(lens)
    ids = torch.zeros((len(lens), S), dtype=torch.long)
    for side in ("left", "right"):
        mask = torch.zeros_like(ids)
        for r, n in enumerate(lens):
            cols = slice(S - n, S) if side == "left" else slice(0, n)
            ids[r, cols] = torch.as_tensor(rng.integers(1, 11, n))
            mask[r, cols] = 1
        ref = _hf_logits(model, ids, mask)
        with torch.no_grad():
            got, kv = lean.full(ids, mask)
        real = mask.bool()
        assert (got[real] - ref[real]).abs().max() < 1e-5, side
        assert len(kv) == 2 and kv[0][0].shape == (4, 3, S, 8)


@pytest.mark.parametrize("reserve", [(0, 0), (12, 16)], ids=["grown", "reserved"])
def test_lean_decoding_state_matches_transformers_step_by_step(reserve):
    """Shared prefixes, rows that branch, end and repeat, one token and blocks of tokens at a time.

    Reserved: one allocation of 16 slots and 12 tokens, live rows gathered into it in place.
    """
    from worldmodel.models.lean import LeanGPT2, LeanState

    model = _gpt2(seed=3)
    lean = LeanGPT2.wrap(model)
    rng = np.random.default_rng(2)
    prefixes = [[1, 4, 5, 6, 2], [1, 3], [1, 7, 7], [1, 4, 5, 6, 2]]  # the last repeats the first
    histories = [list(p) for p in prefixes]
    with torch.no_grad():
        state, last = LeanState.start(lean, prefixes, 0, 40, "cpu")
        state.reserve, state.reserve_rows = reserve
        stores = set()
        for r, p in enumerate(prefixes):
            ref = _hf_logits(model, torch.tensor([p]), torch.ones((1, len(p)), dtype=torch.long))[0, -1]
            assert (last[r] - ref).abs().max() < 1e-5
        for step in range(7):
            n = len(histories)
            # each row ends, continues, or branches in two (the decoder's trie)
            idx = [r for r in range(n) for _ in range(int(rng.choice([0, 1, 1, 2]) if n > 1 else 2))][:12]
            idx = idx or [0]
            state = state.rows(torch.tensor(idx))
            histories = [list(histories[r]) for r in idx]
            width = 1 if step != 4 else 3  # a block of three tokens once
            feed = rng.integers(1, 11, (len(idx), width))
            out = state.feed(torch.as_tensor(feed))
            stores.add(state.store.data_ptr())
            for r, h in enumerate(histories):
                h.extend(int(x) for x in feed[r])
                ref = _hf_logits(model, torch.tensor([h]), torch.ones((1, len(h)), dtype=torch.long))[0, -width:]
                assert (out[r] - ref).abs().max() < 1e-5, (step, r)
        if reserve[1]:
            assert len(stores) == 1  # never a second allocation


def test_lean_forward_is_used_only_where_it_computes_the_same_function():
    from transformers import GPT2LMHeadModel

    from worldmodel.models.lean import LeanGPT2

    assert LeanGPT2.wrap(_gpt2()) is not None
    for cfg in ({"scale_attn_by_inverse_layer_idx": True}, {"reorder_and_upcast_attn": True},
                {"scale_attn_weights": False}, {"add_cross_attention": True}):
        assert LeanGPT2.wrap(_gpt2(**cfg)) is None, cfg

    class Custom(GPT2LMHeadModel):
        pass

    assert LeanGPT2.wrap(Custom(_gpt2().config)) is None
    assert LeanGPT2.wrap(torch.nn.Linear(2, 2)) is None


def test_engine_gives_the_same_answers_with_the_lean_forward_and_with_transformers(world):
    vocab = Vocabulary(world.tokens)
    lean = HFModel.untrained(vocab, dict(n_layer=2, n_embd=32, n_head=2, n_positions=64), seed=4)
    plain = HFModel(lean.model, vocab, lean=False)
    assert lean.lean is not None and plain.lean is None
    rng = np.random.default_rng(3)
    p1 = [("t0",), ("t1", "t2"), (), ("t3", "t3", "t1"), ("t0",)]
    p2 = [("t2", "t2", "t2"), ("t0",), ("t1",), (), ("t1",)]
    us = [rng.random((10, int(n))) for n in (6, 9, 4, 7, 5)]
    rule = Epsilon(0.12)
    for halt in (False, True):
        assert lean.sample_contrast(p1, p2, us, rule, halt_on_reject=halt) == \
            plain.sample_contrast(p1, p2, us, rule, halt_on_reject=halt)
    suffixes = [[tuple(rng.choice(world.tokens, size=int(rng.integers(1, 20)))) for _ in range(4)] for _ in p1]
    for trie_max_len in (16, 0):
        lean.trie_max_len = plain.trie_max_len = trie_max_len
        for a, b in zip(lean.score(p1, suffixes, rule), plain.score(p1, suffixes, rule)):
            for x, y in zip(a, b):
                assert np.abs(x.probs - y.probs).max() < 1e-5 and (x.accepted == y.accepted).all()


def test_lean_prefix_memo_never_outlives_a_change_of_weights(world):
    """The lean state keeps the last call's prefixes; writing the weights (training) must not reuse them."""
    m = HFModel.untrained(Vocabulary(world.tokens), dict(n_layer=1, n_embd=16, n_head=2, n_positions=32), seed=5)
    prefixes, sufs = [("t0", "t1"), ("t2",)], [[("t3", "t0")], [("t1",)]]
    before = m.score(prefixes, sufs, Epsilon())
    assert m.score(prefixes, sufs, Epsilon())[0][0].probs.tolist() == before[0][0].probs.tolist()
    with torch.no_grad():
        m.model.transformer.h[0].mlp.c_fc.weight.mul_(3.0)
    after = m.score(prefixes, sufs, Epsilon())
    fresh = HFModel(m.model, m.vocab).score(prefixes, sufs, Epsilon())
    assert after[0][0].probs.tolist() == fresh[0][0].probs.tolist()
    assert np.abs(after[0][0].probs - before[0][0].probs).max() > 1e-4


def test_decoding_waves_follow_the_memory_budget_and_never_change_an_answer(world, model):
    """Fewer prefixes per wave where their cache would pass ``wave_bytes``; the samples are the same."""
    rng = np.random.default_rng(5)
    p1 = [("t0",), ("t1", "t2"), (), ("t3", "t3", "t1"), ("t2",), ("t1",)]
    p2 = [("t2", "t2", "t2"), ("t0",), ("t1",), (), ("t0", "t0"), ("t3",)]
    us = [rng.random((8, 6)) for _ in p1]
    rule = Epsilon(0.15)
    per_token = model._kv_bytes_per_token()
    assert per_token == 2 * 2 * 32 * 4  # keys and values, 2 layers, 32 wide, float32
    per_prefix = 2 * 8 * 2 * 7 * per_token  # twin rows, 8 samples, 6 tokens and the summary slot, twice
    budget, cap = model.wave_bytes, model.wave_prefixes
    try:
        model.wave_bytes = 10 ** 12
        whole = model.sample_contrast(p1, p2, us, rule)
        assert model._decode_chunk(p1, us, True) == len(p1)
        model.wave_prefixes = 4
        assert model._decode_chunk(p1, us, True) == 4
        model.wave_bytes = 2 * per_prefix + per_prefix // 2
        assert model._decode_chunk(p1, us, True) == 2 and model._decode_chunk(p1, us, False) == 4
        model.wave_bytes = 1
        assert model._decode_chunk(p1, us, True) == 1  # always at least one prefix
        assert model.sample_contrast(p1, p2, us, rule) == whole
        model.wave_bytes = 2 * per_prefix
        assert model.sample_contrast(p1, p2, us, rule) == whole
    finally:
        model.wave_bytes, model.wave_prefixes = budget, cap


def test_a_reserved_lean_buffer_is_allocated_once():
    """With ``reserve`` the continuation buffer never grows (no copies), and the logits are the same."""
    from worldmodel.models.lean import LeanGPT2, LeanState

    lean = LeanGPT2.wrap(_gpt2(seed=6))
    prefixes = [[1, 4, 5], [1, 3]]
    feed = torch.as_tensor(np.random.default_rng(1).integers(1, 11, (2, 20)))
    outs, buffers = [], []
    with torch.no_grad():
        for reserve in (0, 20):
            state, _ = LeanState.start(lean, prefixes, 0, 40, "cpu")
            state.reserve = reserve
            state = state.rows(torch.tensor([0, 1]))
            seen, out = set(), []
            for j in range(20):
                out.append(state.feed(feed[:, j:j + 1]))
                seen.add(state.buf.data_ptr())
                state = state.rows(torch.tensor([0, 1]))
            outs.append(torch.cat(out, 1))
            buffers.append(len(seen))
    assert buffers == [2, 1]  # 16 tokens, then regrown once; reserved: one buffer throughout
    assert (outs[0] - outs[1]).abs().max() < 1e-6
