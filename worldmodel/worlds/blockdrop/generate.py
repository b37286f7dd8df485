"""Generators asked for levels, scored as the competition scores them.

The competition's protocol (:func:`run`): for each prompt (a template holding
``<OBJECT>``) and each target letter, the prompt with the letter in place of the
marker is sent ``trials`` times, each a fresh conversation; every response goes
through the competition's pipeline (:func:`~.scoring.level_of`: last code block,
``ab_drop`` calls, conversion), each level is simulated for 10 s in Box2D
(:func:`~.physics.simulate`: stability ``st``), rendered as the evaluator renders it
(:func:`~.render.render`) and classified (:mod:`.similarity`: ``si``, the probability
of the target letter); then :func:`~.scoring.score` gives weights, trial, character
and prompt scores. A response without a level scores ``st = si = 0``.

Who answers (a :class:`~worldmodel.chat.Backend`):

* any chat backend of :mod:`worldmodel.chat` (an OpenAI-compatible endpoint, a local
  Hugging Face chat model). For ``trials`` independent answers to one prompt it is
  asked the same prompt once per trial (at the temperature the command sets);
* :class:`TrialResponder` subclasses, which know the letter and the trial and need no
  model: :class:`ScriptedGenerator` (known-stable programs from the letter generator,
  each checked in Box2D), :class:`RandomGenerator` (random drops anywhere), and
  :class:`ModelGenerator` (a sequence model over drop tokens, e.g. the GPT-2 trained on
  letter programs, sampled after the letter's token).

Responses are cached per (backend, model, prompt, trial) in a
:class:`~worldmodel.chat.ResponseCache` (the trial is part of the key), so a rerun
asks nothing and an interrupted run resumes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
from tqdm.auto import tqdm

from ...safety import atomic_write
from ...chat import Backend, ResponseCache
from ...errors import WorldModelError
from ...results import trial_seed
from . import physics
from .grid import KINDS, WIDTH
from .render import poses, render
from .scoring import OBJECT, Scores, level_of, program_text, qualify, score
from .world import END, letter_token, parse_drop


class TrialResponder(Backend):
    """A responder told the letter and the trial of each answer (no chat model behind it)."""

    batch_size = 1 << 30

    def ask(self, prompts):  # pragma: no cover - the protocol calls answer_trials
        raise WorldModelError(f"{self.backend} answers only through the block-drop protocol")

    def answer_trials(self, prompt: str, letter: str, trials: Sequence[int]) -> list[str]:
        return [self.answer(prompt, letter, t) for t in trials]

    def answer(self, prompt: str, letter: str, trial: int) -> str:
        raise NotImplementedError


class ScriptedGenerator(TrialResponder):
    """Known-stable levels: programs of the letter generator that also stand in Box2D (st = 1)."""

    backend = "scripted"

    def __init__(self, seed: int = 0, draws: int = 50):
        self.seed = int(seed)
        self.draws = int(draws)
        self.model = f"letter-generator-seed{self.seed}"

    def answer(self, prompt, letter, trial):
        from .letters import letter_program

        rng = np.random.default_rng(trial_seed(self.seed, f"blockdrop-scripted:{letter}", trial))
        for _ in range(self.draws):
            prog = letter_program(letter, rng)
            if prog is not None and physics.stability(_blocks(prog)) == 1.0:
                return f"Here is a stable {letter}.\n{program_text(prog)}"
        raise WorldModelError(f"the scripted generator found no physics-stable {letter!r} in {self.draws} draws")


class RandomGenerator(TrialResponder):
    """Uniformly random drops (any block, any slot 0..19; 1..20 of them): some intrude on the boundary."""

    backend = "random"

    def __init__(self, seed: int = 0, max_drops: int = 20):
        self.seed = int(seed)
        self.max_drops = int(max_drops)
        self.model = f"uniform-drops-seed{self.seed}"

    def answer(self, prompt, letter, trial):
        rng = np.random.default_rng(trial_seed(self.seed, f"blockdrop-random:{letter}", trial))
        n = int(rng.integers(1, self.max_drops + 1))
        lines = [f"ab_drop('{KINDS[int(rng.integers(3))]}', {int(rng.integers(WIDTH))})" for _ in range(n)]
        return "```\n" + "\n".join(lines) + "\n```"


class ModelGenerator(TrialResponder):
    """A sequence model over the letters world's tokens, sampled after the letter token.

    Trial ``i`` of a letter draws its tokens by inverse CDF from uniforms seeded by
    ``(seed, letter, i)`` (plain sampling: every token of positive probability, up to
    ``end`` or ``max_len`` tokens); its drop tokens become the response's code block.
    """

    backend = "model"

    def __init__(self, model, name: str, seed: int = 0, max_len: int = 63):
        self.lm = model
        self.model = name
        self.seed = int(seed)
        self.max_len = int(max_len)

    def answer_trials(self, prompt, letter, trials):
        from ...acceptance import Epsilon

        uniforms = np.stack([np.random.default_rng(trial_seed(self.seed, f"blockdrop-model:{letter}", t))
                             .random(self.max_len) for t in trials])
        groups = self.lm.sample([[letter_token(letter)]], [uniforms], Epsilon(0.0), stop_tokens=frozenset({END}),
                                keep_top=True)
        out = []
        for seq in groups[0]:
            tokens = list(getattr(seq, "tokens", seq))
            out.append(program_text([t for t in tokens if parse_drop(t)]) if any(parse_drop(t) for t in tokens)
                       else "(no drops)")
        return out


def _blocks(tokens):
    from .grid import build

    return build([parse_drop(t) for t in tokens if parse_drop(t)])


@dataclass
class GenerateSettings:
    letters: list[str]
    trials: int = 10
    seed: int = 0

    def check(self) -> None:
        if self.trials < 1:
            raise WorldModelError(f"--trials must be at least 1, got {self.trials}")
        bad = [c for c in self.letters if len(c) != 1 or not "A" <= c <= "Z"]
        if not self.letters or bad:
            raise WorldModelError(f"--letters must be capital letters, e.g. I,L,U (got {','.join(self.letters)!r})")


def fill_prompt(template: str, letter: str) -> str:
    return template.replace(OBJECT, letter)


def ask_trials(backend: Backend, cache: ResponseCache, prompt: str, letter: str, trials: int,
               progress: bool = True) -> list[str]:
    """``trials`` responses to ``prompt`` for ``letter``, from the cache where it has them."""
    keys = [f"{prompt}\x00trial {t}" for t in range(trials)]
    got = [cache.get(backend.backend, backend.model, k) for k in keys]
    todo = [t for t, r in enumerate(got) if r is None]
    if todo:
        if isinstance(backend, TrialResponder):
            fresh = backend.answer_trials(prompt, letter, todo)
        else:
            fresh = []
            for t in tqdm(todo, desc=f"asking {backend.backend} for {letter}", disable=not progress, leave=False):
                fresh += backend.ask([prompt])
        for t, r in zip(todo, fresh):
            cache.put(backend.backend, backend.model, keys[t], r)
            got[t] = r
    return got


@dataclass
class PromptRun:
    """One prompt's trials: per letter, a record per trial."""

    name: str
    template: str
    trials: dict[str, list[dict]] = field(default_factory=dict)


def evaluate_responses(responses: dict[str, list[str]], classifier, out: Path | None = None, name: str = "",
                       progress: bool = True) -> dict[str, list[dict]]:
    """Levels, stability (Box2D) and similarity of every response; images and levels under ``out/name``."""
    from .unity import level_xml

    records: dict[str, list[dict]] = {}
    images, where = [], []
    items = [(j, i, r) for j, rs in responses.items() for i, r in enumerate(rs)]
    for j, i, r in tqdm(items, desc=f"simulating levels{' of ' + name if name else ''}", disable=not progress,
                        leave=False):
        level = level_of(r)
        rec = {"letter": j, "trial": i, "level": level.ok, "error": level.error,
               "drops": [[k, x] for k, x in level.drops], "st": 0.0, "si": 0.0}
        if level.ok:
            sim = physics.simulate(level.blocks)
            rec.update(st=sim.stability, blocks=len(level.blocks), moving=sim.moving)
            img = render(poses(level.blocks, sim))
            images.append(img)
            where.append((j, i))
            if out is not None:
                d = out / name / j
                d.mkdir(parents=True, exist_ok=True)
                img.save(d / f"{i + 1}.png")
                (d / f"{i + 1}.xml").write_text(level_xml(level.blocks))
        records.setdefault(j, []).append(rec)
    if images:
        probs = classifier.probs(images)
        for (j, i), p in zip(where, probs):
            records[j][i]["si"] = float(p[ord(j) - 65])
            records[j][i]["top"] = chr(65 + int(np.argmax(p)))
    return records


def run(backend: Backend, prompts: dict[str, str], settings: GenerateSettings, classifier, cache: ResponseCache,
        out: Path | None = None, progress: bool = True) -> tuple[dict[str, PromptRun], Scores]:
    """The competition's protocol for ``prompts`` (name -> template) against ``backend``."""
    settings.check()
    runs = {}
    for name, template in prompts.items():
        problems = qualify(template)
        if problems:
            raise WorldModelError(f"prompt {name} is disqualified: {'; '.join(problems)}")
        responses = {j: ask_trials(backend, cache, fill_prompt(template, j), j, settings.trials, progress)
                     for j in settings.letters}
        records = evaluate_responses(responses, classifier, out / "levels" if out else None, name, progress)
        if out is not None:
            d = out / "responses" / name
            d.mkdir(parents=True, exist_ok=True)
            for j, rs in responses.items():
                for i, r in enumerate(rs):
                    (d / f"{j}_{i + 1}.txt").write_text(r)
        runs[name] = PromptRun(name, template, records)
    scores = score({k: {j: [(t["st"], t["si"]) for t in r.trials[j]] for j in settings.letters}
                    for k, r in runs.items()}, settings.letters, settings.trials)
    return runs, scores


def summary(runs: dict[str, PromptRun], scores: Scores, settings: GenerateSettings, backend: Backend,
            classifier) -> dict:
    per = {}
    for k, r in runs.items():
        per[k] = {j: {"stability": float(np.mean([t["st"] for t in ts])),
                      "similarity": float(np.mean([t["si"] for t in ts])),
                      "levels": int(sum(t["level"] for t in ts)), "trials": len(ts),
                      "errors": sorted({t["error"].split(":")[0] for t in ts if t["error"]})}
                  for j, ts in r.trials.items()}
    return {"settings": {"letters": settings.letters, "trials": settings.trials, "seed": settings.seed},
            "backend": backend.describe(), "classifier": classifier.describe(), "physics": physics.engine_version(),
            "per_prompt": per, "scores": scores.to_dict()}


def markdown(summ: dict) -> str:
    """The score table: per prompt and letter mean stability / similarity / levels built, then scores."""
    letters = summ["settings"]["letters"]
    cls = summ["classifier"]
    sim_name = f"similarity ({'proxy classifier: ' if cls.get('proxy') else ''}{cls['label']})"
    lines = [f"Stability: Box2D ({summ['physics']}), 10 s. Similarity: {sim_name}. "
             f"{summ['settings']['trials']} trials per letter.", "",
             "| Prompt | " + " | ".join(f"{j}: st / si / levels" for j in letters) + " | prompt score | norm_prompt |",
             "|---|" + "---|" * len(letters) + "---|---|"]
    sc = summ["scores"]
    for k in sc["ranking"]:
        cells = [f"{p['stability']:.2f} / {p['similarity']:.2f} / {p['levels']}/{p['trials']}"
                 for p in (summ["per_prompt"][k][j] for j in letters)]
        lines.append(f"| {k} | " + " | ".join(cells) + f" | {sc['prompt'][k]:.4f} | {sc['norm_prompt'][k]:.2f} |")
    lines += ["", "| weight | " + " | ".join(letters) + " |", "|---|" + "---|" * len(letters)]
    for key in ("w_st", "w_si", "weight"):
        lines.append(f"| {key} | " + " | ".join(f"{sc[key][j]:.3f}" for j in letters) + " |")
    return "\n".join(lines) + "\n"


def write(out: Path, summ: dict, runs: dict[str, PromptRun], title: str) -> None:
    from ...results import write_json_atomic

    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out / "results.json", summ)
    with (out / "trials.jsonl").open("w") as f:
        for k, r in runs.items():
            for j, ts in r.trials.items():
                for t in ts:
                    f.write(json.dumps({"prompt": k, **t}) + "\n")
    atomic_write(out / "results.md", f"# {title}\n\n" + markdown(summ))
