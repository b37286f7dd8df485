"""Run an extraction for a task and write what it found: ``automaton.json``, ``report.md``,
``automaton.dot`` and ``automaton.png``.

:func:`run_extraction` is what ``worldmodel extract`` calls: it builds the world's
minimal DFA first (so a world too large to enumerate fails at once, before any
model call), learns the model's DFA (:func:`worldmodel.extract.extract`), diffs
the two, measures how well the learned DFA describes the model on fresh world
walks, and writes the four files (all rendered first, then moved into place, so
a failure leaves no partial output).

Words are written with the world's :meth:`~worldmodel.dfa.World.token_text`
(seating statements as sentences). The picture colours each learned state by the
true state it overlaps most: the true state that world random walks are in most
often when the learned automaton is in that state.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from ..acceptance import AcceptanceRule
from ..dfa import ExplicitDFA, Token, explicit_world, is_valid
from ..results import check_writable
from .diff import Diff, agreement, diff
from .lstar import Extraction, extract


def _palette(n: int) -> list[str]:
    import matplotlib

    cmap = matplotlib.colormaps["tab20"]
    return [matplotlib.colors.to_hex(cmap(i % 20)) for i in range(n)]


class _Words:
    """Tokens, words and states in words for one world."""

    def __init__(self, world, labels: Sequence[str], true: ExplicitDFA):
        self.world = world
        self.true = true
        self.labels = list(labels)
        self.explicit = isinstance(world, ExplicitDFA)

    def word(self, w: Sequence[Token]) -> str:
        if not w:
            return "(the empty sequence)"
        texts = [self.world.token_text(t) for t in w]
        sep = "; " if any(" " in x for x in texts) else " "
        return "`" + sep.join(texts) + "`"

    def state(self, q: int) -> str:
        """``T3``, or ``T3 (ABC,ACB)`` with the world's name for an implicit world's state."""
        label = self.labels[q]
        if self.explicit or not label:
            return f"T{q}"
        return f"T{q} ({label})"


def _verdict(v: bool) -> str:
    return "allows" if v else "refuses"


def _word_bound(settings: dict) -> str:
    """``, queries of at most N tokens (…)``: where the model may be read (metrics.length_bound)."""
    n = settings.get("max_word_len")
    if n is None:
        return ""
    from ..metrics import bound_words

    return f", queries of at most {n} tokens ({bound_words(settings.get('max_word_len_source'))})"


def report_markdown(title: str, command: str, settings: dict, ex: Extraction, d: Diff, agree: dict,
                    words: _Words, witnesses: int = 5) -> str:
    s = ex.stats
    lines = [f"# {title}", "", f"Made by `{command}`.", "",
             f"Acceptance rule `{settings['acceptance']}`: a word is in the model's language when the rule allows "
             "every one of its tokens in turn. L* (Rivest–Schapire counterexamples), equivalence by the W-method "
             f"(depth {settings['depth']}) then {settings['walks']} random walks of up to {settings['walk_len']} "
             f"tokens per round; bounds: {settings['max_states']} states, {settings['max_queries']:,} queries"
             + _word_bound(settings) + ".", "",
             "## Learning", ""]
    if ex.complete:
        lines.append(f"- **{d.n_learned} learned states**, complete: no test found a counterexample "
                     f"after {ex.rounds} rounds.")
    else:
        lines.append(f"- **{d.n_learned} learned states**, incomplete: stopped after {ex.rounds} rounds because "
                     f"{ex.stopped}; the automaton below is the last hypothesis.")
        if ex.refuted_by is not None:
            cex = ex.refuted_by
            hyp_says = is_valid(ex.dfa, cex)
            world_says = is_valid(words.true, cex)
            lines.append(f"- That hypothesis is refuted by {words.word(cex)} ({len(cex)} tokens): the model "
                         f"{_verdict(not hyp_says)} it, the hypothesis {_verdict(hyp_says)} it, and the world "
                         f"{_verdict(world_says)} it. Fitting this counterexample is what broke the bound.")
    lines += [
        f"- Hypothesis size per round: {', '.join(map(str, ex.sizes))}; counterexample lengths: "
        f"{', '.join(str(len(c)) for c in ex.counterexamples) or 'none'}.",
        f"- **{s.membership:,} membership queries** ({s.cached:,} answered from the prefix tree without a model "
        f"call) and {s.tests:,} test words; the model read {s.nodes:,} distinct prefixes in {s.model_calls} "
        f"batched calls ({s.sequences:,} sequences). Wall time {ex.seconds:.1f} s.",
        f"- On {agree['walks']} fresh world random walks ({agree['positions']:,} positions), the model's allowed "
        f"set equals the learned automaton's at {agree['learned']:.2%} of the positions and the world's valid set "
        f"at {agree['world']:.2%}.", "",
        f"## Against the world ({d.n_true} true states)", ""]
    if d.equivalent:
        if ex.complete:
            lines += ["The learned automaton **is equivalent to the world's minimal DFA**: no merged or split "
                      "state and no language difference.", ""]
        else:
            lines += ["The last hypothesis **is equivalent to the world's minimal DFA** (no merged or split state, "
                      "no language difference), but learning did not finish: the model departs from it on longer "
                      "words (above).", ""]
    conf_m = sum(m.confirmed for m in d.merges)
    conf_s = sum(x.confirmed for x in d.splits)
    n_pairs = d.n_true * (d.n_true - 1) // 2
    lines += [
        f"| what | count |", "|---|---|",
        f"| merged pairs of true states (one learned state covers both) | {len(d.merges)} of {n_pairs} "
        f"({len(d.merged_true_states)} true states involved; witness confirmed by the model: {conf_m}) |",
        f"| split true states (covered by several learned states) | {len(d.split_sizes)} of {d.n_true} "
        f"(witness confirmed by the model: {conf_s} of {len(d.splits)}) |",
        f"| transitions the model allows and the world refuses | {d.n_extra} |",
        f"| transitions the world allows and the model refuses | {d.n_missing} |",
        f"| learned states no valid sequence reaches | {len(d.unmatched)} |", ""]
    if d.split_sizes:
        per = ", ".join(f"T{t}: {k}" for t, k in sorted(d.split_sizes.items()))
        lines += [f"Learned states per split true state: {per}.", ""]
    if d.merges:
        lines += ["### Merged true states (first witnesses, those the model confirms first)", ""]
        for m in sorted(d.merges, key=lambda m: not m.confirmed)[:witnesses]:  # confirmed ones first
            a, b = m.true
            first = "first" if m.valid_after == 0 else "second"
            alike = m.model[0] if m.confirmed else None
            tail = (f"The model {_verdict(alike)} it after both (checked on the model itself)."
                    if m.confirmed else
                    "The model itself does answer differently here, so this merge is an artefact of the "
                    "incomplete extraction.")
            lines.append(f"- {words.state(a)} and {words.state(b)} share learned state L{m.learned}: after "
                         f"{words.word(m.prefixes[0])} and after {words.word(m.prefixes[1])} the world allows "
                         f"{words.word(m.suffix)} only after the {first}, but the learned automaton answers alike. "
                         + tail)
        lines.append("")
    if d.splits:
        lines += ["### Split true states (first witnesses, those the model confirms first)", ""]
        for x in sorted(d.splits, key=lambda x: not x.confirmed)[:witnesses]:
            yes = "first" if x.allowed_after == 0 else "second"
            no = "second" if x.allowed_after == 0 else "first"
            tail = ("(checked on the model itself)" if x.confirmed else
                    "(the model itself answers alike here: an artefact of the incomplete extraction)")
            lines.append(f"- {words.state(x.true)} (learned states L{x.learned[0]} and L{x.learned[1]}): after "
                         f"these two sequences, {words.word(x.prefixes[0])} and {words.word(x.prefixes[1])}, which "
                         f"lead the world to the same state, the model answers differently about "
                         f"{words.word(x.suffix)}: it allows it after the {yes} and refuses it after the {no} {tail}.")
        lines.append("")
    if d.extra or d.missing:
        lines += ["### Language difference (shortest words first)", ""]
        for w in d.extra[:witnesses]:
            lines.append(f"- the model allows {words.word(w)}; the world refuses its last token.")
        for w in d.missing[:witnesses]:
            lines.append(f"- the world allows {words.word(w)}; the model refuses its last token.")
        lines.append("")
    lines += ["## Picture", "",
              "![learned automaton](automaton.png)", "",
              "`automaton.dot` (Graphviz) and `automaton.png`: learned states, coloured by the true state they "
              "overlap most (the share of world-walk visits is in the label); missing transitions go to the reject "
              "state. `automaton.json` holds both automata, the overlap matrix, every witness and the counts.", ""]
    return "\n".join(lines)


def _edge_labels(dfa: ExplicitDFA, words: _Words, max_tokens: int = 3) -> dict[tuple[int, int], str]:
    groups: dict[tuple[int, int], list[str]] = {}
    for q in range(dfa.n_states):
        for j, nq in enumerate(dfa.delta[q]):
            if nq >= 0:
                groups.setdefault((q, int(nq)), []).append(dfa.tokens[j])
    return {k: (", ".join(v) if len(v) <= max_tokens else f"{len(v)} tokens") for k, v in groups.items()}


def automaton_dot(dfa: ExplicitDFA, d: Diff, words: _Words, title: str) -> str:
    colours = _palette(d.n_true)
    dom = d.dominant()
    out = ["digraph learned {", f'  label="{title}\\nmissing transitions go to the reject state";',
           "  labelloc=t; rankdir=LR;", '  node [shape=circle, style=filled, fontname="Helvetica", fontsize=10];',
           '  edge [fontname="Helvetica", fontsize=8];', "  start [shape=point, label=\"\"];",
           f"  start -> L{dfa.start};"]
    for q, (t, share) in enumerate(dom):
        if t is None:
            out.append(f'  L{q} [label="L{q}\\nno valid prefix", fillcolor="#dddddd"];')
        else:
            out.append(f'  L{q} [label="L{q}\\nT{t} {share:.0%}", fillcolor="{colours[t]}"];')
    for (a, b), lab in _edge_labels(dfa, words).items():
        out.append(f'  L{a} -> L{b} [label="{lab}"];')
    out.append("}")
    return "\n".join(out) + "\n"


def automaton_png(dfa: ExplicitDFA, d: Diff, words: _Words, title: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import networkx as nx
    from matplotlib.patches import Patch

    g = nx.DiGraph()
    g.add_nodes_from(range(dfa.n_states))
    labels = _edge_labels(dfa, words)
    g.add_edges_from(labels)
    n = dfa.n_states
    # layers by distance from the start, left to right
    depth = nx.single_source_shortest_path_length(g, dfa.start)
    far = max(depth.values()) + 1
    for q in g.nodes:
        g.nodes[q]["layer"] = depth.get(q, far)
    pos = nx.multipartite_layout(g, subset_key="layer")
    colours = _palette(d.n_true)
    dom = d.dominant()
    fill = [colours[t] if t is not None else "#dddddd" for t, _ in dom]
    size = 6 if n <= 30 else 10
    fig, ax = plt.subplots(figsize=(size + 2, size))
    node_size = 700 if n <= 30 else 250
    nx.draw_networkx_nodes(g, pos, node_color=fill, node_size=node_size, edgecolors=["black" if q == dfa.start else
                                                                                     "#555555" for q in range(n)],
                           linewidths=[2.5 if q == dfa.start else 0.8 for q in range(n)], ax=ax)
    loops = [(a, b) for a, b in g.edges if a == b]
    nx.draw_networkx_edges(g, pos, edgelist=[e for e in g.edges if e[0] != e[1]], node_size=node_size,
                           arrowsize=10, width=0.7, alpha=0.6, connectionstyle="arc3,rad=0.15", ax=ax)
    nx.draw_networkx_labels(g, pos, labels={q: f"L{q}" for q in range(n)}, font_size=8 if n <= 30 else 5, ax=ax)
    if g.number_of_edges() <= 30:
        nx.draw_networkx_edge_labels(g, pos, edge_labels={k: v for k, v in labels.items() if k[0] != k[1]},
                                     font_size=6, label_pos=0.4, ax=ax)
    used = sorted({t for t, _ in dom if t is not None})
    handles = [Patch(facecolor=colours[t], edgecolor="#555555", label=words.state(t)[:48]) for t in used]
    if any(t is None for t, _ in dom):
        handles.append(Patch(facecolor="#dddddd", edgecolor="#555555", label="no valid prefix"))
    ax.legend(handles=handles, title="true state overlapped most", fontsize=7, title_fontsize=8,
              loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    ax.set_title(title + ("\n(self-loops not drawn; see automaton.dot)" if loops else ""), fontsize=10)
    ax.axis("off")
    fig.tight_layout()
    from ..plotting import save_figure

    save_figure(fig, path, dpi=110 if n <= 60 else 72, bbox_inches="tight")


def _word_list(w) -> list[str]:
    return list(w)


def automaton_json(title: str, command: str, settings: dict, ex: Extraction, d: Diff, agree: dict,
                   true: ExplicitDFA, labels: list[str]) -> dict:
    dom = d.dominant()
    return {
        "title": title, "command": command, "settings": settings,
        "tokens": list(ex.dfa.tokens),
        "learned": {"n_states": ex.dfa.n_states, "start": ex.dfa.start, "delta": ex.dfa.delta.tolist(),
                    "access": [_word_list(a) for a in ex.access],
                    "overlaps_most": [{"true": t, "share": round(s, 4)} for t, s in dom]},
        "true": {"n_states": true.n_states, "start": true.start, "delta": true.delta.tolist(), "labels": labels},
        "learning": {**ex.summary(), "counterexamples": [_word_list(c) for c in ex.counterexamples],
                     "suffixes": [_word_list(e) for e in ex.suffixes]},
        "agreement": agree,
        "diff": {
            "equivalent": d.equivalent, "product_pairs": d.pairs,
            "merged": [{"true": list(m.true), "learned": m.learned, "prefixes": [list(p) for p in m.prefixes],
                        "suffix": list(m.suffix), "valid_after": m.valid_after, "model": list(m.model),
                        "confirmed": m.confirmed} for m in d.merges],
            "split_sizes": {str(k): v for k, v in sorted(d.split_sizes.items())},
            "split": [{"true": x.true, "learned": list(x.learned), "prefixes": [list(p) for p in x.prefixes],
                       "suffix": list(x.suffix), "allowed_after": x.allowed_after, "model": list(x.model),
                       "confirmed": x.confirmed} for x in d.splits],
            "model_allows_world_refuses": {"transitions": d.n_extra, "shortest": [list(w) for w in d.extra]},
            "world_allows_model_refuses": {"transitions": d.n_missing, "shortest": [list(w) for w in d.missing]},
            "unmatched_learned_states": d.unmatched,
            "overlap": np.round(d.overlap, 4).tolist(),
        },
    }


def run_extraction(task, model, model_name: str, acceptance: AcceptanceRule, out: str | Path | None = None,
                   max_states: int = 200, max_queries: int = 1_000_000, depth: int = 1, walks: int = 1000,
                   walk_len: int | None = None, seed: int | None = None, command: str = "",
                   progress: bool = True, max_true_states: int = 5000) -> dict:
    """Extract ``model``'s automaton for ``task``, diff it with the world, and write the files to ``out``.

    ``walk_len`` defaults to the task's longest training sequence (``[data]
    max_len``, else 20); ``seed`` to the task's. Returns the summary (the JSON
    document without the matrices). Raises :class:`WorldModelError` when the world
    has more than ``max_true_states`` states, before any model call.
    """
    from tqdm.auto import tqdm

    if out is not None:
        check_writable(out, "--out", folder=True)
    world = task.world
    true, labels = explicit_world(world, max_true_states)
    if walk_len is None:
        walk_len = int(task.section("data").get("max_len", 20))
    seed = task.seed if seed is None else int(seed)
    settings = {"task": task.name, "model": model_name, "acceptance": acceptance.spec(), "max_states": max_states,
                "max_queries": max_queries, "depth": depth, "walks": walks, "walk_len": walk_len, "seed": seed}
    bar = tqdm(desc="extract: prefixes read", unit=" prefixes", disable=not progress, leave=False)
    try:
        t0 = time.perf_counter()
        ex, acceptor = extract(model, acceptance, max_states=max_states, max_queries=max_queries, walks=walks,
                               walk_len=walk_len, depth=depth, seed=seed, progress=bar, name=f"{task.name}-learned")
        d = diff(ex.dfa, true, acceptor)
        agree = agreement(acceptor, ex.dfa, true, walks=1000, max_len=walk_len, seed=seed + 1)
        total = time.perf_counter() - t0
    finally:
        bar.close()
    settings["max_word_len"], settings["max_word_len_source"] = acceptor.max_word_len, acceptor.bound_source
    title = f"Automaton extracted from {model_name} on {task.name}"
    words = _Words(world, labels, true)
    doc = automaton_json(title, command, settings, ex, d, agree, true, labels)
    doc["learning"]["seconds_with_diff"] = round(total, 2)
    if out is not None:
        out = Path(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".extract-", dir=out.parent))
        try:
            (tmp / "automaton.json").write_text(json.dumps(doc, indent=1))
            (tmp / "report.md").write_text(report_markdown(title, command, settings, ex, d, agree, words))
            (tmp / "automaton.dot").write_text(automaton_dot(ex.dfa, d, words, title))
            automaton_png(ex.dfa, d, words, title, tmp / "automaton.png")
            out.mkdir(exist_ok=True)
            for f in tmp.iterdir():
                os.replace(f, out / f.name)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    summary = {k: v for k, v in doc.items() if k in ("title", "settings", "learning", "agreement")}
    summary["diff"] = {"equivalent": d.equivalent, "learned_states": d.n_learned, "true_states": d.n_true,
                       "merged_pairs": len(d.merges), "split_true_states": len(d.split_sizes),
                       "model_allows_world_refuses": d.n_extra, "world_allows_model_refuses": d.n_missing}
    return summary


def extract_automaton(task, model, acceptance: AcceptanceRule | str | None = None, out: str | Path | None = None,
                      progress: bool = False, **options) -> dict:
    """The library form of ``worldmodel extract``: learn ``model``'s automaton on ``task`` and diff it.

    ``task`` is anything :func:`worldmodel.tasks.load_task` takes (a name, a file, a world or
    domain built in Python); ``acceptance`` a rule or a spec (default: the task's ``[evaluate]``
    rule); ``options`` those of :func:`run_extraction` (``max_states``, ``walks``, ``seed``, …).
    Returns the summary; with ``out``, the four files are written there.
    """
    from ..acceptance import parse_acceptance
    from ..evaluator import settings_for
    from ..tasks import load_task

    task = load_task(task)
    if acceptance is None:
        acceptance = settings_for(task).acceptance
    elif not isinstance(acceptance, AcceptanceRule):
        acceptance = parse_acceptance(acceptance)
    return run_extraction(task, model, model.label, acceptance, out=out, progress=progress, **options)
