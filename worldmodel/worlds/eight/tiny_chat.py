"""A tiny local chat model for "8": a word-level GPT-2 taught only the reply format.

:func:`make_tiny_chat_model` builds it with :func:`worldmodel.chat.make_word_chat_model`
in a folder that :class:`~worldmodel.chat.HFChatBackend` loads. Its vocabulary is every
word of the benchmark's prompts for the given arcs (both reading registers, every
sentence of every pool, headings, the reply's JSON words). Training pairs real turns
(simulated climbs of random length, rendered as the harness renders them) with a
*random* call in the asked-for JSON, so it learns where and how to answer, not the game:
the reproduction reports it as the "tiny local HF chat model" row, a check that the local
``transformers`` path runs end to end, expected near chance.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Sequence

from ...chat import make_word_chat_model
from .arcs import Arc
from .game import Game
from .prompts import RULES, actions_offered, build_prompt, history_entry, render_loop, reply
from .rules import CALLS, GOAL

REASON = "ok"


def _turn(arc: Arc, rng: random.Random, register: str) -> str:
    """A prompt of a random turn: a judge's climb of 0–7 loops, then the current loop."""
    game = Game(arc, ["easy", "normal", "hard"][rng.randrange(3)], rng)
    game.new()
    history = []
    for _ in range(rng.randrange(GOAL)):
        room = game.room
        obs = render_loop(game.level, room.heading, room.sentences)
        call = "turn_back" if room.has_anomaly else "go_on"
        history.append(history_entry(obs, call, True))
        game.act(call)
    room = game.room
    return build_prompt(register, history, render_loop(game.level, room.heading, room.sentences), actions_offered())


def make_tiny_chat_model(folder: str | Path, arcs: Sequence[Arc], seed: int = 0, train_steps: int = 0,
                         n_layer: int = 1, n_embd: int = 32, n_positions: int = 1024) -> Path:
    """Build and save the tiny chat model for ``arcs``. Returns the folder."""
    arcs = list(arcs)
    texts = [build_prompt(r, [history_entry(render_loop(0, t, []), c, True) for c in CALLS],
                          render_loop(0, t, []), actions_offered()) for r in RULES for a in arcs for t in a.titles]
    for a in arcs:
        texts += [s.replace("{SIGN}", sign) for p in a.props for v in p.values for s in p.pools[v] for sign in a.signs]
    texts += [reply(REASON, [c]) for c in CALLS]

    def example(nrng):
        rng = random.Random(int(nrng.integers(1 << 62)))
        arc = arcs[rng.randrange(len(arcs))]
        prompt = _turn(arc, rng, list(RULES)[rng.randrange(len(RULES))])
        return prompt, reply(REASON, [rng.choice(CALLS)])

    return make_word_chat_model(folder, texts, example, seed=seed, train_steps=train_steps, n_layer=n_layer,
                                n_embd=n_embd, n_positions=n_positions,
                                desc="teaching the tiny 8 chat model the reply format")
