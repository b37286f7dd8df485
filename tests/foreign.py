"""Tiny models and writers in other projects' checkpoint formats (for the importer tests).

Each is written here from the format's description, not taken from the projects:
a minGPT (Li et al.'s Othello-GPT layout), a nanoGPT (``ckpt.pt`` + ``meta.pkl``), and
the paper's Lightning dict with a pickled ``SimpleTokenizer``. Each model computes its
own next-token logits, the reference the imported model must match.
"""

from __future__ import annotations

import math
import pickle
import sys
import types
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F


class _Attn(nn.Module):
    """Causal self-attention with separate key / query / value projections (minGPT)."""

    def __init__(self, d, heads, block):
        super().__init__()
        self.key, self.query, self.value, self.proj = (nn.Linear(d, d) for _ in range(4))
        self.register_buffer("mask", torch.tril(torch.ones(block, block)).view(1, 1, block, block))
        self.heads = heads

    def forward(self, x):
        B, T, C = x.shape
        split = lambda t: t.view(B, T, self.heads, C // self.heads).transpose(1, 2)  # noqa: E731
        q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(k.shape[-1])
        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf")).softmax(-1)
        return self.proj((att @ v).transpose(1, 2).reshape(B, T, C))


class _Block(nn.Module):
    def __init__(self, d, heads, block):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = _Attn(d, heads, block)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d), nn.Dropout(0.0))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


def _gpt_like_init(model: nn.Module) -> None:
    """GPT-like scale (std 0.1) for every weight and bias, LayerNorm affine off its identity (in module order)."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                m.weight.normal_(0, 0.1)
                if getattr(m, "bias", None) is not None:
                    m.bias.normal_(0, 0.1)
            elif isinstance(m, nn.LayerNorm):
                m.weight.uniform_(0.5, 1.5)
                if m.bias is not None:
                    m.bias.normal_(0, 0.1)


class MinGPT(nn.Module):
    """Li et al.'s layout: tok_emb, pos_emb (a parameter), blocks, ln_f, untied head."""

    def __init__(self, vocab, block=59, layers=2, d=32, heads=8):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab, d)
        self.pos_emb = nn.Parameter(torch.randn(1, block, d) * 0.2)
        self.blocks = nn.Sequential(*[_Block(d, heads, block) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        _gpt_like_init(self)

    def forward(self, idx):
        x = self.tok_emb(idx) + self.pos_emb[:, : idx.shape[1]]
        return self.head(self.ln_f(self.blocks(x)))


class _NanoAttn(nn.Module):
    def __init__(self, d, heads, bias):
        super().__init__()
        self.c_attn, self.c_proj = nn.Linear(d, 3 * d, bias=bias), nn.Linear(d, d, bias=bias)
        self.heads = heads

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        split = lambda t: t.view(B, T, self.heads, C // self.heads).transpose(1, 2)  # noqa: E731
        y = F.scaled_dot_product_attention(split(q), split(k), split(v), is_causal=True)
        return self.c_proj(y.transpose(1, 2).reshape(B, T, C))


class _NanoBlock(nn.Module):
    def __init__(self, d, heads, bias):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(d, bias=bias), nn.LayerNorm(d, bias=bias)
        self.attn = _NanoAttn(d, heads, bias)
        self.mlp = nn.Module()
        self.mlp.c_fc, self.mlp.c_proj = nn.Linear(d, 4 * d, bias=bias), nn.Linear(4 * d, d, bias=bias)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp.c_proj(F.gelu(self.mlp.c_fc(self.ln_2(x))))


class NanoGPT(nn.Module):
    """nanoGPT's layout: transformer.{wte,wpe,h,ln_f}, lm_head tied to wte."""

    def __init__(self, vocab, block=64, layers=2, d=32, heads=4, bias=False):
        super().__init__()
        self.args = dict(n_layer=layers, n_head=heads, n_embd=d, block_size=block, bias=bias, vocab_size=vocab,
                         dropout=0.0)
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab, d), wpe=nn.Embedding(block, d),
            h=nn.ModuleList([_NanoBlock(d, heads, bias) for _ in range(layers)]), ln_f=nn.LayerNorm(d, bias=bias)))
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.transformer.wte.weight
        _gpt_like_init(self)

    def forward(self, idx):
        t = self.transformer
        x = t.wte(idx) + t.wpe(torch.arange(idx.shape[1]))
        for block in t.h:
            x = block(x)
        return self.lm_head(t.ln_f(x))


def write_nanogpt(folder: Path, model: NanoGPT, stoi: dict[str, int], compiled: bool = True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    sd = {("_orig_mod." if compiled else "") + k: v for k, v in model.state_dict().items()}
    torch.save({"model": sd, "model_args": model.args, "optimizer": {}, "iter_num": 10,
                "best_val_loss": torch.tensor(1.5), "config": {"dataset": "test", "compile": compiled}},
               folder / "ckpt.pt")
    with (folder / "meta.pkl").open("wb") as fh:
        pickle.dump({"vocab_size": len(stoi), "stoi": stoi, "itos": {i: s for s, i in stoi.items()}}, fh)
    return folder / "ckpt.pt"


class SimpleTokenizer:
    """Stands in for the authors' tokenizer class (pickled as ``model.SimpleTokenizer``)."""

    def __init__(self, words):
        self.word_to_id = {w: i + 1 for i, w in enumerate(sorted(words, reverse=True))}
        self.id_to_word = {i: w for w, i in self.word_to_id.items()}
        self.pad_token_id = 0
        self.word_to_id["<pad>"] = 0
        self.id_to_word[0] = "<pad>"
        self.valid_turns = {}
        self.node_and_direction_to_neighbor = {}


def write_paper_nav(path: Path, gpt2, words, n_head: int, tokenizer_in_checkpoint: bool = True) -> Path:
    """A Lightning-style ``model.ckpt`` (and ``tokenizer.pt`` beside it)."""
    module = types.ModuleType("model")
    module.SimpleTokenizer = SimpleTokenizer
    SimpleTokenizer.__module__ = "model"
    old = sys.modules.get("model")
    sys.modules["model"] = module
    try:
        tok = SimpleTokenizer(words)
        hp = {"vocab_size": len(tok.word_to_id), "n_embd": gpt2.config.n_embd, "n_layer": gpt2.config.n_layer,
              "n_head": n_head}
        if tokenizer_in_checkpoint:
            hp["tokenizer"] = tok
        sd = {"model." + k: v for k, v in gpt2.state_dict().items()}
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save({"epoch": 3, "global_step": 100, "pytorch-lightning_version": "2.2.0", "state_dict": sd,
                    "hparams_name": "kwargs", "hyper_parameters": hp, "optimizer_states": [], "lr_schedulers": []},
                   path)
        torch.save(tok, path.with_name("tokenizer.pt"))
    finally:
        if old is None:
            sys.modules.pop("model", None)
        else:
            sys.modules["model"] = old
    return path
