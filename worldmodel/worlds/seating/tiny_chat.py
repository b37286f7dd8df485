"""A tiny chat model, for tests and for proving the local ``transformers`` path end to end.

:func:`make_tiny_chat_model` builds a word-level GPT-2 chat model (tokenizer with a
chat template; :func:`worldmodel.chat.make_word_chat_model`) in a folder that
:class:`~.backends.HFChatBackend` can load. With a few hundred steps it learns the
answer *format* from random answers, not the puzzle: ``scripts/reproduce_seating.py``
reports it as the "tiny local HF chat model" row, and the tests use it to exercise the
local backend.
"""

from __future__ import annotations

from pathlib import Path

from ...chat import make_word_chat_model
from .prompts import MARKER, capability_prompt, validity_prompt
from .world import SeatingWorld, determining_statements, random_statements, statement_tokens


def make_tiny_chat_model(folder: str | Path, seed: int = 0, n: int = 3, train_steps: int = 0,
                         n_layer: int = 1, n_embd: int = 32) -> Path:
    """Build and save a tiny GPT-2 chat model with a word-level tokenizer and a chat template.

    The vocabulary is every whitespace-separated word of the puzzle's prompts for
    ``n`` people plus the answer words. With ``train_steps = 0`` the network is
    random (its greedy answers are almost never parseable); with a few hundred steps
    it learns the answer *format* from random answers (``ANSWER: yes``, ``ANSWER: 2``),
    not the puzzle. Returns the folder.
    """
    world = SeatingWorld(n)
    toks = statement_tokens(n)
    samples = [capability_prompt(n, toks[:2], p) for p in world.people]
    samples.append(validity_prompt(n, toks, toks[:1]))
    samples.append(validity_prompt(n, (), toks[:1]))
    extra = [str(i) for i in range(1, 10 * n)] + ["yes", "no", MARKER]

    def example(rng):
        """A prompt with a *random* well-formed answer (30% capability, 70% validity questions)."""
        if rng.random() < 0.3:
            stmts, _ = determining_statements(world, rng)
            person = world.people[int(rng.integers(world.n))]
            return capability_prompt(world.n, stmts, person), f"{MARKER} {int(rng.integers(1, world.n + 1))}"
        prefix, _ = random_statements(world, int(rng.integers(1, 4)), rng)
        cont = (world.tokens[int(rng.integers(len(world.tokens)))],)
        return validity_prompt(world.n, prefix, cont), f"{MARKER} {'yes' if rng.random() < 0.5 else 'no'}"

    return make_word_chat_model(folder, samples, example, seed=seed, train_steps=train_steps, n_layer=n_layer,
                                n_embd=n_embd, n_positions=512, extra_words=extra)
