"""Foreign checkpoints: each format written by its own minimal writer, imported, and checked
against the source model's own next-token log-probabilities (1e-5, 50 valid sequences)."""

import json
import os
import pickle

import numpy as np
import pytest
import torch

from foreign import MinGPT, NanoGPT, write_nanogpt, write_paper_nav
from worldmodel.acceptance import Epsilon
from worldmodel.cli import main
from worldmodel.errors import WorldModelError
from worldmodel.models import HFModel, TrueWorldModel
from worldmodel.models.importers import detect_format, import_checkpoint, load_checkpoint, write_imported
from worldmodel.models.importers.safe_pickle import load_plain, load_torch
from worldmodel.tasks import load_task

EVAL = ["--metrics", "compression,distinction,next-token", "--trials", "3", "--M", "3", "--no-progress"]


def valid_sequences(world, n=50, length=14, seed=0):
    """``n`` random valid sequences (the true world model's samples from the empty prefix)."""
    rng = np.random.default_rng(seed)
    seqs = TrueWorldModel(world).sample([()], [rng.random((n, length))], Epsilon())[0]
    return [list(s) for s in seqs if len(s) >= 2]


def agreement(model: HFModel, seqs, reference) -> float:
    """Largest |log m(t | x[:j]) - reference| over every world token t and every position j >= 1.

    ``reference(seq)`` gives the source model's log-probabilities ``[len(seq), len(world tokens)]``
    (row ``j - 1`` after reading ``x[:j]``). Checks the full-sequence path and the KV-cache path.
    """
    worst = 0.0
    for i, seq in enumerate(seqs):
        ref = reference(seq)
        ours = np.log(model.prefix_probs([seq])[0][1:].astype(np.float64))
        worst = max(worst, float(np.abs(ours - ref).max()))
        cut = 1 + i % (len(seq) - 1)  # KV cache: a prefix, then the rest scored after it
        sc = model.score([seq[:cut]], [[seq[cut:]]], Epsilon())[0][0]
        cols = [model.token_index()[t] for t in seq[cut:]]
        worst = max(worst, float(np.abs(np.log(sc.probs) - ref[np.arange(cut - 1, len(seq) - 1), cols]).max()))
    return worst


# ---------------------------------------------------------------------------
# paper-nav
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def nav():
    return load_task("nav-grid-tiny")


@pytest.fixture(scope="module")
def paper_ckpt(tmp_path_factory, nav):
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    words = list(nav.world.tokens) + ["9999"]  # a node the world does not have: reported, never scored
    gpt = GPT2LMHeadModel(GPT2Config(vocab_size=len(words) + 1, n_positions=64, n_embd=32, n_layer=2, n_head=4,
                                     pad_token_id=0)).eval()
    path = write_paper_nav(tmp_path_factory.mktemp("paper") / "model.ckpt", gpt, words, n_head=4)
    return path, gpt


def paper_reference(gpt, path):
    tok = load_torch(path.with_name("tokenizer.pt"))
    w2i = tok.word_to_id

    def ref(seq, world_tokens):
        with torch.no_grad():
            logp = torch.log_softmax(gpt(torch.tensor([[w2i[t] for t in seq]])).logits[0].double(), -1)
        return logp[:, [w2i[t] for t in world_tokens]].numpy()
    return ref


def test_paper_nav_matches_its_source(nav, paper_ckpt, tmp_path, capsys):
    path, gpt = paper_ckpt
    assert detect_format(path) == "paper-nav"
    assert main(["import", "nav-grid-tiny", str(path), "--format", "paper-nav", "--out", str(tmp_path / "imp")]) == 0
    out = capsys.readouterr().out
    assert "'9999'" in out and "no BOS" in out  # the model token the world cannot name is reported by name
    prov = json.loads((tmp_path / "imp" / "provenance.json").read_text())
    assert prov["format"] == "paper-nav" and len(prov["sha256"]) == 64 and prov["source"].endswith("model.ckpt")
    assert any(p.suffix == ".safetensors" for p in (tmp_path / "imp").iterdir())
    model = load_checkpoint(tmp_path / "imp", nav.world)
    assert model.context_tokens == 1  # no BOS: the origin is context
    ref = paper_reference(gpt, path)
    seqs = nav.domain.generate("shortest-paths")["train"][:50]
    assert len(seqs) == 50
    assert agreement(model, seqs, lambda s: ref(s, model.tokens)) < 1e-5
    with pytest.raises(WorldModelError, match="no BOS"):
        model.next_token_probs([()])


def test_paper_nav_tokenizer_file_and_direct_checkpoint(nav, paper_ckpt, tmp_path):
    path, gpt = paper_ckpt
    # the tokenizer from tokenizer.pt when the checkpoint has none
    from foreign import write_paper_nav

    bare = write_paper_nav(tmp_path / "bare" / "model.ckpt", gpt, list(nav.world.tokens) + ["9999"], n_head=4,
                           tokenizer_in_checkpoint=False)
    imp = import_checkpoint(bare, nav.world, "paper-nav")
    assert imp.provenance["tokenizer"].endswith("tokenizer.pt")
    # evaluate, detours and reconstruct accept the foreign file directly
    out = tmp_path / "e.json"
    assert main(["evaluate", "nav-grid-tiny", "--checkpoint", str(path), "--out", str(out), "--data-dir",
                 str(tmp_path / "data"), *EVAL]) == 0
    summary = json.loads(out.read_text())
    assert summary["metrics"]["next_token"]["n"] == 3 and summary["metrics"]["compression_precision"]["n"] == 3
    assert main(["detours", "nav-grid-tiny", "--checkpoint", str(path), "--trials", "2", "--p", "0,0.5",
                 "--data-dir", str(tmp_path / "data"), "--out", str(tmp_path / "d.json"), "--no-progress"]) == 0
    assert main(["reconstruct", "nav-grid-tiny", "--checkpoint", str(path), "--n-sequences", "4",
                 "--data-dir", str(tmp_path / "data"), "--out", str(tmp_path / "rec"), "--no-progress"]) == 0


# ---------------------------------------------------------------------------
# li-othello
# ---------------------------------------------------------------------------


def li_ids(world):
    """Li et al.'s CharDataset ids, from the format's description: 0 = -100, squares ascending from 1."""
    squares = sorted(world.square_index(t) for t in world.tokens)
    return {t: squares.index(world.square_index(t)) + 1 for t in world.tokens}


def test_li_squares_are_our_squares():
    """Li's engine: black on (3,4) and (4,3), black first, move = row*8+col: openings 19, 26, 37, 44."""
    from worldmodel.worlds.othello.world import OthelloWorld

    w = OthelloWorld(8)
    assert sorted(w.square_index(t) for t in w.valid_tokens(w.initial_state())) == [19, 26, 37, 44]
    assert len(li_ids(w)) == 60 and max(li_ids(w).values()) == 60


def test_li_othello_matches_its_source(tmp_path, capsys):
    task = load_task("othello-6x6-tiny")
    world = task.world
    torch.manual_seed(1)
    ids = li_ids(world)
    src = MinGPT(vocab=len(ids) + 1, block=40, layers=2, d=32, heads=8).eval()
    path = tmp_path / "gpt_synthetic.ckpt"
    torch.save(src.state_dict(), path)
    assert detect_format(path) == "li-othello"
    assert main(["import", "othello-6x6-tiny", str(path), "--out", str(tmp_path / "imp")]) == 0
    model = load_checkpoint(tmp_path / "imp", world)
    cols = [ids[t] for t in model.tokens]

    def ref(seq):
        with torch.no_grad():
            return torch.log_softmax(src(torch.tensor([[ids[t] for t in seq]]))[0].double(), -1)[:, cols].numpy()

    seqs = valid_sequences(world, 50, 20, seed=2)
    assert len(seqs) == 50
    assert agreement(model, seqs, ref) < 1e-5
    capsys.readouterr()
    assert main(["evaluate", "othello-6x6-tiny", "--checkpoint", str(path), "--out", str(tmp_path / "e.json"),
                 "--data-dir", str(tmp_path / "data"), *EVAL]) == 0


def test_li_othello_wrong_heads_or_world_fail_in_one_line(tmp_path, capsys):
    torch.manual_seed(0)
    path = tmp_path / "gpt.ckpt"
    torch.save(MinGPT(vocab=33, block=40, layers=1, d=24, heads=8).state_dict(), path)
    assert main(["import", "othello-6x6-tiny", str(path), "--n-head", "5", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "heads" in err and not (tmp_path / "o").exists()
    assert main(["import", "toy-dfa", str(path), "--out", str(tmp_path / "o")]) == 2
    assert "Othello" in capsys.readouterr().err


# ---------------------------------------------------------------------------
# nanoGPT
# ---------------------------------------------------------------------------


def test_nanogpt_matches_its_source(tmp_path, capsys):
    task = load_task("toy-dfa")
    world = task.world
    torch.manual_seed(2)
    pieces = ["\n", ";"] + list(world.tokens)[::-1]  # ids unrelated to the world's order
    stoi = {p: i for i, p in enumerate(pieces)}
    src = NanoGPT(len(stoi), block=64, layers=2, d=32, heads=4, bias=False).eval()
    path = write_nanogpt(tmp_path / "out-toy", src, stoi)
    assert detect_format(path.parent) == "nanogpt" and detect_format(path) == "nanogpt"
    imp = import_checkpoint(path.parent, world, bos=";")
    assert imp.vocab.bos_id == stoi[";"] and any("'\\n'" in n for n in imp.notes)
    write_imported(imp, tmp_path / "imp")
    model = load_checkpoint(tmp_path / "imp", world)
    cols = [stoi[t] for t in model.tokens]

    def ref(seq):  # with BOS ';' first: row j - 1 of ours is row j of the source
        with torch.no_grad():
            lp = torch.log_softmax(src(torch.tensor([[stoi[";"]] + [stoi[t] for t in seq]]))[0].double(), -1)
        return lp[1:, cols].numpy()

    seqs = valid_sequences(world, 50, 12, seed=3)
    assert len(seqs) == 50
    assert agreement(model, seqs, ref) < 1e-5
    # without BOS (the default), read straight from the file by evaluate
    bare = load_checkpoint(path, world)
    assert bare.context_tokens == 1

    def ref0(seq):
        with torch.no_grad():
            return torch.log_softmax(src(torch.tensor([[stoi[t] for t in seq]]))[0].double(), -1)[:, cols].numpy()
    assert agreement(bare, seqs[:10], ref0) < 1e-5
    assert main(["evaluate", "toy-dfa", "--checkpoint", str(path), "--out", str(tmp_path / "e.json"),
                 "--data-dir", str(tmp_path / "data"), *EVAL]) == 0


def test_nanogpt_with_biases_and_missing_tokens(tmp_path, capsys):
    world = load_task("toy-dfa").world
    torch.manual_seed(3)
    stoi = {t: i for i, t in enumerate(world.tokens)}
    src = NanoGPT(len(stoi), block=32, layers=1, d=16, heads=2, bias=True).eval()
    path = write_nanogpt(tmp_path / "b", src, stoi, compiled=False)
    model = load_checkpoint(path, world)
    seqs = valid_sequences(world, 10, 8, seed=4)

    def ref(seq):
        with torch.no_grad():
            return torch.log_softmax(src(torch.tensor([[stoi[t] for t in seq]]))[0].double(), -1).numpy()
    assert agreement(model, seqs, ref) < 1e-5
    del stoi[world.tokens[0]]
    write_nanogpt(tmp_path / "c", NanoGPT(len(stoi) + 1, block=32, layers=1, d=16, heads=2), stoi)
    assert main(["import", "toy-dfa", str(tmp_path / "c"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert repr(world.tokens[0]) in err and "lacks 1" in err


# ---------------------------------------------------------------------------
# hostile and unknown files
# ---------------------------------------------------------------------------


class Evil:
    marker = None

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_malicious_pickles_are_refused_and_run_nothing(tmp_path, capsys):
    marker = tmp_path / "pwned"
    Evil.marker = marker
    bad_torch = tmp_path / "model.ckpt"
    torch.save({"state_dict": {}, "hyper_parameters": {"tokenizer": Evil()}}, bad_torch)
    for argv in (["import", "nav-grid-tiny", str(bad_torch), "--format", "paper-nav", "--out", str(tmp_path / "o")],
                 ["evaluate", "nav-grid-tiny", "--checkpoint", str(bad_torch), "--metrics", "compression"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("worldmodel: error: refused") and err.count("\n") == 1 and "system" in err
    # a hostile meta.pkl beside a good nanoGPT checkpoint
    world = load_task("toy-dfa").world
    write_nanogpt(tmp_path / "n", NanoGPT(len(world.tokens)), {t: i for i, t in enumerate(world.tokens)})
    with (tmp_path / "n" / "meta.pkl").open("wb") as fh:
        pickle.dump({"stoi": Evil()}, fh)
    assert main(["import", "toy-dfa", str(tmp_path / "n"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "refus" in err and "system" in err and err.count("\n") == 1
    with pytest.raises(WorldModelError, match="refus"):
        load_plain(tmp_path / "n" / "meta.pkl")
    assert not marker.exists() and not (tmp_path / "o").exists()


def test_unknown_files_get_one_line_naming_what_was_expected(tmp_path, capsys):
    junk = tmp_path / "weights.pt"
    torch.save({"something": torch.zeros(2)}, junk)
    assert main(["evaluate", "toy-dfa", "--checkpoint", str(junk), "--metrics", "compression"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot tell the format" in err and "nanoGPT" in err
    (tmp_path / "text.ckpt").write_text("not a checkpoint")
    assert main(["evaluate", "toy-dfa", "--checkpoint", str(tmp_path / "text.ckpt"), "--metrics", "compression"]) == 2
    assert "not a readable PyTorch file" in capsys.readouterr().err


# ---------------------------------------------------------------------------
# Hugging Face model with its own tokenizer (world tokens of two pieces)
# ---------------------------------------------------------------------------


def write_hf_with_tokenizer(folder, world_tokens, seed=0):
    """A GPT-2 and a WordPiece tokenizer that splits every token after the first two into two pieces."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    whole = list(world_tokens[:2])
    vocab = ["[PAD]", "[UNK]", "[BOS]", "x", "##y"] + whole + ["t"] + [f"##{t[1:]}" for t in world_tokens[2:]]
    tk = Tokenizer(models.WordPiece({w: i for i, w in enumerate(vocab)}, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]", pad_token="[PAD]", bos_token="[BOS]")
    torch.manual_seed(seed)
    gpt = GPT2LMHeadModel(GPT2Config(vocab_size=len(vocab), n_positions=96, n_embd=32, n_layer=2, n_head=4,
                                     bos_token_id=2, eos_token_id=2, pad_token_id=0)).eval()
    gpt.save_pretrained(folder)
    tok.save_pretrained(folder)
    return gpt, tok


def test_hf_multi_piece_tokens_follow_the_chain_rule(tmp_path, capsys):
    task = load_task("toy-dfa")
    world = task.world
    gpt, tok = write_hf_with_tokenizer(tmp_path / "hf", list(world.tokens))
    pieces = {t: tok.encode(" " + t, add_special_tokens=False) for t in world.tokens}
    assert sorted(len(p) for p in pieces.values()).count(2) == len(world.tokens) - 2  # two-piece tokens exist
    assert detect_format(tmp_path / "hf") == "hf"
    assert main(["import", "toy-dfa", str(tmp_path / "hf"), "--out", str(tmp_path / "imp")]) == 0
    assert "several pieces" in capsys.readouterr().out
    model = load_checkpoint(tmp_path / "imp", world)
    bos = tok.bos_token_id

    def after(ctx_tokens):
        """The source model's chain-rule log-probability of every world token after a context, by hand."""
        ctx = [bos] + [i for t in ctx_tokens for i in pieces[t]]
        cands = [ctx + pieces[t] for t in model.tokens]
        L = max(len(c) for c in cands)
        with torch.no_grad():
            lp = torch.log_softmax(gpt(torch.tensor([c + [0] * (L - len(c)) for c in cands])).logits.double(), -1)
        return [sum(float(lp[k, len(ctx) - 1 + q, pieces[t][q]]) for q in range(len(pieces[t])))
                for k, t in enumerate(model.tokens)]

    def ref(seq):
        return np.array([after(seq[:j]) for j in range(1, len(seq) + 1)])

    seqs = valid_sequences(world, 50, 6, seed=5)
    assert len(seqs) == 50
    assert agreement(model, seqs, ref) < 1e-5
    # the empty prefix (BOS) too, and sampling / contrast agree with scoring
    assert np.abs(np.log(model.next_token_probs([()])[0]) - np.array(after([]))).max() < 1e-5
    rng = np.random.default_rng(0)
    us = [rng.random((6, 5)) for _ in range(3)]
    p1, p2 = [tuple(seqs[0][:2]), tuple(seqs[1][:3]), ()], [tuple(seqs[2][:1]), (), tuple(seqs[3][:2])]
    from worldmodel.models import SequenceModel

    rule = Epsilon(0.2)
    assert model.sample_contrast(p1, p2, us, rule) == SequenceModel.sample_contrast(model, p1, p2, us, rule)
    assert main(["evaluate", "toy-dfa", "--checkpoint", str(tmp_path / "hf"), "--out", str(tmp_path / "e.json"),
                 "--data-dir", str(tmp_path / "data"), *EVAL, "--metrics", "compression,distinction,next-token,probe",
                 "--probe-sequences", "20", "--probe-epochs", "2"]) == 0
