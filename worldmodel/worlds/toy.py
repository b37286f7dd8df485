"""The toy world: a seeded random explicit DFA, trained on random valid walks.

It exercises the whole core (DFA, models, metrics, training, CLI) in seconds, with
no domain code: it is :class:`~worldmodel.custom.WorldDomain` (random-walk data, the
uniform-prefix sampler) with a random DFA for its world. Task settings (``[world]``):
``n_states``, ``n_tokens``, ``reject_prob`` (share of transitions that go to the reject
state); ``[data]``: ``n_train``, ``n_val``, ``n_test``, ``min_len``, ``max_len`` (walk
lengths); sampled prefixes are 1 to ``max_len // 2`` tokens long.
"""

from __future__ import annotations

from ..custom import WorldDomain
from ..dfa import ExplicitDFA, random_dfa
from ..errors import WorldModelError


class ToyDomain(WorldDomain):
    """A random minimal DFA; data are uniform random valid walks from the start."""

    schema = {
        "world": {"n_states": int, "n_tokens": int, "reject_prob": float},
        "data": WorldDomain.schema["data"],
    }

    def build_world(self) -> ExplicitDFA:
        w = self.task.section("world")
        try:
            n_states, n_tokens = int(w.get("n_states", 8)), int(w.get("n_tokens", 4))
        except (TypeError, ValueError):
            raise WorldModelError(f"task {self.task.where}: n_states and n_tokens must be integers") from None
        return random_dfa(n_states, n_tokens, self.task.seed, reject_prob=float(w.get("reject_prob", 0.4)),
                          name=self.task.name)
