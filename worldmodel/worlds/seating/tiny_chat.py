"""A tiny chat model, for tests and for proving the local ``transformers`` path end to end.

:func:`make_tiny_chat_model` builds a word-level GPT-2 chat model (tokenizer with a
chat template) in a folder that :class:`~.backends.HFChatBackend` can load. With a few
hundred steps it learns the answer *format* from random answers, not the puzzle:
``scripts/reproduce_seating.py`` reports it as the "tiny local HF chat model" row, and
the tests use it to exercise the local backend.
"""

from __future__ import annotations

from pathlib import Path

from tqdm.auto import tqdm

from .prompts import MARKER, capability_prompt, validity_prompt
from .world import SeatingWorld, determining_statements, random_statements, statement_tokens

CHAT_TEMPLATE = (
    "{% for message in messages %}<|{{ message['role'] }}|> {{ message['content'] }} <|end|> {% endfor %}"
    "{% if add_generation_prompt %}<|assistant|> {% endif %}"
)


def make_tiny_chat_model(folder: str | Path, seed: int = 0, n: int = 3, train_steps: int = 0,
                         n_layer: int = 1, n_embd: int = 32) -> Path:
    """Build and save a tiny GPT-2 chat model with a word-level tokenizer and a chat template.

    The vocabulary is every whitespace-separated word of the puzzle's prompts for
    ``n`` people plus the answer words. With ``train_steps = 0`` the network is
    random (its greedy answers are almost never parseable); with a few hundred steps
    it learns the answer *format* from random answers (``ANSWER: yes``, ``ANSWER: 2``),
    not the puzzle. Returns the folder.
    """
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    world = SeatingWorld(n)
    toks = statement_tokens(n)
    samples = [capability_prompt(n, toks[:2], p) for p in world.people]
    samples.append(validity_prompt(n, toks, toks[:1]))
    samples.append(validity_prompt(n, (), toks[:1]))
    words = {w for s in samples for w in s.split()}
    words |= {str(i) for i in range(1, 10 * n)} | {"yes", "no", MARKER}
    specials = ["[PAD]", "[UNK]", "<|end|>", "<|user|>", "<|assistant|>"]
    vocab = {w: i for i, w in enumerate(specials + sorted(words - set(specials)))}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tk.decoder = decoders.WordPiece(prefix="##", cleanup=False)
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]", pad_token="[PAD]", eos_token="<|end|>")
    tok.chat_template = CHAT_TEMPLATE
    torch.manual_seed(seed)
    cfg = GPT2Config(vocab_size=len(vocab), n_positions=512, n_embd=n_embd, n_layer=n_layer, n_head=2,
                     bos_token_id=vocab["<|end|>"], eos_token_id=vocab["<|end|>"], pad_token_id=vocab["[PAD]"])
    lm = GPT2LMHeadModel(cfg)
    if train_steps > 0:
        _teach_format(lm, tok, world, seed, train_steps)
    lm.eval()
    lm.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def _teach_format(lm, tok, world: SeatingWorld, seed: int, steps: int) -> None:
    """A few optimiser steps on prompts paired with *random* well-formed answers."""
    import numpy as np
    import torch

    rng = np.random.default_rng(seed)
    opt = torch.optim.AdamW(lm.parameters(), lr=3e-3)
    lm.train()
    for _ in tqdm(range(steps), desc="teaching the tiny chat model the answer format", leave=False):
        texts = []
        for _ in range(8):
            if rng.random() < 0.3:
                stmts, seating = determining_statements(world, rng)
                person = world.people[int(rng.integers(world.n))]
                prompt = capability_prompt(world.n, stmts, person)
                answer = f"{MARKER} {int(rng.integers(1, world.n + 1))}"
            else:
                prefix, _ = random_statements(world, int(rng.integers(1, 4)), rng)
                cont = (world.tokens[int(rng.integers(len(world.tokens)))],)
                prompt = validity_prompt(world.n, prefix, cont)
                answer = f"{MARKER} {'yes' if rng.random() < 0.5 else 'no'}"
            chat = tok.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False,
                                           add_generation_prompt=True)
            texts.append(chat + answer + " <|end|>")
        enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        labels = enc["input_ids"].masked_fill(enc["attention_mask"] == 0, -100)
        loss = lm(**enc, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
