"""The world-model probe in words: after a drop history, is a drop possible and does the structure stand?

In the manner of the seating protocol (the paper's App. E) and the TextWorld probe, a
chat model reads the rules of the grid, the drops made so far (as ``ab_drop`` calls)
and one proposed drop, and answers ``yes`` or ``no`` after ``ANSWER:`` to: can the
block be dropped there now (it stays inside the grid), and does the structure still
stand afterwards (the static rule of :mod:`.stability`)? That is validity in the
``stable`` world.

* *compression precision* — two different histories that build the same structure
  (one a reordering of the other, :class:`~.sampler.BlockDropSampler`); ``samples``
  proposed drops, each with probability 1/2 a valid one and otherwise uniform over
  all drops; a trial scores 1 when the answers after the two histories agree on every
  drop whose two answers parse;
* *distinction recall* — two histories that build different structures; up to
  ``samples`` drops of the exact one-drop boundary (valid after the first, not after
  the second); a drop counts as recalled when the answers are *yes* then *no*.

Every trial draws from its own seed; all prompts are built first and asked in one
batch (:meth:`~worldmodel.chat.ChatReport.ask`). :class:`TrueProbeResponder` answers
from the world (the ceiling), :class:`RandomProbeResponder` at random (the floor).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ...chat import Backend, ChatReport, PromptByPromptBackend, SeededRandomBackend
from ...chat import probe_table as words_table
from ...chat import yes_no_pairs
from ...dfa import REJECT, exact_boundary, is_valid
from ...errors import TrialSkipped, WorldModelError
from ...results import trial_seed
from .sampler import BlockDropSampler
from .world import END, BlockDropWorld, drop_text, parse_drop

MARKER = "ANSWER:"
PROBE_METRICS = ("compression_precision", "distinction_recall")
_RULES = ("Blocks are dropped into a grid 20 slots wide (slots 0 to 19, left to right) and 16 layers tall "
          "(layers 0 to 15, layer 0 at the bottom). ab_drop(block, slot) drops a block from the top with its "
          "centre over the slot: b11 is 1 wide and 1 tall, b13 is 1 wide and 3 tall, b31 is 3 wide and 1 tall. "
          "A block falls straight down until it rests on the base or on a block dropped earlier.")
_CALL = re.compile(r"ab_drop\('(b11|b13|b31)', (\d+)\)")


def validity_prompt(history: Sequence[str], proposed: str) -> str:
    """Is ``proposed`` (a drop token) possible after ``history`` (drop tokens), and does the structure stand?"""
    lines = [_RULES, ""]
    if history:
        lines += ["These drops were made, in this order:"] + [f"{i}. {drop_text(t)}" for i, t in enumerate(history, 1)]
    else:
        lines.append("No block has been dropped yet.")
    lines += ["", f"Proposed next drop: {drop_text(proposed)}", "",
              "Can this block be dropped now without leaving the grid, and does the structure still stand after "
              "it, with no block falling over or sinking? You may reason step by step, but end your response "
              f"with '{MARKER} ' followed by yes or no."]
    return "\n".join(lines)


def read_prompt(prompt: str) -> tuple[list[str], str]:
    """``(history, proposed)`` drop tokens of a :func:`validity_prompt`."""
    if "Proposed next drop:" not in prompt:
        raise WorldModelError("not a block-drop probe prompt")
    head, tail = prompt.split("Proposed next drop:", 1)
    history = [f"{k}@{x}" for k, x in _CALL.findall(head)]
    k, x = _CALL.findall(tail)[0]
    return history, f"{k}@{x}"


def parse_yes_no(response: str) -> bool | None:
    if not isinstance(response, str) or MARKER not in response:
        return None
    tail = response.rsplit(MARKER, 1)[1]
    for _ in range(2):
        tail = tail.strip().strip("*'\"` ")
        if tail.endswith("."):
            tail = tail[:-1]
    tail = tail.strip().lower()
    return True if tail == "yes" else False if tail == "no" else None


class TrueProbeResponder(PromptByPromptBackend):
    """Answers from the stable world: the ceiling."""

    backend = "true"
    model = "blockdrop-stable"
    batch_size = 4096

    def __init__(self, world: BlockDropWorld):
        self.world = world

    def answer(self, prompt: str) -> str:
        history, proposed = read_prompt(prompt)
        return f"{MARKER} {'yes' if is_valid(self.world, history + [proposed]) else 'no'}"


class RandomProbeResponder(SeededRandomBackend):
    def answer(self, prompt: str) -> str:
        return f"{MARKER} {self.rng(prompt).choice(['yes', 'no'])}"


@dataclass
class ProbeSettings:
    states: int = 50  #: trials per metric
    samples: int = 5  #: proposed drops per trial
    programs: int = 300  #: random programs behind the pairs
    min_len: int = 2
    max_len: int = 10  #: drops per history
    seed: int = 0

    def check(self) -> None:
        if min(self.states, self.samples, self.min_len) < 1 or self.programs < 2 or self.max_len < self.min_len:
            raise WorldModelError("probe settings: states, samples and min_len must be at least 1, programs at "
                                  "least 2, max_len at least min_len")


@dataclass
class ProbeReport(ChatReport):
    settings: ProbeSettings


def plan_probe(world: BlockDropWorld, s: ProbeSettings) -> dict[str, list[dict]]:
    """Every trial's histories, proposed drops and prompts (no model involved)."""
    sampler = BlockDropSampler(world, s.programs, s.min_len, s.max_len, pool_seed=s.seed)
    drops = list(world.drops)
    out: dict[str, list[dict]] = {m: [] for m in PROBE_METRICS}
    for i in range(s.states):
        rng = np.random.default_rng(trial_seed(s.seed, "blockdrop-probe:compression", i))
        try:
            pair = sampler.compression_pair(rng)
        except TrialSkipped as e:
            out["compression_precision"].append({"trial": i, "status": "skipped", "key": str(i), "reason": e.reason})
        else:
            valid = [t for t in world.valid_tokens(pair.state1) if t != END]
            props = [valid[int(rng.integers(len(valid)))] if valid and rng.random() < 0.5
                     else drops[int(rng.integers(len(drops)))] for _ in range(s.samples)]
            prompts = [validity_prompt(p, c) for c in props for p in (pair.prefix1, pair.prefix2)]
            out["compression_precision"].append({
                "trial": i, "status": "ok", "key": str(i), "state": pair.key, "prefix1": list(pair.prefix1),
                "prefix2": list(pair.prefix2), "proposed": props,
                "truth": [world.step(pair.state1, c) is not REJECT for c in props], "prompts": prompts})
        rng = np.random.default_rng(trial_seed(s.seed, "blockdrop-probe:distinction", i))
        try:
            pair = sampler.distinction_pair(rng)
        except TrialSkipped as e:
            out["distinction_recall"].append({"trial": i, "status": "skipped", "key": str(i), "reason": e.reason})
            continue
        boundary = [b for b in exact_boundary(world, pair.state1, pair.state2, 1) if parse_drop(b[0])]
        if not boundary:
            out["distinction_recall"].append({"trial": i, "status": "skipped", "key": str(i),
                                              "reason": "empty one-drop boundary"})
            continue
        pick = rng.choice(len(boundary), size=min(s.samples, len(boundary)), replace=False)
        props = [boundary[int(j)][0] for j in pick]
        prompts = [validity_prompt(p, c) for c in props for p in (pair.prefix1, pair.prefix2)]
        out["distinction_recall"].append({
            "trial": i, "status": "ok", "key": str(i), "state": pair.key, "prefix1": list(pair.prefix1),
            "prefix2": list(pair.prefix2), "proposed": props, "boundary_size": len(boundary), "prompts": prompts})
    return out


def probe(backend: Backend, world: BlockDropWorld, settings: ProbeSettings | None = None) -> ProbeReport:
    s = settings or ProbeSettings()
    s.check()
    if world.variant != "stable" or world.letters:
        raise WorldModelError("the block-drop probe asks about the stable world without letters")
    return ProbeReport.ask(backend, s, plan_probe(world, s), yes_no_pairs(parse_yes_no))


def probe_table(summaries: dict[str, dict]) -> str:
    """Markdown: one row per responder, the probe's two metrics (:func:`worldmodel.chat.probe_table`)."""
    return words_table(summaries, PROBE_METRICS)


def make_tiny_chat_model(folder, seed: int = 0, train_steps: int = 0, n_layer: int = 1, n_embd: int = 32,
                         kind: str = "probe"):
    """A tiny word-level chat model that learns the answer *format* (random answers), for the probe
    (``kind="probe"``: yes/no) or the generator (``kind="generate"``: a random code block)."""
    from ...chat import make_word_chat_model
    from .grid import KINDS, WIDTH
    from .prompts import VARIANTS

    world = BlockDropWorld("stable")
    drops = list(world.drops)
    if kind == "probe":
        texts = [validity_prompt(drops[:3], drops[0]), validity_prompt([], drops[0])]
        extra = [MARKER, "yes", "no"] + [f"{i}." for i in range(1, 40)] + [f"{x})" for x in range(WIDTH)] + \
            [f"ab_drop('{k}'," for k in KINDS]

        def example(rng):
            hist = [drops[int(j)] for j in rng.integers(len(drops), size=int(rng.integers(0, 6)))]
            return validity_prompt(hist, drops[int(rng.integers(len(drops)))]), \
                f"{MARKER} {'yes' if rng.random() < 0.5 else 'no'}"
        positions = 512
    elif kind == "generate":
        texts = list(VARIANTS.values())
        extra = ["```"] + [f"{x})" for x in range(WIDTH)] + [f"ab_drop('{k}'," for k in KINDS] + \
            [chr(c) for c in range(65, 91)]

        def example(rng):
            name = sorted(VARIANTS)[int(rng.integers(len(VARIANTS)))]
            letter = chr(65 + int(rng.integers(26)))
            calls = " ".join(f"ab_drop('{KINDS[int(rng.integers(3))]}', {int(rng.integers(WIDTH))})"
                             for _ in range(int(rng.integers(1, 8))))
            return VARIANTS[name].replace("<OBJECT>", letter), f"``` {calls} ```"
        positions = 640
    else:
        raise WorldModelError(f"unknown tiny chat model kind {kind!r} (probe, generate)")
    return make_word_chat_model(folder, texts, example, seed=seed, train_steps=train_steps, n_layer=n_layer,
                                n_embd=n_embd, n_positions=positions, extra_words=extra)
