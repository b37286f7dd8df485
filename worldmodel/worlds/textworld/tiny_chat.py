"""A tiny local chat model for TextWorld: a word-level GPT-2 taught only the answer format.

:func:`make_tiny_chat_model` builds it with :func:`worldmodel.chat.make_word_chat_model`
in a folder that :class:`~worldmodel.chat.HFChatBackend` loads. Its vocabulary is every
word of the given games' prompts (the house at the start, every command the automaton
knows and the engine's out-of-scope ones, each game's goal); words it has never seen
(most of the engine's room descriptions) read as ``[UNK]``. Training pairs real prompt
shapes with *random* well-formed answers — ``ANSWER: yes``/``no`` after a validity
question, ``ANSWER: <a listed command>`` after an agent turn — so it learns where and
how to answer, not the house. ``scripts/reproduce_textworld.py`` reports it as the
"tiny local HF chat model" row: a check that the local ``transformers`` path runs end to
end, expected to score near chance.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from ...chat import make_word_chat_model
from ...dfa import random_walk
from .house import command_of
from .llm import MARKER, agent_prompt, validity_prompt
from .world import TextWorldWorld

FEEDBACK = "You are in a room. You see some things here."  # stand-in for the engine's text while teaching


def make_tiny_chat_model(folder: str | Path, worlds: Sequence[TextWorldWorld], seed: int = 0, train_steps: int = 0,
                         n_layer: int = 1, n_embd: int = 32, n_positions: int = 1024) -> Path:
    """Build and save the tiny chat model for ``worlds`` (the games it will be asked about). Returns the folder."""
    worlds = list(worlds)
    texts = []
    for w in worlds:
        commands = [command_of(t) for t in w.tokens] + [command_of(c) for c in w.house.excluded]
        texts.append(validity_prompt(w, w.tokens, w.tokens[:1]))
        texts.append(validity_prompt(w, (), w.tokens[:1]))
        texts.append(agent_prompt(w.house.objective, commands[:1], FEEDBACK, commands))
        texts.append(agent_prompt("", (), FEEDBACK, commands[:1]))
    extra = ["yes", "no", MARKER]

    def example(rng):
        """A validity question with a random yes/no, or an agent turn with a random listed command."""
        w = worlds[int(rng.integers(len(worlds)))]
        history = list(random_walk(w, w.initial_state(), int(rng.integers(0, 25)), rng))
        if rng.random() < 0.5:
            proposed = w.tokens[int(rng.integers(len(w.tokens)))]
            return validity_prompt(w, history, [proposed]), f"{MARKER} {'yes' if rng.random() < 0.5 else 'no'}"
        state = w.initial_state()
        for t in history:
            state = w.step(state, t)
        listed = sorted(command_of(t) for t in w.valid_tokens(state)) or ["look"]
        objective = w.house.objective if rng.random() < 0.67 else ""
        prompt = agent_prompt(objective, [command_of(t) for t in history], FEEDBACK, listed)
        return prompt, f"{MARKER} {listed[int(rng.integers(len(listed)))]}"

    return make_word_chat_model(folder, texts, example, seed=seed, train_steps=train_steps, n_layer=n_layer,
                                n_embd=n_embd, n_positions=n_positions, extra_words=extra,
                                desc="teaching the tiny TextWorld chat model the answer format")
