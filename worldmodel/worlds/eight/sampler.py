"""State samplers for "8": uniform prefixes on the automaton, and constructed pairs for insane.

* :class:`EightSampler` (easy, normal, hard) — :class:`~worldmodel.sampling.ExplicitDFASampler`
  over the minimal automaton: a state drawn uniformly (the won state, which has no
  continuation, excluded), prefixes drawn uniformly among the words of a uniformly drawn
  length that reach it. With ``climb_only`` the wrong calls are taken out first, so every
  prefix is one climb without a reset (what the benchmark's prompt shows): the in-words
  probe uses it.
* :class:`InsaneSampler` — for the implicit insane world. A distinction pair is two
  independent uniform plays of the same length (redrawn until their states differ). A
  compression pair is a uniform play and a second history to the same state, made by
  redrawing every completed loop of the current climb while keeping each property's
  first appearance where it was (so the climb's baseline, the holds and the level are
  unchanged; the calls are the correct ones), or, when that does not reach the same
  state, by putting a different failed climb before the current one.
"""

from __future__ import annotations

import numpy as np

from ...dfa import REJECT, random_walk, run
from ...errors import TrialSkipped
from ...sampling import ExplicitDFASampler, StateSampler
from .automaton import Loop
from .rules import CALLS, DOOR, MAX_DETAILS, MIN_DETAILS, RESET


def climb_walk(world, state, rng: np.random.Generator, max_len: int, stop_at_call: bool = False) -> list[str]:
    """A uniform walk that never makes a wrong call (so it stays in one climb); ``stop_at_call``: stop at a call point."""
    out: list[str] = []
    s = state
    while len(out) < max_len:
        options = [t for t in world.valid_tokens(s) if t != RESET and (t not in CALLS or world.verdict(s, t))]
        if stop_at_call:
            if any(t in CALLS for t in options) and (rng.random() < 0.5 or all(t in CALLS for t in options)):
                return out
            options = [t for t in options if t not in CALLS]
        options = [t for t in options if t != "door"]
        if not options:
            break
        t = options[int(rng.integers(len(options)))]
        out.append(t)
        s = world.step(s, t)
    return out



class EightSampler(ExplicitDFASampler):
    """Uniform prefixes to uniformly drawn states of an :class:`~.world.EightWorld` (see the module docstring)."""

    def __init__(self, world, min_len: int = 1, max_len: int = 64, climb_only: bool = False):
        self.full = world
        if climb_only:
            from ...dfa import ExplicitDFA

            delta = world.delta.copy()
            for c in CALLS:
                i = world.tokens.index(c)
                delta[delta[:, i] == world.reset_state, i] = -1
            world = ExplicitDFA(delta, world.tokens, world.start, name=world.name)
        super().__init__(world, min_len, max_len)
        wanted = ("loop",) if climb_only else ("loop", "reset", "door")
        self.states = np.array([q for q in range(world.n_states) if self.full.phase(q) in wanted
                                and self._lengths(q, 1)])
        if len(self.states) == 0:
            raise TrialSkipped("no state is reachable within the prefix lengths")

    def _draw_state(self, rng) -> int:
        return int(self.states[int(rng.integers(len(self.states)))])

    def _draw_two_states(self, rng) -> tuple[int, int]:
        q1 = self._draw_state(rng)
        q2 = self._draw_state(rng)
        while q2 == q1:
            q2 = self._draw_state(rng)
        return q1, q2


def _climbs(tokens) -> tuple[list[str], list[list[str]], list[str]]:
    """``(before, loops, partial)``: tokens up to the last reset, the current climb's completed loops, the open loop."""
    toks = list(tokens)
    cut = max((i for i, t in enumerate(toks) if t == RESET), default=-1) + 1
    before, climb = toks[:cut], toks[cut:]
    loops, cur = [], []
    for t in climb:
        cur.append(t)
        if t in CALLS:
            loops.append(cur)
            cur = []
    return before, loops, cur


class InsaneSampler(StateSampler):
    """Prefix pairs for the implicit insane world (see the module docstring)."""

    def __init__(self, world, max_len: int = 64, tries: int = 20):
        super().__init__(world)
        self.max_len, self.tries = max_len, tries

    def _play(self, rng, length: int) -> tuple[str, ...]:
        w = self.world
        walk = random_walk(w, w.initial_state(), length, rng)
        if walk and walk[-1] == DOOR:
            walk = walk[:-1]   # the won state has no continuation to compare
        return walk

    def _redraw_loop(self, state, loop: list[str], firsts: set[str], rng) -> list[str] | None:
        """Another complete loop from ``state`` that shows the same first appearances, with its correct call."""
        w, arc = self.world, self.world.arc
        s, base = state
        if not isinstance(s, Loop):
            return None
        seen = [p for p, b in zip(arc.names, base) if b is not None]
        must = {arc.split(t)[0]: arc.split(t)[1] for t in loop if t in firsts}
        for _ in range(self.tries):
            k = int(rng.integers(MIN_DETAILS, MAX_DETAILS + 1))
            others = [p for p in seen if p not in must]
            rng.shuffle(others)
            props = set(must) | set(others[:max(0, k - len(must))])
            out, st = [], state
            for p in arc.names:
                if p not in props:
                    continue
                if p in must:
                    v = must[p]
                else:
                    values = arc.prop(p).values
                    v = base[arc.names.index(p)] if rng.random() < 0.8 else values[int(rng.integers(len(values)))]
                t = arc.token(p, v)
                nxt = w.step(st, t)
                if nxt is REJECT:
                    out = None
                    break
                out.append(t)
                st = nxt
            if out is None:
                continue
            calls = [c for c in CALLS if w.verdict(st, c)]
            if calls:
                return out + calls
        return None

    def _rewrite(self, prefix, rng) -> tuple[str, ...] | None:
        w = self.world
        before, loops, partial = _climbs(prefix)
        if not loops:
            return None
        state = run(w, before)
        out = list(before)
        for loop in loops:
            base_before = state[1]
            firsts = {t for t in loop if t not in CALLS
                      and base_before[w.arc.names.index(w.arc.split(t)[0])] is None}
            new = self._redraw_loop(state, loop, firsts, rng)
            if new is None:
                return None
            out += new
            state = run(w, new, state)
            if state is REJECT:
                return None
        return tuple(out + partial)

    def compression_pair(self, rng):
        for _ in range(self.tries):
            p1 = self._play(rng, int(rng.integers(1, self.max_len + 1)))
            if not p1:
                continue
            q = run(self.world, p1)
            p2 = self._rewrite(p1, rng)
            if p2 is not None and p2 != p1 and run(self.world, p2) == q:
                return self.make_pair(self.world.state_key(q), p1, p2)
            _, _, partial = _climbs(p1)
            b, loops, _ = _climbs(p1)
            climb = [t for loop in loops for t in loop] + partial
            fail = self._failed_climb(rng)
            if fail is not None:
                p2 = tuple(fail) + tuple(climb)
                if p2 != p1 and run(self.world, p2) == q:
                    return self.make_pair(self.world.state_key(q), p1, p2)
        raise TrialSkipped("could not draw two different histories to one insane state")

    def _failed_climb(self, rng) -> list[str] | None:
        w = self.world
        for _ in range(self.tries):
            walk = list(random_walk(w, w.initial_state(), self.max_len, rng))
            if RESET in walk:
                return walk[:walk.index(RESET) + 1]
        return None

    def distinction_pair(self, rng):
        for _ in range(self.tries):
            length = int(rng.integers(1, self.max_len + 1))
            p1, p2 = self._play(rng, length), self._play(rng, length)
            if not p1 or not p2:
                continue
            q1, q2 = run(self.world, p1), run(self.world, p2)
            if q1 != q2:
                return self.make_pair(f"{self.world.state_key(q1)}||{self.world.state_key(q2)}", p1, p2)
        raise TrialSkipped("could not draw two insane histories to different states")


class InsaneClimbSampler(InsaneSampler):
    """Compression pairs within one climb (the in-words probe): a climb and its loops redrawn."""

    def compression_pair(self, rng):
        w = self.world
        for _ in range(self.tries):
            p1 = tuple(climb_walk(w, w.initial_state(), rng, int(rng.integers(1, self.max_len + 1))))
            if not p1:
                continue
            p2 = self._rewrite(p1, rng)
            if p2 is not None and p2 != p1 and run(w, p2) == run(w, p1):
                return self.make_pair(w.state_key(run(w, p1)), p1, p2)
        raise TrialSkipped("could not redraw the climb to the same insane state")
