"""Foreign GPT weights as a Hugging Face ``GPT2LMHeadModel``.

All three foreign formats are the GPT-2 architecture in other clothes (pre-norm blocks,
learned positions, causal self-attention, a 4x MLP), so each is mapped onto
``GPT2LMHeadModel`` weight by weight and then runs through the same adapter, KV cache
and trie as our own checkpoints:

* **minGPT** (Li et al.'s Othello-GPT, likenneth/othello_world ``mingpt/model.py``):
  separate ``key``/``query``/``value`` ``nn.Linear`` layers become GPT-2's fused
  ``c_attn`` (query, key, value order, transposed: GPT-2 uses ``Conv1D``, ``x @ W``);
  ``mlp.0``/``mlp.2`` become ``c_fc``/``c_proj``; the positional parameter
  ``pos_emb[0]`` becomes ``wpe``; an untied ``head`` becomes ``lm_head``. Its MLP uses
  the exact (erf) GELU, so the config says ``activation_function="gelu"``.
* **nanoGPT** (``model.py``): the same names as GPT-2 but ``nn.Linear`` (transposed
  here), an optional ``bias=False`` (zeros here: the same function), exact GELU, tied
  embeddings, and ``_orig_mod.`` prefixes from ``torch.compile``.
* **Hugging Face GPT-2 inside a Lightning module** (the paper's): the keys under
  ``model.`` are already GPT-2's.

Causal-mask buffers (``attn.mask``, ``attn.bias``, ``attn.masked_bias``) are dropped:
GPT-2 builds its own.
"""

from __future__ import annotations

import re

import torch

from ...errors import WorldModelError


def _n_layers(keys, pattern: str) -> int:
    found = {int(m.group(1)) for k in keys if (m := re.match(pattern, k))}
    if not found or found != set(range(max(found) + 1)):
        raise WorldModelError("cannot tell the number of layers from the state dict's keys")
    return max(found) + 1


def _take(sd: dict, key: str, where: str) -> torch.Tensor:
    if key not in sd:
        raise WorldModelError(f"{where}: missing weight {key!r}")
    return sd[key]


def build_gpt2(sd: dict[str, torch.Tensor], n_head: int, activation: str, tie: bool | None = None,
               pad_id: int | None = None, where: str = "checkpoint"):
    """A ``GPT2LMHeadModel`` holding ``sd`` (GPT-2 names, ``Conv1D`` layout), strictly loaded."""
    from transformers import GPT2Config, GPT2LMHeadModel

    sd = {k: v for k, v in sd.items() if not re.search(r"\.attn\.(bias|masked_bias|mask)$", k)}
    wte, wpe = _take(sd, "transformer.wte.weight", where), _take(sd, "transformer.wpe.weight", where)
    n_layer = _n_layers(sd, r"transformer\.h\.(\d+)\.")
    vocab_size, n_embd = wte.shape
    if n_head < 1 or n_embd % n_head:
        raise WorldModelError(f"{where}: {n_head} attention heads do not divide the width {n_embd}")
    if "lm_head.weight" not in sd:
        sd["lm_head.weight"] = wte
    if tie is None:
        tie = bool(torch.equal(sd["lm_head.weight"], wte))
    config = GPT2Config(vocab_size=int(vocab_size), n_positions=int(wpe.shape[0]), n_embd=int(n_embd),
                        n_layer=n_layer, n_head=int(n_head), activation_function=activation, resid_pdrop=0.0,
                        embd_pdrop=0.0, attn_pdrop=0.0, tie_word_embeddings=tie, pad_token_id=pad_id,
                        bos_token_id=None, eos_token_id=None)
    model = GPT2LMHeadModel(config)
    own = model.state_dict()
    missing = sorted(k for k in own if k not in sd and not re.search(r"\.attn\.(bias|masked_bias)$", k))
    unexpected = sorted(k for k in sd if k not in own)
    if missing or unexpected:
        raise WorldModelError(f"{where}: weights do not form a GPT-2 (missing {missing[:3]}, unexpected {unexpected[:3]})")
    for k, v in sd.items():
        if tuple(v.shape) != tuple(own[k].shape):
            raise WorldModelError(f"{where}: weight {k} has shape {tuple(v.shape)}, GPT-2 wants {tuple(own[k].shape)}")
    model.load_state_dict({k: v.float() for k, v in sd.items()}, strict=False)
    if tie:
        model.tie_weights()
    return model.eval()


def mingpt_to_gpt2(sd: dict[str, torch.Tensor], where: str) -> dict[str, torch.Tensor]:
    """Li et al.'s minGPT state dict under GPT-2's names."""
    n_layer = _n_layers(sd, r"blocks\.(\d+)\.")
    out = {
        "transformer.wte.weight": _take(sd, "tok_emb.weight", where),
        "transformer.wpe.weight": _take(sd, "pos_emb", where)[0],
        "transformer.ln_f.weight": _take(sd, "ln_f.weight", where),
        "transformer.ln_f.bias": _take(sd, "ln_f.bias", where),
        "lm_head.weight": _take(sd, "head.weight", where),
    }
    for i in range(n_layer):
        b, h = f"blocks.{i}.", f"transformer.h.{i}."
        g = lambda name: _take(sd, b + name, where)  # noqa: E731
        out[h + "ln_1.weight"], out[h + "ln_1.bias"] = g("ln1.weight"), g("ln1.bias")
        out[h + "ln_2.weight"], out[h + "ln_2.bias"] = g("ln2.weight"), g("ln2.bias")
        out[h + "attn.c_attn.weight"] = torch.cat([g(f"attn.{p}.weight").t() for p in ("query", "key", "value")], 1)
        out[h + "attn.c_attn.bias"] = torch.cat([g(f"attn.{p}.bias") for p in ("query", "key", "value")])
        out[h + "attn.c_proj.weight"], out[h + "attn.c_proj.bias"] = g("attn.proj.weight").t(), g("attn.proj.bias")
        out[h + "mlp.c_fc.weight"], out[h + "mlp.c_fc.bias"] = g("mlp.0.weight").t(), g("mlp.0.bias")
        out[h + "mlp.c_proj.weight"], out[h + "mlp.c_proj.bias"] = g("mlp.2.weight").t(), g("mlp.2.bias")
    return {k: v.contiguous() for k, v in out.items()}


def nanogpt_to_gpt2(sd: dict[str, torch.Tensor], where: str) -> dict[str, torch.Tensor]:
    """A nanoGPT state dict under GPT-2's names (``nn.Linear`` transposed, absent biases as zeros)."""
    sd = {k.removeprefix("_orig_mod."): v for k, v in sd.items()}
    sd = {k: v for k, v in sd.items() if not re.search(r"\.attn\.bias$", k) or v.dim() != 4}
    out = dict(sd)
    n_layer = _n_layers(sd, r"transformer\.h\.(\d+)\.")
    for i in range(n_layer):
        h = f"transformer.h.{i}."
        for lin in ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"):
            w = _take(sd, h + lin + ".weight", where)
            out[h + lin + ".weight"] = w.t().contiguous()
            out.setdefault(h + lin + ".bias", torch.zeros(w.shape[0], dtype=w.dtype))
        for ln in ("ln_1", "ln_2"):
            w = _take(sd, h + ln + ".weight", where)
            out.setdefault(h + ln + ".bias", torch.zeros_like(w))
    w = _take(sd, "transformer.ln_f.weight", where)
    out.setdefault("transformer.ln_f.bias", torch.zeros_like(w))
    return out
