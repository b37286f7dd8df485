"""The arcs of "8": each place's properties, their values and the sentence pools that describe them.

An arc file (``arcs/<id>.json`` of the ``eight`` data set; alvations/melon-eight,
Apache-2.0) holds, per property, a baseline value and the anomalous values, each with a
pool of sentences that say the same thing in different words; the canonical order in
which properties are described (``anchor_order``); the heading's variants; the
``late_props`` that hard mode may hold out of the early loops; the NPC property; and
the Act 2 touches. :class:`Arc` is that file as plain data, checked when it is read.

Tokens at the level of meaning are ``prop=value`` (``lighting=steady``,
``figure=knows``): :meth:`Arc.token`. :meth:`Arc.meaning` maps a rendered sentence
back to its token (every sentence of an arc belongs to exactly one value; the exit
sign's ``{SIGN}`` placeholder is matched against the arc's sign variants), which is how
the true and scripted responders read a loop off a prompt, and how a real server's
rooms are read back into tokens.

The insane difficulty draws each climb's baseline of a property from the values whose
prose reads as a calm state. Which values those are is decided upstream by a list of
prose markers in the game's ``hallway.py``; :data:`INSANE_BASELINES` records the
result for the three published arcs (computed with the upstream code at the pinned
commit, see ``PROVENANCE.md`` of the data set) so that this package does not carry the
marker list. An arc not in the table falls back to its calm baseline value only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from ...errors import WorldModelError

#: the three published arcs, in the benchmark's order
ARC_IDS = ("hallway-eight", "stairway8", "coach8")

#: per arc and property: the values insane may use as a climb's baseline (upstream
#: ``Hallway._insane_baseline_keys`` at melon-eight 6caf3d0, the calm value first)
INSANE_BASELINES: dict[str, dict[str, tuple[str, ...]]] = {
    "hallway-eight": {"lighting": ("steady",), "sound": ("vent", "drip"), "poster": ("travel",),
                      "figure": ("distant",), "sign": ("exit",), "door": ("closed",), "camera": ("away",),
                      "floor": ("dry", "wet"), "sense": ("steady", "calm")},
    "stairway8": {"lighting": ("steady", "flicker"), "sound": ("quiet", "drip", "slam", "footsteps"),
                  "number": ("eight", "faded"), "door": ("closed", "propped"), "notice": ("out",),
                  "railing": ("cold", "wet"), "extinguisher": ("present", "floor", "gauge"),
                  "stairs": ("clear", "wet", "debris"), "figure": ("below",), "sense": ("steady",)},
    "coach8": {"lighting": ("dim", "flicker", "off"), "sound": ("rhythm", "announce"), "window": ("night",),
               "passenger": ("sleeping",), "seatnum": ("eight",), "door": ("closed", "open", "glass"),
               "luggage": ("stowed",), "table": ("coffee",), "sense": ("steady", "calm")},
}

SIGN = "{SIGN}"


@dataclass(frozen=True)
class Prop:
    """One property: its baseline value, its anomalous values, and every value's sentence pool."""

    name: str
    label: str
    baseline: str
    anomalies: tuple[str, ...]
    pools: dict[str, tuple[str, ...]] = field(compare=False, repr=False)

    @property
    def values(self) -> tuple[str, ...]:
        """Every value, the baseline first."""
        return (self.baseline,) + self.anomalies


@dataclass(frozen=True)
class Arc:
    """One arc (see the module docstring). ``props`` are in the canonical description order."""

    id: str
    title: str
    props: tuple[Prop, ...]
    late: tuple[str, ...]
    npc: str | None
    titles: tuple[str, ...]
    signs: tuple[str, ...]
    touch: dict[str, dict] = field(compare=False, repr=False)
    flashbacks: tuple[str, ...] = field(compare=False, repr=False, default=())
    win_text: tuple[str, ...] = field(compare=False, repr=False, default=())
    meta: dict = field(compare=False, repr=False, default_factory=dict)
    insane_baselines: dict[str, tuple[str, ...]] = field(compare=False, repr=False, default_factory=dict)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.props)

    def prop(self, name: str) -> Prop:
        for p in self.props:
            if p.name == name:
                return p
        raise WorldModelError(f"arc {self.id} has no property {name!r}")

    @staticmethod
    def token(prop: str, value: str) -> str:
        return f"{prop}={value}"

    @staticmethod
    def split(token: str) -> tuple[str, str]:
        prop, _, value = token.partition("=")
        return prop, value

    @cached_property
    def observation_tokens(self) -> tuple[str, ...]:
        """Every ``prop=value`` token, properties in canonical order, each baseline first."""
        return tuple(self.token(p.name, v) for p in self.props for v in p.values)

    def safe_baselines(self, prop: str) -> tuple[str, ...]:
        """Values insane may draw as a climb's baseline for ``prop`` (the calm value at least)."""
        return self.insane_baselines.get(prop) or (self.prop(prop).baseline,)

    # -- sentences back to meaning -------------------------------------------
    @cached_property
    def _sentence_index(self) -> tuple[dict[str, str], list[tuple[re.Pattern, str]]]:
        exact: dict[str, str] = {}
        patterns: list[tuple[re.Pattern, str]] = []
        for p in self.props:
            for v in p.values:
                for s in p.pools[v]:
                    tok = self.token(p.name, v)
                    if SIGN in s:
                        parts = [re.escape(x) for x in s.split(SIGN)]
                        signs = "|".join(sorted((re.escape(x) for x in set(self.signs)), key=len, reverse=True))
                        patterns.append((re.compile("^" + f"(?:{signs})".join(parts) + "$"), tok))
                    else:
                        exact[s] = tok
        return exact, patterns

    def meaning(self, sentence: str) -> str | None:
        """The ``prop=value`` token a rendered sentence says, or ``None`` for a sentence of no pool."""
        exact, patterns = self._sentence_index
        s = sentence.strip()
        if s in exact:
            return exact[s]
        for pat, tok in patterns:
            if pat.match(s):
                return tok
        return None


def _strings(value, what: str, path) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(x, str) and x for x in value):
        raise WorldModelError(f"arc file {path}: {what} must be a non-empty list of strings")
    return tuple(value)


def parse_arc(data: dict, path: str | Path = "<arc>") -> Arc:
    """An :class:`Arc` from an arc file's parsed JSON; a malformed file is one error naming it."""
    if not isinstance(data, dict):
        raise WorldModelError(f"arc file {path}: not a JSON object")
    try:
        meta = data["meta"]
        order = _strings(data["anchor_order"], "anchor_order", path)
        raw_props = data["properties"]
        arc_id = str(meta["id"])
    except (KeyError, TypeError):
        raise WorldModelError(f"arc file {path}: needs meta.id, anchor_order and properties") from None
    if not isinstance(raw_props, dict) or set(order) != set(raw_props) or len(set(order)) != len(order):
        raise WorldModelError(f"arc file {path}: anchor_order must list every property exactly once")
    labels = meta.get("labels", {}) if isinstance(meta.get("labels"), dict) else {}
    props = []
    for name in order:
        spec = raw_props[name]
        try:
            base = str(spec["baseline"])
            calm = spec["values"]
            anomalies = spec["anomalies"]
        except (KeyError, TypeError):
            raise WorldModelError(f"arc file {path}: property {name!r} needs baseline, values and anomalies") from None
        if not isinstance(calm, dict) or not isinstance(anomalies, dict) or base not in calm or not anomalies:
            raise WorldModelError(f"arc file {path}: property {name!r}: the baseline must be one of its values "
                                  "and it needs at least one anomaly")
        if len(calm) != 1:
            raise WorldModelError(f"arc file {path}: property {name!r} has {len(calm)} calm values; "
                                  "this world reads exactly one (the baseline)")
        pools = {base: _strings(calm[base], f"{name}.values.{base}", path)}
        for v, pool in anomalies.items():
            if v in pools or "=" in v or " " in v or "=" in name or " " in name:
                raise WorldModelError(f"arc file {path}: property {name!r} value {v!r} is repeated or not a plain word")
            pools[v] = _strings(pool, f"{name}.anomalies.{v}", path)
        props.append(Prop(name, str(labels.get(name, name)), base, tuple(anomalies), pools))
    late = tuple(p for p in meta.get("late_props", []) if p in raw_props)
    npc = meta.get("npc_prop") if meta.get("npc_prop") in raw_props else None
    act2 = data.get("act2", {}) if isinstance(data.get("act2"), dict) else {}
    touch = {k: v for k, v in act2.get("touch", {}).items() if k in raw_props and isinstance(v, dict)}
    arc = Arc(arc_id, str(meta.get("title", arc_id)), tuple(props), late, npc,
              _strings(data.get("title_variants", [meta.get("title", arc_id)]), "title_variants", path),
              _strings(data.get("sign_variants", [""]) or [""], "sign_variants", path) if data.get("sign_variants")
              else ("",), touch, tuple(act2.get("flashbacks", []) or ()),
              tuple((data.get("framing") or {}).get("win", []) or ()), dict(meta),
              INSANE_BASELINES.get(arc_id, {}))
    seen: dict[str, str] = {}
    for p in arc.props:
        for v in p.values:
            for s in p.pools[v]:
                key = s.strip()
                if key in seen and seen[key] != arc.token(p.name, v):
                    raise WorldModelError(f"arc file {path}: the sentence {s!r} says two things "
                                          f"({seen[key]} and {arc.token(p.name, v)})")
                seen[key] = arc.token(p.name, v)
    return arc


def load_arc(folder: str | Path, arc_id: str) -> Arc:
    """The arc ``arc_id`` from ``folder/<arc_id>.json``."""
    path = Path(folder) / f"{arc_id}.json"
    if not path.is_file():
        have = sorted(p.stem for p in Path(folder).glob("*.json")) if Path(folder).is_dir() else []
        raise WorldModelError(f"no arc file {path}" + (f" (arcs there: {', '.join(have)})" if have else
                                                        " (run `worldmodel fetch eight`)"))
    from worldmodel.safety import read_json

    data = read_json(path, "json", "arc file")          # bounded, UTF-8, no key twice
    arc = parse_arc(data, path)
    if arc.id != arc_id:
        raise WorldModelError(f"arc file {path} holds arc {arc.id!r}, not {arc_id!r}")
    return arc
