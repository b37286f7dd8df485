"""Greedy decoding: the one loop that extends prefixes with a model's top token.

Detours (:mod:`worldmodel.detours`), the navigation capabilities and the sequences
that map reconstruction starts from all decode this way; they differ only in when a
sequence stops and in whether a token may be replaced (detours), which are arguments.
"""

from __future__ import annotations

from typing import Callable, Hashable, NamedTuple, Sequence

import numpy as np

from .dfa import REJECT, Token, World, run

#: ``choose(i, row, state, sequence) -> token index``: pick sequence ``i``'s next token from its
#: probability row (default: the top one). ``state`` is the world state (``None`` without a world).
ChooseFn = Callable[[int, np.ndarray, Hashable, list], int]


class Decoding(NamedTuple):
    """Decoded sequences (prefix included) and, with a world, the state each ended in (else ``None``)."""

    sequences: list[list[Token]]
    states: list[Hashable]


def greedy_decode(model, prefixes: Sequence[Sequence[Token]], stop=frozenset(), max_len: int = 100,
                  world: World | None = None, batch: int = 256, choose: ChooseFn | None = None,
                  progress: bool = False, desc: str = "greedy decoding") -> Decoding:
    """Extend every prefix with the model's top-1 token until it stops.

    A sequence stops after a token in ``stop``, when it has ``max_len`` tokens, or, with
    a ``world``, after the first token the world rejects (kept, so the caller sees it).
    Without a world the model is never checked: a sequence with an impossible token
    carries on. Prefixes the world rejects, or already ``max_len`` long, are not
    extended. All live sequences are decoded together, ``batch`` per
    :meth:`next_token_probs` call; ``choose`` may replace the top-1 rule.
    """
    tokens = list(model.tokens)
    seqs = [list(p) for p in prefixes]
    states: list[Hashable] = [run(world, s) if world is not None else None for s in seqs]
    live = [i for i, s in enumerate(seqs) if len(s) < max_len and states[i] is not REJECT]
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(seqs), initial=len(seqs) - len(live), desc=desc, leave=False)
    while live:
        probs = np.concatenate([np.asarray(model.next_token_probs([seqs[i] for i in live[b:b + batch]]))
                                for b in range(0, len(live), batch)])
        still = []
        for row, i in zip(probs, live):
            pick = int(np.argmax(row)) if choose is None else choose(i, row, states[i], seqs[i])
            tok = tokens[pick]
            seqs[i].append(tok)
            if world is not None:
                states[i] = world.step(states[i], tok)
            if tok in stop or len(seqs[i]) >= max_len or states[i] is REJECT:
                if bar is not None:
                    bar.update(1)
            else:
                still.append(i)
        live = still
    if bar is not None:
        bar.close()
    return Decoding(seqs, states)
