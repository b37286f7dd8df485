"""The state sampler of the group word problems: prefixes that reach group elements."""

from __future__ import annotations

from ...sampling import ExplicitDFASampler


class GroupSampler(ExplicitDFASampler):
    """Prefixes drawn uniformly among generator words of a length reaching a group element.

    States are the word states only (one per group element, drawn uniformly): the
    metrics ask whether a model tells group elements apart, not whether it knows
    that ``=`` was just read.
    """

    def _draw_state(self, rng):
        return int(rng.integers(self.world.group.order))

    def _draw_two_states(self, rng):
        G = self.world.group.order
        q1, q2 = (int(x) for x in rng.choice(G, size=2, replace=False))
        return q1, q2
