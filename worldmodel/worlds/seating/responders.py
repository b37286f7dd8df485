"""The seating puzzle's own responders (the chat backends themselves are in :mod:`worldmodel.chat`):

* :class:`TrueResponder` — answers every prompt correctly from the DFA (the ceiling).
* :class:`RandomResponder` — answers uniformly at random, seeded per prompt, so the
  answer to a prompt does not depend on order or batching (the floor).

A tiny local chat model to point :class:`HFChatBackend` at is built by
:func:`worldmodel.worlds.seating.tiny_chat.make_tiny_chat_model`.
"""

from __future__ import annotations

import threading

from ...chat import PromptByPromptBackend, SeededRandomBackend
from ...dfa import REJECT, run
from .prompts import MARKER, parse_prompt
from .world import SeatingWorld


class _WorldCache:
    def __init__(self):
        self._worlds: dict[int, SeatingWorld] = {}
        self._lock = threading.Lock()

    def get(self, n: int) -> SeatingWorld:
        with self._lock:
            if n not in self._worlds:
                self._worlds[n] = SeatingWorld(n)
            return self._worlds[n]


class TrueResponder(PromptByPromptBackend):
    """Answers every puzzle prompt correctly from the seating DFA."""

    backend = "true"
    model = "dfa"
    batch_size = 4096

    def __init__(self):
        self._worlds = _WorldCache()

    def answer(self, prompt: str) -> str:
        p = parse_prompt(prompt)
        world = self._worlds.get(p.n)
        if p.kind == "capability":
            state = run(world, p.statements)
            if state is REJECT or len(state) != 1:
                return "The statements do not determine one seating, so I cannot say."
            seat = world.seat_of(next(iter(state)), p.person)
            return f"Only one seating fits. {MARKER} {seat}"
        ok = run(world, p.statements + p.continuation) is not REJECT
        return f"{MARKER} {'yes' if ok else 'no'}"


class RandomResponder(SeededRandomBackend):
    """Answers uniformly at random: a seat in ``1..n``, or yes/no with probability 1/2 each.

    The answer is a function of (seed, prompt) only, so it is the same however the
    prompts are ordered or batched.
    """

    def answer(self, prompt: str) -> str:
        p = parse_prompt(prompt)
        rng = self.rng(prompt)
        if p.kind == "capability":
            return f"{MARKER} {rng.randint(1, p.n)}"
        return f"{MARKER} {rng.choice(['yes', 'no'])}"
