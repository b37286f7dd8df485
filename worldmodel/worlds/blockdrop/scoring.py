"""The ChatGPT4PCG competition's evaluation: from a response to a level, and from levels to scores.

**Responses** (:func:`extract_code`, :func:`parse_program`, :func:`level_of`). Only the
*last* code block of a response (the text between its last pair of triple backticks)
is read; from it, every call ``ab_drop('b..', x)`` (either quote, spaces after the
comma; ``b`` followed by 1 or 3 twice) is kept in order, lower-cased, and anything
else (loops, variables, comments) is ignored. No block, or no call, is a response
*without a level*. The calls are then dropped (:mod:`.grid`); an unknown block type
(``b33``), a missing slot or a drop that intrudes on the grid boundary is a
*conversion error*: the level is not built. A trial without a level scores 0.

**Prompts** (:func:`qualify`): only letters, digits, space and
``~ / \\ + - * ` ' " . : ; ? — , ! @ # $ % ^ & ( ) _ = [ ] { } | < >`` and curly quotes;
at most 900 words (counted as the competition's ``words-count`` package counts them,
approximately: punctuation splits words); the marker ``<OBJECT>``, replaced by the
target letter.

**Scores** (:func:`score`), for prompts ``k`` and target letters ``j`` over ``T``
trials ``i`` (a missing trial counts 0), ``C`` the number of letters::

    w_st_j = max(1 - mean_{i,k} st_ijk, 1/C)      w_si_j = max(1 - mean_{i,k} si_ijk, 1/C)
    weight_j = w_st_j · w_si_j
    trial_ijk = weight_j · st_ijk · si_ijk
    char_jk = mean_i trial_ijk,   prompt_k = mean_j char_jk
    norm_prompt_k = 100 · prompt_k / Σ_k prompt_k

:func:`score_from_means` computes the same from per-(prompt, letter) means only (as
for the paper's Table I, whose per-trial values are not published): the weights are
exact, ``char_jk`` becomes ``weight_j · mean st · mean si``, which differs from the
mean of products by the trials' covariance.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from .grid import Block, DropError, build

FUNCTION = "ab_drop"
MAX_WORDS = 900
OBJECT = "<OBJECT>"
_BLOCK = re.compile(r"```([^`]+)```")
_ALLOWED = re.compile(r"[A-Za-z\d~/\\+,\-*`'\".!@#$%^&()_=\[\]{}|<>:;?\u2014\u201C\u201D\u2018\u2019 \n\r\t]")
_WORD_BREAKS = re.compile(r"[,，.。:：;；\[\]【】{｛}｝(（)）<《>》$￥!！?？~～'’\"“”*/\\&%@#^、\s]+")


def _call_pattern(function: str) -> re.Pattern:
    return re.compile(re.escape(function) + r"\(['|\"]b[1|3][1|3]['|\"], *\d*\)")


def extract_code(response: str, function: str = FUNCTION) -> str | None:
    """The ``function(...)`` calls of the response's last code block, one per line, lower case; None if none."""
    blocks = _BLOCK.findall(response or "")
    if not blocks:
        return None
    calls = [m.group(0).replace('"', "'") for m in _call_pattern(function).finditer(blocks[-1])]
    return "\n".join(calls).lower() + "\n" if calls else None


def parse_program(code: str, function: str = FUNCTION) -> list[tuple[str, int | None]]:
    """``[(kind, slot)]`` of extracted code; ``slot`` None where the call gave none."""
    out = []
    for line in code.splitlines():
        if not line.startswith(function + "("):
            continue
        kind = line[len(function) + 2:line.index(",") - 1]
        slot = line[line.index(",") + 1:].split(")")[0].strip()
        out.append((kind, int(slot) if slot.isdigit() else None))
    return out


@dataclass
class Level:
    """What a response yields: its extracted code, its drops, its blocks, or why there is no level."""

    code: str | None
    drops: list[tuple[str, int | None]] = field(default_factory=list)
    blocks: list[Block] | None = None
    error: str = ""  #: ``"no code block"``, ``"no ab_drop call"``, or the conversion error

    @property
    def ok(self) -> bool:
        return self.blocks is not None


def level_of(response: str, function: str = FUNCTION) -> Level:
    """The competition's pipeline from a response to a level (or the reason there is none)."""
    if not _BLOCK.search(response or ""):
        return Level(None, error="no code block")
    code = extract_code(response, function)
    if code is None:
        return Level(None, error=f"no {function}() call in the last code block")
    drops = parse_program(code, function)
    try:
        blocks = build([(k, -1 if x is None else x) for k, x in drops])
    except DropError as e:
        return Level(code, drops, None, f"conversion error: {e}")
    return Level(code, drops, blocks)


def program_text(tokens: Sequence[str], function: str = FUNCTION) -> str:
    """Drop tokens (``b31@7``) as a code block of ``function`` calls, as a response would give them."""
    from .world import parse_drop

    lines = [f"{function}('{k}', {x})" for k, x in (parse_drop(t) for t in tokens if parse_drop(t))]
    return "```\n" + "\n".join(lines) + "\n```"


# ---------------------------------------------------------------------------
# Prompt rules
# ---------------------------------------------------------------------------


def count_words(text: str) -> int:
    """Words as the competition counted them (``words-count``: punctuation and spaces separate words)."""
    return len([w for w in _WORD_BREAKS.split(text) if w])


def disallowed_characters(text: str) -> list[str]:
    """The characters of ``text`` the rules do not allow, each once, in order of appearance."""
    return list(dict.fromkeys(_ALLOWED.sub("", text)))


def qualify(prompt: str, max_words: int = MAX_WORDS) -> list[str]:
    """Why a prompt is disqualified (empty when it qualifies)."""
    out = []
    words = count_words(prompt)
    if words > max_words:
        out.append(f"{words} words, more than {max_words}")
    bad = disallowed_characters(prompt)
    if bad:
        out.append("disallowed characters " + " ".join(repr(c) for c in bad[:10]))
    if OBJECT not in prompt:
        out.append(f"no {OBJECT} marker")
    return out


# ---------------------------------------------------------------------------
# Scores
# ---------------------------------------------------------------------------


@dataclass
class Scores:
    """Weights per letter, and per prompt: the character scores, prompt score, normalised score, rank."""

    letters: list[str]
    w_st: dict[str, float]
    w_si: dict[str, float]
    weight: dict[str, float]
    char: dict[str, dict[str, float]]  #: prompt -> letter -> char_jk
    prompt: dict[str, float]
    norm: dict[str, float]

    def ranking(self) -> list[str]:
        """Prompts, best first (ties keep their order)."""
        return sorted(self.norm, key=lambda k: -self.norm[k])

    def to_dict(self) -> dict:
        return {"letters": self.letters, "w_st": self.w_st, "w_si": self.w_si, "weight": self.weight,
                "char": self.char, "prompt": self.prompt, "norm_prompt": self.norm, "ranking": self.ranking()}


def _weights(letters, st_mean, si_mean, C):
    w_st = {j: max(1.0 - st_mean[j], 1.0 / C) for j in letters}
    w_si = {j: max(1.0 - si_mean[j], 1.0 / C) for j in letters}
    return w_st, w_si, {j: w_st[j] * w_si[j] for j in letters}


def _finish(letters, w_st, w_si, weight, char) -> Scores:
    prompt = {k: sum(c[j] for j in letters) / len(letters) for k, c in char.items()}
    total = sum(prompt.values())
    norm = {k: 100.0 * v / (total if total else 1.0) for k, v in prompt.items()}
    return Scores(list(letters), w_st, w_si, weight, char, prompt, norm)


def score(trials: Mapping[str, Mapping[str, Sequence[tuple[float, float]]]], letters: Sequence[str],
          n_trials: int) -> Scores:
    """The competition's scores from per-trial ``(st, si)``: ``trials[prompt][letter]`` lists them.

    Trials beyond ``n_trials`` are an error; missing ones count ``(0, 0)``, as a response
    without a level does.
    """
    letters = list(letters)
    C = len(letters)
    prompts = list(trials)
    for k in prompts:
        for j in letters:
            if len(trials[k].get(j, ())) > n_trials:
                raise ValueError(f"prompt {k!r}, letter {j}: {len(trials[k][j])} trials, more than {n_trials}")

    def mean_over(j, idx):
        return sum(t[idx] for k in prompts for t in trials[k].get(j, ())) / (len(prompts) * n_trials)

    w_st, w_si, weight = _weights(letters, {j: mean_over(j, 0) for j in letters},
                                  {j: mean_over(j, 1) for j in letters}, C)
    char = {k: {j: sum(weight[j] * st * si for st, si in trials[k].get(j, ())) / n_trials for j in letters}
            for k in prompts}
    return _finish(letters, w_st, w_si, weight, char)


def score_from_means(st: Mapping[str, Mapping[str, float]], si: Mapping[str, Mapping[str, float]],
                     letters: Sequence[str]) -> Scores:
    """The scores from per-(prompt, letter) means only: ``st[prompt][letter]``, ``si[prompt][letter]``."""
    letters = list(letters)
    prompts = list(st)
    w_st, w_si, weight = _weights(letters, {j: sum(st[k][j] for k in prompts) / len(prompts) for j in letters},
                                  {j: sum(si[k][j] for k in prompts) / len(prompts) for j in letters}, len(letters))
    char = {k: {j: weight[j] * st[k][j] * si[k][j] for j in letters} for k in prompts}
    return _finish(letters, w_st, w_si, weight, char)


#: The paper's experiment (Taveekitworachai et al., ChatGPT4PCG, CoG 2023): Table I's means per prompt
#: variant and letter (I, L, U), Table II's weights, and the printed norm_prompt of each variant.
PAPER_LETTERS = ("I", "L", "U")
PAPER_STABILITY = {"v1": (1.00, 0.84, 0.90), "v2": (0.96, 0.80, 1.00), "v3": (0.97, 0.75, 0.94),
                   "v4": (1.00, 0.93, 1.00), "v5": (0.96, 0.90, 1.00)}
PAPER_SIMILARITY = {"v1": (0.18, 0.53, 0.22), "v2": (0.22, 0.24, 0.02), "v3": (0.03, 0.65, 0.01),
                    "v4": (0.17, 0.60, 0.03), "v5": (0.28, 0.43, 0.01)}
PAPER_W_ST = (0.333, 0.333, 0.333)
PAPER_W_SI = (0.823, 0.510, 0.944)
PAPER_WEIGHT = (0.274, 0.170, 0.315)
PAPER_NORM = {"v1": 30.40, "v2": 13.26, "v3": 13.36, "v4": 23.08, "v5": 19.90}
PAPER_RANKING = ("v1", "v4", "v5", "v3", "v2")
TABLE_ONE_ROUNDING = 0.005  #: Table I prints two decimals


def paper_scores() -> Scores:
    """:func:`score_from_means` on the paper's Table I."""
    L = PAPER_LETTERS
    return score_from_means({k: dict(zip(L, v)) for k, v in PAPER_STABILITY.items()},
                            {k: dict(zip(L, v)) for k, v in PAPER_SIMILARITY.items()}, L)


def weight_bounds(letter_index: int) -> dict[str, tuple[float, float]]:
    """The range of ``w_st``, ``w_si`` and ``weight`` of one paper letter over every Table I
    consistent with the printed one (each mean within ±0.005): the weights are monotone in
    each mean, so the ends come from moving all means one way."""
    C = len(PAPER_LETTERS)

    def w(means, shift):
        return max(1.0 - (sum(means) / len(means) + shift), 1.0 / C)

    st = [v[letter_index] for v in PAPER_STABILITY.values()]
    si = [v[letter_index] for v in PAPER_SIMILARITY.values()]
    r = TABLE_ONE_ROUNDING
    lo_st, hi_st = w(st, r), w(st, -r)
    lo_si, hi_si = w(si, r), w(si, -r)
    return {"w_st": (lo_st, hi_st), "w_si": (lo_si, hi_si), "weight": (lo_st * lo_si, hi_st * hi_si)}
