"""Foreign recurrent checkpoints: torch state dicts of LSTMs / GRUs with their configuration, and LSTM /
Mamba folders in Hugging Face layout with their own tokenizer, each checked against its source (1e-5)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from worldmodel.acceptance import Epsilon
from worldmodel.cli import main
from worldmodel.errors import WorldModelError
from worldmodel.models import TrueWorldModel
from worldmodel.models.importers import detect_format, import_checkpoint, load_checkpoint
from worldmodel.tasks import load_task

EVAL = ["--metrics", "compression,distinction,next-token", "--trials", "3", "--M", "3", "--no-progress"]


@pytest.fixture(scope="module")
def world():
    return load_task("toy-dfa").world


def sequences(world, n=30, length=12, seed=0):
    rng = np.random.default_rng(seed)
    seqs = TrueWorldModel(world).sample([()], [rng.random((n, length))], Epsilon())[0]
    return [list(s) for s in seqs if len(s) >= 2]


class ForeignLM(nn.Module):
    """An embedding, an nn.LSTM / nn.GRU and a linear head under another project's names."""

    def __init__(self, names, cell, V, E, H, layers):
        super().__init__()
        self.names = names
        setattr(self, names[0], nn.Embedding(V, E))
        setattr(self, names[1], (nn.LSTM if cell == "lstm" else nn.GRU)(E, H, layers, batch_first=True))
        setattr(self, names[2], nn.Linear(H, V))

    def forward(self, ids):
        x, _ = getattr(self, self.names[1])(getattr(self, self.names[0])(ids))
        return torch.log_softmax(getattr(self, self.names[2])(x).double(), -1)


def agreement(model, seqs, source, ids_of, bos_id=None):
    """Largest |log m(t | x[:j]) - source| over world tokens and positions, full pass and cached path."""
    cols = [ids_of[t] for t in model.tokens]
    worst = 0.0
    for i, seq in enumerate(seqs):
        ids = ([bos_id] if bos_id is not None else []) + [ids_of[t] for t in seq]
        with torch.no_grad():
            ref = source(torch.tensor([ids]))[0][:, cols].numpy()
        first = 0 if bos_id is not None else 1                      # rows the model predicts
        ours = np.log(model.prefix_probs([seq])[0][first:].astype(np.float64))
        worst = max(worst, float(np.abs(ours - ref).max()))
        cut = 1 + i % (len(seq) - 1)
        sc = model.score([seq[:cut]], [[seq[cut:]]], Epsilon())[0][0]
        c = [model.token_index()[t] for t in seq[cut:]]
        rows = np.arange(cut, len(seq)) - (0 if bos_id is not None else 1)
        worst = max(worst, float(np.abs(np.log(sc.probs) - ref[rows, c]).max()))
    return worst


def test_an_inductive_bias_probes_checkpoint_imports(world, tmp_path, capsys):
    """keyonvafa/inductive-bias-probes' ckpt.pt: model + model_args (with pathlib paths), no BOS."""
    torch.manual_seed(0)
    src = ForeignLM(("embedding", "core", "output_head"), "lstm", 5, 16, 16, 2).eval()
    ids_of = {t: i for i, t in enumerate(world.tokens)}          # id 4: a token the world cannot name
    torch.save({"model": src.state_dict(), "iter_num": 10, "best_val_loss": 1.2,
                "model_args": {"model_type": "lstm", "n_layer": 2, "n_embd": 16, "input_vocab_size": 5,
                               "train_file": Path("/data/gridworld/obs_train.npy")}}, tmp_path / "ckpt.pt")
    (tmp_path / "vocab.json").write_text(json.dumps({**ids_of, "<other>": 4}))
    assert import_checkpoint(tmp_path / "ckpt.pt", world, tokenizer=tmp_path / "vocab.json").provenance["layout"] \
        == "inductive-bias-probes"
    assert main(["import", "toy-dfa", str(tmp_path / "ckpt.pt"), "--tokenizer", str(tmp_path / "vocab.json"),
                 "--out", str(tmp_path / "imp")]) == 0
    assert "cannot name" in capsys.readouterr().out
    model = load_checkpoint(tmp_path / "imp", world)
    assert model.recurrent is not None and model.context_tokens == 1
    assert agreement(model, sequences(world), src, ids_of) < 1e-5
    assert main(["evaluate", "toy-dfa", "--checkpoint", str(tmp_path / "imp"), "--data-dir", str(tmp_path / "d"),
                 *EVAL]) == 0


def test_a_word_language_model_gru_state_dict_with_config_and_bos_imports(world, tmp_path):
    torch.manual_seed(1)
    src = ForeignLM(("encoder", "rnn", "decoder"), "gru", 6, 12, 20, 1).eval()
    torch.save(src.state_dict(), tmp_path / "model.pt")
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gru", "num_layers": 1, "hidden_size": 20}))
    ids_of = {t: i + 2 for i, t in enumerate(world.tokens)}
    (tmp_path / "vocab.json").write_text(json.dumps({"stoi": {**ids_of, "<s>": 1, "<pad>": 0}, "bos": "<s>"}))
    assert detect_format(tmp_path / "model.pt") == "torch-rnn"
    imp = import_checkpoint(tmp_path / "model.pt", world, tokenizer=tmp_path / "vocab.json")
    assert imp.vocab.bos_id == 1 and imp.provenance["cell"] == "gru"
    from worldmodel.models import HFModel

    model = HFModel(imp.model, imp.vocab)
    assert agreement(model, sequences(world, seed=3), src, ids_of, bos_id=1) < 1e-5


def test_bad_recurrent_checkpoints_fail_in_one_line(world, tmp_path):
    torch.manual_seed(2)
    src = ForeignLM(("encoder", "rnn", "decoder"), "lstm", 4, 8, 8, 1)
    torch.save(src.state_dict(), tmp_path / "m.pt")
    (tmp_path / "vocab.json").write_text(json.dumps({t: i for i, t in enumerate(world.tokens)}))
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gru"}))
    with pytest.raises(WorldModelError, match="disagrees with the weights: model_type 'gru'"):
        import_checkpoint(tmp_path / "m.pt", world, tokenizer=tmp_path / "vocab.json")
    (tmp_path / "config.json").unlink()
    with pytest.raises(WorldModelError, match="needs its vocabulary"):
        import_checkpoint(tmp_path / "m.pt", world)
    plain = nn.ModuleDict({"encoder": nn.Embedding(4, 8), "rnn": nn.RNN(8, 8), "decoder": nn.Linear(8, 4)})
    torch.save(plain.state_dict(), tmp_path / "rnn.pt")
    with pytest.raises(WorldModelError, match="neither an LSTM nor a GRU"):
        import_checkpoint(tmp_path / "rnn.pt", world, fmt="torch-rnn", tokenizer=tmp_path / "vocab.json")
    (tmp_path / "few.json").write_text(json.dumps({"t0": 0}))
    with pytest.raises(WorldModelError, match="lacks"):
        import_checkpoint(tmp_path / "m.pt", world, tokenizer=tmp_path / "few.json")


def test_a_pickle_that_runs_code_is_refused(world, tmp_path):
    import os

    class Evil:
        def __reduce__(self):
            return (os.system, ("touch " + str(tmp_path / "pwned"),))

    torch.save({"model": {"core.weight_ih_l0": torch.zeros(1)}, "model_args": {"x": Evil()}}, tmp_path / "ckpt.pt")
    with pytest.raises(WorldModelError, match="refused"):
        import_checkpoint(tmp_path / "ckpt.pt", world, fmt="torch-rnn")
    assert not (tmp_path / "pwned").exists()


def write_tokenizer(folder, tokens):
    """A word-level tokenizer (one piece per world token) with [PAD] and [BOS]."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = ["[PAD]", "[UNK]", "[BOS]"] + list(tokens)
    tk = Tokenizer(models.WordLevel({w: i for i, w in enumerate(vocab)}, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]", pad_token="[PAD]", bos_token="[BOS]")
    tok.save_pretrained(folder)
    return {w: i for i, w in enumerate(vocab)}


@pytest.mark.parametrize("family", ["lstm", "mamba"])
def test_hf_layout_recurrent_folders_import_and_decode_on_their_state(world, tmp_path, family, capsys):
    from worldmodel.models.recurrent import RecurrentConfig, RecurrentLM

    ids_of = write_tokenizer(tmp_path / "hf", world.tokens)
    V = len(ids_of)
    torch.manual_seed(3)
    if family == "lstm":
        src = RecurrentLM(RecurrentConfig("lstm", V, 12, 16, 2)).eval()
    else:
        from transformers import MambaConfig, MambaForCausalLM

        src = MambaForCausalLM(MambaConfig(vocab_size=V, hidden_size=16, num_hidden_layers=2, state_size=4,
                                           pad_token_id=0, bos_token_id=2, eos_token_id=2)).eval()
    src.save_pretrained(tmp_path / "hf")
    assert detect_format(tmp_path / "hf") == "hf"
    assert main(["import", "toy-dfa", str(tmp_path / "hf"), "--out", str(tmp_path / "imp")]) == 0
    model = load_checkpoint(tmp_path / "imp", world)
    assert model.recurrent is not None and model.vocab.bos_id == 2

    def source(ids):
        return torch.log_softmax(src(input_ids=ids).logits.double(), -1)

    assert agreement(model, sequences(world, seed=4), source, ids_of, bos_id=2) < 1e-5
    assert main(["evaluate", "toy-dfa", "--checkpoint", str(tmp_path / "hf"), "--data-dir", str(tmp_path / "d"),
                 *EVAL]) == 0


def test_a_recurrent_hf_folder_whose_tokens_are_several_pieces_is_refused(world, tmp_path):
    from worldmodel.models.recurrent import RecurrentConfig, RecurrentLM

    write_tokenizer(tmp_path / "hf", ["t0", "t1"])         # t2, t3 unknown: [UNK] pieces
    RecurrentLM(RecurrentConfig("lstm", 5, 8, 8, 1)).save_pretrained(tmp_path / "hf")
    with pytest.raises(WorldModelError):
        import_checkpoint(tmp_path / "hf", world, fmt="hf")
