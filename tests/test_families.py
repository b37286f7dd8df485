"""Model families (GPT-2, LSTM, GRU, Mamba): the recurrent engine against full forward passes,
checkpoints, training, the [model] keys, and every metric on each family."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from worldmodel.acceptance import Epsilon
from worldmodel.dfa import random_dfa
from worldmodel.errors import WorldModelError
from worldmodel.models import HFModel, SequenceModel, Vocabulary
from worldmodel.models.families import build_network, load_network, network_family, parameter_count
from worldmodel.models.recurrent import RecurrentState

from scorehelp import worst_scoring_gap

CFGS = {
    "lstm": dict(family="lstm", n_layer=2, n_embd=16, n_hidden=24),
    "gru": dict(family="gru", n_layer=2, n_embd=16),
    "mamba": dict(family="mamba", n_layer=2, n_embd=16, d_state=8),
}
RECURRENT = list(CFGS)


@pytest.fixture(scope="module")
def world():
    return random_dfa(8, 4, 3)


@pytest.fixture(scope="module", params=RECURRENT)
def model(request, world):
    return HFModel.untrained(Vocabulary(world.tokens), CFGS[request.param], seed=1)


def full_logits(model, ids):
    with torch.no_grad():
        return model.model(input_ids=ids).logits.float()


def test_each_family_gets_its_engine(world):
    kinds = {}
    for fam, cfg in {**CFGS, "gpt2": dict(n_layer=1, n_embd=16, n_head=2, n_positions=32)}.items():
        m = HFModel.untrained(Vocabulary(world.tokens), cfg, seed=0)
        kinds[fam] = (network_family(m.model), type(m.recurrent).__name__, m.lean is not None)
        assert parameter_count(len(m.vocab), cfg) == sum(p.numel() for p in m.model.parameters())
    assert kinds == {"lstm": ("lstm", "RecurrentLM", False), "gru": ("gru", "RecurrentLM", False),
                     "mamba": ("mamba", "LeanMamba", False), "gpt2": ("gpt2", "NoneType", True)}


def test_recurrent_state_logits_match_a_full_forward_pass(model):
    """Prefixes of mixed lengths run packed, then branched rows fed one and several tokens: 1e-5."""
    g = torch.Generator().manual_seed(0)
    V = len(model.vocab)
    seqs = [[1] + torch.randint(2, V, (n,), generator=g).tolist() for n in (0, 3, 9, 5)]
    conts = [torch.randint(2, V, (7,), generator=g).tolist() for _ in seqs]
    state, last = RecurrentState.start(model.recurrent, seqs, model.vocab.pad_id, "cpu")
    worst = 0.0
    for r, (s, c) in enumerate(zip(seqs, conts)):
        ref = full_logits(model, torch.tensor([s + c]))[0]
        worst = max(worst, float((last[r] - ref[len(s) - 1]).abs().max()))
    # branch: every row twice (as a trie node with two children), one token, then three at once
    idx = torch.tensor([0, 0, 1, 1, 2, 2, 3, 3])
    st = state.rows(idx)
    one = st.feed(torch.tensor([[conts[i][0]] for i in idx.tolist()]))
    more = st.feed(torch.tensor([conts[i][1:4] for i in idx.tolist()]))
    for row, i in enumerate(idx.tolist()):
        ref = full_logits(model, torch.tensor([seqs[i] + conts[i]]))[0]
        n = len(seqs[i])
        worst = max(worst, float((one[row, 0] - ref[n]).abs().max()), float((more[row] - ref[n + 1:n + 4]).abs().max()))
    assert worst < 1e-5, worst


@pytest.mark.parametrize("trie_max_len", [16, 0], ids=["trie", "padded"])
def test_engine_scoring_matches_naive_scoring(world, model, trie_max_len, monkeypatch):
    monkeypatch.setattr(model, "trie_max_len", trie_max_len)
    assert worst_scoring_gap(model, world) < 1e-5


def test_lock_step_sampling_equals_sample_then_score(world, model):
    rng = np.random.default_rng(4)
    toks = world.tokens
    prefixes = [tuple(rng.choice(toks, size=n)) for n in (2, 6, 0, 4)]
    others = [tuple(rng.choice(toks, size=n)) for n in (3, 1, 5, 4)]
    us = [rng.random((30, 12)) for _ in prefixes]
    for halt in (False, True):
        got = model.sample_contrast(prefixes, others, us, Epsilon(0.1), halt_on_reject=halt)
        if not halt:
            ref = SequenceModel.sample_contrast(model, prefixes, others, us, Epsilon(0.1))
            assert [list(g) for g in got] == [list(r) for r in ref]
        assert all(len(g) == 30 for g in got)
    # batching never changes a sample
    one = model.sample(prefixes[1:2], us[1:2], Epsilon(0.1))
    assert list(one[0]) == list(model.sample(prefixes, us, Epsilon(0.1))[1])


def test_prefix_probs_hidden_states_and_next_token_probs_agree(model):
    seqs = [("t0", "t1", "t2"), ("t3",), ()]
    for s, rows, h in zip(seqs, model.prefix_probs(seqs), model.hidden_states(seqs)):
        assert rows.shape == (len(s) + 1, 4) and h.shape[0] == len(s) + 1 and np.isfinite(h).all()
        assert np.allclose(rows, model.next_token_probs([s[:j] for j in range(len(s) + 1)]), atol=1e-6)


def test_a_model_without_bos_reads_its_first_token_as_context(world):
    vocab = Vocabulary.from_ids({t: i + 1 for i, t in enumerate(world.tokens)}, 5, bos_id=None, pad_id=0)
    torch.manual_seed(0)
    m = HFModel(build_network(vocab, CFGS["lstm"]), vocab)
    assert m.context_tokens == 1
    with pytest.raises(WorldModelError, match="no BOS"):
        m.next_token_probs([()])
    got = m.score([("t1",)], [[("t0", "t2")]], Epsilon())[0][0].probs
    ref = torch.softmax(full_logits(m, torch.tensor([[2, 1, 3]]))[0].double(), -1)
    assert np.allclose(got, [float(ref[0, 1]), float(ref[1, 3])], atol=1e-6)
    assert np.isnan(m.hidden_states([("t1", "t2")])[0][0]).all()


def test_waves_of_a_recurrent_model_follow_its_state_size(world, model):
    us = [np.zeros((30, 20))] * 200
    assert model._decode_chunk([("t0",)] * 200, us, check=True) == model.wave_prefixes
    model.wave_bytes = 2 * 60 * model.recurrent.state_bytes() * 3
    assert model._decode_chunk([("t0",)] * 200, us, check=True) == 3
    model.wave_bytes = 1 << 30


def test_checkpoints_round_trip(tmp_path, world, model):
    model.save_pretrained(tmp_path / "ck")
    back = HFModel.from_pretrained(tmp_path / "ck", world)
    assert type(back.model) is type(model.model) and type(back.recurrent) is type(model.recurrent)
    ids = torch.tensor([[1, 2, 3, 4, 5]])
    assert torch.equal(full_logits(back, ids), full_logits(model, ids))


def test_recurrent_folders_are_checked(tmp_path, world):
    m = HFModel.untrained(Vocabulary(world.tokens), CFGS["lstm"], seed=0)
    m.save_pretrained(tmp_path / "a")
    cfg = (tmp_path / "a" / "config.json").read_text()
    (tmp_path / "a" / "config.json").write_text(cfg.replace('"num_layers": 2', '"num_layers": 3'))
    with pytest.raises(WorldModelError, match="do not match"):
        load_network(tmp_path / "a")
    (tmp_path / "a" / "config.json").write_text(cfg.replace('"dropout"', '"dropuot"'))
    with pytest.raises(WorldModelError, match="unknown recurrent config"):
        load_network(tmp_path / "a")
    (tmp_path / "a" / "config.json").write_text(cfg)
    (tmp_path / "a" / "model.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(WorldModelError, match="incomplete or corrupt"):
        load_network(tmp_path / "a")


def test_model_keys_are_checked_per_family(tmp_path):
    from worldmodel.tasks import load_task

    base = Path("tasks/toy-dfa.toml").read_text()

    def task_with(model_table):
        text = base.split("[model]")[0] + "[model]\n" + model_table + "\n[train]" + base.split("[train]")[1]
        path = tmp_path / "t.toml"
        path.write_text(text)
        return load_task(str(path))

    assert task_with('family = "lstm"\nn_layer = 1\nn_embd = 32\nn_hidden = 48').section("model")["family"] == "lstm"
    with pytest.raises(WorldModelError, match="does not apply to the lstm family"):
        task_with('family = "lstm"\nn_head = 2')
    with pytest.raises(WorldModelError, match="does not apply to the gpt2 family"):
        task_with('n_layer = 1\nd_state = 8')
    with pytest.raises(WorldModelError, match="family must be one of"):
        task_with('family = "rwkv"')


@pytest.mark.parametrize("family", RECURRENT)
def test_each_family_trains_and_every_metric_scores_it(tmp_path, family):
    """Train a few steps from a task file, reload the checkpoint, run every metric and detours-free extras."""
    from worldmodel import evaluator
    from worldmodel.tasks import load_task
    from worldmodel.training import train

    text = Path("tasks/toy-dfa.toml").read_text()
    head, rest = text.split("[model]")
    model_table = {"lstm": 'family = "lstm"\nn_layer = 1\nn_embd = 16\nn_hidden = 16\n',
                   "gru": 'family = "gru"\nn_layer = 1\nn_embd = 16\n',
                   "mamba": 'family = "mamba"\nn_layer = 1\nn_embd = 16\nd_state = 4\n'}[family]
    path = tmp_path / f"toy-{family}.toml"
    path.write_text(head + "[model]\n" + model_table + "\n[train]" + rest.split("[train]")[1])
    task = load_task(str(path))
    info = train(task, tmp_path / "ck", steps=6, data_dir=tmp_path / "data", progress=False,
                 overrides={"eval_every": 3, "log_every": 3})
    assert info["steps"] == 6 and np.isfinite(info["final_val_loss"])
    m = evaluator.build_model(task, checkpoint=tmp_path / "ck")
    assert network_family(m.model) == family and m.recurrent is not None
    s = evaluator.settings_for(task, trials=4, M=5, probe_sequences=30, probe_epochs=2)
    out = evaluator.evaluate(task, m, ["compression", "distinction", "next-token", "probe"], s,
                             data_dir=tmp_path / "data", progress=False)
    got = out["metrics"]
    assert {"compression_precision", "distinction_precision", "distinction_recall", "next_token", "probe"} <= set(got)
    assert all(got[k]["n"] > 0 for k in got)
    u = evaluator.build_model(task, model="untrained")
    assert network_family(u.model) == family


def test_mambas_training_forward_is_transformers_function_with_the_same_gradients(world):
    """MambaLM (what training and whole-sequence scoring run) against MambaForCausalLM's own forward."""
    from transformers import MambaForCausalLM

    torch.manual_seed(0)
    net = build_network(Vocabulary(world.tokens), dict(CFGS["mamba"], n_embd=24))
    assert type(net).__name__ == "MambaLM" and isinstance(net, MambaForCausalLM)
    net.train()
    ids = torch.randint(2, 6, (5, 13))
    ref = MambaForCausalLM.forward(net, input_ids=ids, output_hidden_states=True)
    got = net(input_ids=ids, output_hidden_states=True)
    assert float((ref.logits - got.logits).abs().max()) < 1e-5
    assert float((ref.hidden_states[-1] - got.hidden_states[-1]).abs().max()) < 1e-5
    grads = []
    for out in (ref, got):
        net.zero_grad()
        out.logits.logsumexp(-1).sum().backward()
        grads.append({n: p.grad.clone() for n, p in net.named_parameters()})
    assert max(float((grads[0][n] - grads[1][n]).abs().max()) for n in grads[0]) < 1e-4


def test_extraction_runs_on_a_recurrent_model(tmp_path):
    from worldmodel.cli import main
    from worldmodel.tasks import load_task

    toy = load_task("toy-dfa")
    m = HFModel.untrained(Vocabulary(toy.world.tokens, toy.world.name), CFGS["mamba"], seed=0)
    m.save_pretrained(tmp_path / "toy")
    assert main(["extract", "toy-dfa", "--checkpoint", str(tmp_path / "toy"), "--max-states", "6", "--walks", "20",
                 "--out", str(tmp_path / "ex"), "--no-progress"]) == 0
    assert (tmp_path / "ex" / "automaton.json").exists()


@pytest.mark.slow
def test_detours_run_on_a_recurrent_model(tmp_path):
    from worldmodel.cli import main
    from worldmodel.tasks import load_task

    nav = load_task("nav-grid-tiny")
    m = HFModel.untrained(Vocabulary(nav.world.tokens, nav.world.name), dict(family="gru", n_layer=1, n_embd=16), seed=0)
    m.save_pretrained(tmp_path / "nav")
    assert main(["detours", "nav-grid-tiny", "--checkpoint", str(tmp_path / "nav"), "--p", "0,0.5", "--trials", "4",
                 "--data-dir", str(tmp_path / "navdata"), "--no-progress", "--out", str(tmp_path / "d.json")]) == 0
