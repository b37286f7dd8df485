"""Character-level nanoGPT chess models in Karvonen's layout: imported, checked against the chain rule, scored.

A small nanoGPT (tests/foreign.py's, our own) is trained for a few seconds on PGN strings
of random games written as Karvonen's models read them (``;1.e4 e5 2.Nf3 …``, games back
to back, the 32-character ``stoi`` of his ``meta.pkl``), written as ``ckpt.pt`` +
``meta.pkl``, and imported. A move's probability must be the product of the source
model's character probabilities (the move's characters and the space that ends it,
after the text of the game so far) to 1e-5.
"""

import json

import numpy as np
import pytest
import torch

from foreign import NanoGPT, write_nanogpt
from worldmodel import dfa
from worldmodel.acceptance import Epsilon, TopK
from worldmodel.cli import main
from worldmodel.errors import WorldModelError
from worldmodel.models.importers import import_checkpoint, load_checkpoint
from worldmodel.models.importers.pieces import PieceModel
from worldmodel.models.importers.template import Template
from worldmodel.tasks import load_task
from worldmodel.worlds.chess.players import RandomPlayer, play_games

#: the characters of Karvonen's meta.pkl (chess_llm_interpretability), ids in this order
KARVONEN_CHARS = " #+-.0123456789;=BKNOQRabcdefghx"
PGN = Template.parse("pgn")


@pytest.fixture(scope="module")
def world():
    return load_task("chess-tiny").world


@pytest.fixture(scope="module")
def games(world):
    return play_games(world, RandomPlayer(), 160, 5, 24)


@pytest.fixture(scope="module")
def source(world, games, tmp_path_factory):
    """(nanoGPT, stoi, ckpt.pt): trained 150 steps on the games' PGN strings, one thread."""
    stoi = {c: i for i, c in enumerate(KARVONEN_CHARS)}
    text = "".join(PGN.text(g).rstrip() for g in games[:150])  # ';1.e4 e5 2.Nf3 …;1.d4 …'
    data = torch.tensor([stoi[c] for c in text])
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        torch.manual_seed(0)
        src = NanoGPT(len(stoi), block=256, layers=1, d=48, heads=2)
        opt = torch.optim.AdamW(src.parameters(), lr=1e-2)
        g = torch.Generator().manual_seed(0)
        for _ in range(150):
            ix = torch.randint(len(data) - 129, (16,), generator=g)
            x = torch.stack([data[i:i + 128] for i in ix])
            y = torch.stack([data[i + 1:i + 129] for i in ix])
            loss = torch.nn.functional.cross_entropy(src(x).reshape(-1, len(stoi)), y.reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
    finally:
        torch.set_num_threads(threads)
    src.eval()
    return src, stoi, write_nanogpt(tmp_path_factory.mktemp("karvonen") / "out", src, stoi)


def chain_rule(src, stoi, prefix, token) -> float:
    """log P(token) from the source model: its characters and the ending space after the game's text so far."""
    text, spelled = PGN.text(prefix), token + " "
    ids = torch.tensor([[stoi[c] for c in text + spelled]])
    with torch.no_grad():
        logp = torch.log_softmax(src(ids)[0].double(), -1)
    return float(sum(logp[len(text) - 1 + q, stoi[c]] for q, c in enumerate(spelled)))


def test_template_writes_karvonens_strings():
    assert PGN.text(["e4", "e5", "Nf3", "Nc6", "Bb5"]) == ";1.e4 e5 2.Nf3 Nc6 3.Bb5 "
    assert PGN.terminator == " " and PGN.context_after(0) == "" and PGN.context_after(19) == "11."
    assert Template.parse(PGN.spec()).to_dict() == PGN.to_dict()
    assert Template.parse("{move} {move}").text(["a", "b"]) == "a b "
    for bad in ("{move}", ";1.{move} {move} 3.{move}", "{move}|{move} {move}"):
        with pytest.raises(WorldModelError):
            Template.parse(bad)


def test_move_probabilities_are_the_chain_rule_over_characters(world, games, source):
    src, stoi, path = source
    imp = import_checkpoint(path, world, floor=1e-3)   # the layout comes from the world (pgn)
    assert imp.provenance["template"] == PGN.spec() and imp.vocab.pieces["e4"] == (stoi["e"], stoi["4"], stoi[" "])
    model = PieceModel(imp.model, imp.vocab, name="karvonen-layout")
    rng = np.random.default_rng(0)
    checked = 0
    prefixes = [(), tuple(games[155][:1]), tuple(games[157][:11])]
    dist = model.next_token_probs(prefixes)
    for prefix, row in zip(prefixes, dist):
        legal = world.valid_tokens(dfa.run(world, prefix))
        kept = [world.tokens[i] for i in np.flatnonzero(row)]
        assert len(kept) >= 10 and row.sum() > 0.5          # the trained model writes moves, mostly legal ones
        others = [world.tokens[i] for i in rng.choice(len(world.tokens), 10, replace=False)]
        index = model.token_index()
        for t in dict.fromkeys(kept + legal + others):
            ref = chain_rule(src, stoi, prefix, t)
            got = row[index[t]]
            if got > 0:
                assert abs(np.log(got) - ref) < 1e-5, (prefix, t)
                checked += 1
            else:   # pruned: the true probability is at most the floor
                assert np.exp(ref) <= 1e-3 + 1e-9, (prefix, t)
    assert checked > 30
    # the KV-cache path (score after a cached prefix, tokens fed with their separators) agrees
    game = games[158]
    sc = model.score([tuple(game[:3])], [[tuple(game[3:6])]], Epsilon(0.001))[0][0]
    for q, p in enumerate(sc.probs):
        ref = chain_rule(src, stoi, tuple(game[:3 + q]), game[3 + q])
        assert (p > 0 and abs(np.log(p) - ref) < 1e-5) or (p == 0 and np.exp(ref) <= 1e-3 + 1e-9)
    # hidden states are read at the last character before each move (the '.' or the space)
    h = model.hidden_states([game[:4]])[0]
    assert h.shape == (5, 48) and np.isfinite(h).all()
    # a pruned model refuses rules that rank tokens below its floor
    with pytest.raises(WorldModelError, match="prunes"):
        model.score([()], [[("e4",)]], Epsilon(1e-4))
    with pytest.raises(WorldModelError, match="epsilon acceptance"):
        model.sample([()], [np.random.default_rng(0).random((2, 3))], TopK(3))


MICRO = """name = "chess-micro"
domain = "chess"
[data]
max_plies = 12
n_val = 4
n_test = 6
[data.random]
n_train = 12
[sampler]
games = 30
max_plies = 12
[evaluate]
M = 2
trials = 3
max_sample_len = 3
probe_sequences = 12
probe_epochs = 2
"""


def test_imported_character_model_is_scored_by_every_metric(world, source, tmp_path, capsys):
    _, stoi, path = source
    task = tmp_path / "chess-micro.toml"   # chess-tiny's world, metric settings cut to the bone
    task.write_text(MICRO)
    out = tmp_path / "imported"
    assert main(["import", str(task), str(path), "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "character-level" in said and "pruned below 0.01" in said and "template ';1.{move}" in said
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["format"] == "nanogpt" and prov["floor"] == 0.01 and "missing_tokens" not in prov
    model = load_checkpoint(out, world)
    assert isinstance(model, PieceModel) and model.floor == 0.01
    res = tmp_path / "eval.json"
    assert main(["evaluate", str(task), "--checkpoint", str(out), "--data-dir", str(tmp_path / "d"), "--out", str(res),
                 "--no-progress"]) == 0
    metrics = json.loads(res.read_text())["metrics"]
    for name in ("compression_precision", "distinction_precision", "distinction_recall", "next_token", "probe"):
        assert metrics[name]["n"] > 0 and 0 <= metrics[name]["mean"] <= 1, name
    assert main(["chess-detours", str(task), "--checkpoint", str(out), "--trials", "2", "--plies", "2",
                 "--p", "0,0.5", "--data-dir", str(tmp_path / "d"), "--out", str(tmp_path / "det.json"),
                 "--no-progress"]) == 0
    # the foreign file itself is detected, imported on the fly and scored the same way
    assert main(["evaluate", str(task), "--checkpoint", str(path), "--metrics", "next-token", "--trials", "2",
                 "--data-dir", str(tmp_path / "d"), "--no-progress"]) == 0


def test_a_character_set_without_mate_signs_is_refused_unless_zero(world, source, tmp_path, capsys):
    src, stoi, _ = source
    short = {c: i for c, i in stoi.items() if c != "#"}          # a model that never saw a mate
    path = write_nanogpt(tmp_path / "nomate", src, short)
    assert main(["import", "chess-tiny", str(path), "--out", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert "lacks 14006 of the chess-san world's tokens" in err and "--missing-tokens zero" in err
    assert main(["import", "chess-tiny", str(path), "--missing-tokens", "zero", "--out", str(tmp_path / "b")]) == 0
    assert "lacks 14006" in capsys.readouterr().out
    prov = json.loads((tmp_path / "b" / "provenance.json").read_text())
    assert prov["missing_tokens_policy"] == "zero" and len(prov["missing_tokens"]) == 14006
    assert all(t.endswith("#") for t in prov["missing_tokens"])
    with pytest.raises(WorldModelError, match="--missing-tokens zero"):
        load_checkpoint(tmp_path / "b", world)     # the folder, too, is refused without the flag
    model = load_checkpoint(tmp_path / "b", world, missing="zero")
    assert len(model.missing_tokens) == 14006 and model.tokens == world.tokens
    row = model.next_token_probs([("f3", "e5", "g4")])[0]
    assert row[model.token_index()["Qh4#"]] == 0
