"""Metric results: trial logs (JSON lines, resumable), aggregation and summary tables.

A metric is a list of trials. Each trial is a dict with at least

* ``trial`` — its index, ``seed`` — the seed derived from the run seed and index;
* ``status`` — ``"ok"`` or ``"skipped"`` (with ``reason``);
* ``key`` — the group it is averaged in (the state, or the ordered pair of states);
* ``pair`` — the prefix pair within that group;
* ``score`` — the trial's value (for several metrics from one trial, ``scores``:
  a dict metric name -> value).

Aggregation follows the paper: average the trials of each prefix pair, then the
pairs of each group, then the groups. The standard error is the sample standard
deviation of the group means over the square root of their number.

:class:`TrialLog` appends trials to a ``.jsonl`` file as they finish. Its first line
records the run's settings; opening an existing log with the same settings resumes
it (completed trials are not run again), opening it with other settings is an
error rather than a silent mix. A log has one writer: opening it claims it
(:func:`worldmodel.safety.claim`), so a second run on the same log stops with one line
naming the first. It is only ever appended to: a torn last line (a run killed
mid-write) is dropped by writing the good lines to a new file and renaming it over the
old one, never by rewriting the log in place. A line that is not a trial record (a
second header), a trial logged twice, or a repeated key in a record is an error naming
the line.
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from .errors import WorldModelError
from .safety import atomic_write, claim, decode_utf8, loads_json, read_bytes, rewrite_lines, writing


@dataclass
class MetricResult:
    """Aggregate of one metric: mean, standard error, trials run and not run."""

    name: str
    mean: float
    stderr: float
    n: int
    n_failed: int
    n_groups: int = 0
    failures: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("name")
        return d

    def cell(self) -> str:
        if self.n == 0:
            return "n/a"
        return f"{self.mean:.2f} ({self.stderr:.2f})"


def _clean(x: float) -> float:
    return float("nan") if x is None else float(x)


def aggregate(name: str, trials: Iterable[dict], score_key: str | None = None) -> MetricResult:
    """Average trials per prefix pair, then per group, then over groups.

    ``score_key`` picks ``trial["scores"][score_key]`` instead of ``trial["score"]``;
    a trial whose score for this metric is missing or None counts as not run, with
    the trial's ``reasons[score_key]`` (or ``reason``) as the cause.
    """
    by_group: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    failures: Counter[str] = Counter()
    n_ok = 0
    for t in trials:
        if t.get("status") != "ok":
            failures[str(t.get("reason", "unknown"))] += 1
            continue
        score = t.get("scores", {}).get(score_key) if score_key else t.get("score")
        if score is None:
            reason = (t.get("reasons") or {}).get(score_key) if score_key else None
            failures[str(reason or t.get("reason") or "no score")] += 1
            continue
        n_ok += 1
        by_group[str(t.get("key", t.get("trial")))][str(t.get("pair", t.get("trial")))].append(float(score))
    group_means = [
        float(np.mean([np.mean(v) for v in pairs.values()])) for pairs in by_group.values()
    ]
    n_groups = len(group_means)
    if n_groups == 0:
        mean, se = float("nan"), float("nan")
    else:
        mean = float(np.mean(group_means))
        se = float(np.std(group_means, ddof=1) / math.sqrt(n_groups)) if n_groups > 1 else 0.0
    return MetricResult(name, mean, se, n_ok, int(sum(failures.values())), n_groups, dict(failures))


def pooled(name: str, trials: Iterable[dict], hits_key: str, total_key: str) -> MetricResult:
    """``Σ hits / Σ total`` over trials (e.g. correct positions over all positions).

    The standard error is that of a ratio estimator with the trials as clusters:
    ``sqrt(n / (n - 1) · Σ (h_i - r t_i)²) / Σ t_i``. Trials not ``ok``, or with no
    total, count as not run.
    """
    hits, totals = [], []
    failures: Counter[str] = Counter()
    for t in trials:
        if t.get("status") != "ok" or not t.get(total_key):
            failures[str(t.get("reason", "no score"))] += 1
            continue
        hits.append(float(t[hits_key]))
        totals.append(float(t[total_key]))
    n = len(totals)
    if n == 0:
        return MetricResult(name, float("nan"), float("nan"), 0, int(sum(failures.values())), 0, dict(failures))
    h, tot = np.array(hits), np.array(totals)
    r = float(h.sum() / tot.sum())
    se = float(math.sqrt(n / (n - 1) * float(((h - r * tot) ** 2).sum())) / tot.sum()) if n > 1 else 0.0
    return MetricResult(name, r, se, n, int(sum(failures.values())), n, dict(failures))


def trial_seed(run_seed: int, metric: str, index: int) -> int:
    """A seed for one trial that depends only on the run seed, the metric and the index."""
    ss = np.random.SeedSequence([int(run_seed), _stable_hash(metric), int(index)])
    return int(ss.generate_state(1, dtype=np.uint32)[0])


def _stable_hash(text: str) -> int:
    h = 2166136261
    for ch in text.encode():
        h = ((h ^ ch) * 16777619) & 0xFFFFFFFF
    return h


#: header keys added after logs were first written: a log whose header lacks one was written before it
#: existed and is compared without it (it resumes as it did then)
LATER_HEADER_KEYS = ("task_sections", "weights")


def _same_settings(header: Any, settings: dict[str, Any]) -> bool:
    if not isinstance(header, dict):
        return False
    want = {k: v for k, v in settings.items() if k in header or k not in LATER_HEADER_KEYS}
    return header == json.loads(json.dumps(want, default=_json_default))


def read_trial_log(path: Path, settings: dict[str, Any]) -> tuple[dict[int, dict], list[str], int]:
    """Read a trial log without changing it: ``(trials by index, good lines, number of lines)``.

    The header must hold ``settings`` (else :class:`WorldModelError`); reading stops at
    a truncated line (a run killed mid-write). A missing or empty file has no trials.
    """
    if not path.exists() or path.stat().st_size == 0:
        return {}, [], 0
    raw = read_bytes(path, "log", "trial log")
    torn = not raw.endswith(b"\n")
    lines = decode_utf8(raw, f"trial log {path}").splitlines()
    try:
        header = loads_json(lines[0], f"trial log {path} (header line)")
    except WorldModelError:
        if torn and len(lines) == 1:
            return {}, [], 1          # killed while writing the header: nothing was logged yet
        raise WorldModelError(f"trial log {path} is corrupt (bad header line)") from None
    if not isinstance(header, dict) or "settings" not in header:
        raise WorldModelError(f"trial log {path} is corrupt (its first line is not a header)")
    if not _same_settings(header.get("settings"), settings):
        raise WorldModelError(
            f"trial log {path} was written with other settings; "
            "delete it or choose another --out to start a new run"
        )
    done: dict[int, dict] = {}
    good = [lines[0]]
    for n, line in enumerate(lines[1:], 2):
        last = n == len(lines)
        try:
            t = loads_json(line, f"trial log {path}:{n}")
        except WorldModelError:
            if last and torn:
                break  # a run killed mid-line: drop the fragment
            raise
        if not isinstance(t, dict) or isinstance(t.get("trial"), bool) or not isinstance(t.get("trial"), int):
            what = "a second header" if isinstance(t, dict) and "settings" in t else "not a trial record"
            raise WorldModelError(f"trial log {path}:{n} is {what} (two runs wrote this log?); "
                                  "delete it or choose another --out to start a new run")
        if t["trial"] in done:
            raise WorldModelError(f"trial log {path}:{n} logs trial {t['trial']} a second time (two runs wrote "
                                  "this log?); delete it or choose another --out to start a new run")
        done[t["trial"]] = t
        good.append(line)
    return done, good, len(lines)


class TrialLog:
    """Append-only JSON-lines log of trials with resume.

    ``TrialLog(path, settings)``: if ``path`` exists its header must equal
    ``settings`` (else :class:`WorldModelError`); trials already in it are
    available as :attr:`done` (index -> trial) and are not run again. A truncated
    last line (a run killed mid-write) is dropped (the good lines go to a new file,
    renamed over the log). The log is claimed from opening to :meth:`close`.
    """

    #: ``(rank, processes)`` for one process's share of a sharded run (:class:`ShardedTrialLog`); None: every trial
    shard: tuple[int, int] | None = None

    def __init__(self, path: str | Path | None, settings: dict[str, Any]):
        self.path = Path(path) if path else None
        self.settings = json.loads(json.dumps(settings))
        self.done: dict[int, dict] = {}
        self._fh = None
        self._claim = None
        if self.path is None:
            return
        self._claim = claim(self.path, "trial log")
        try:
            self.done, good, total = read_trial_log(self.path, self.settings)
            if len(good) != total:
                rewrite_lines(self.path, good, "trial log")
        except BaseException:
            self._claim.release()
            raise

    def _open(self):
        if self._fh is None and self.path is not None:
            with writing(self.path, "trial log"):
                self.path.parent.mkdir(parents=True, exist_ok=True)
                new = not self.path.exists() or self.path.stat().st_size == 0
                if new:   # the header, written whole before any trial
                    atomic_write(self.path, json.dumps({"settings": self.settings}) + "\n", "trial log")
                self._fh = self.path.open("ab", buffering=0)    # each line goes straight to the file
        return self._fh

    def append(self, trial: dict) -> None:
        self.done[int(trial["trial"])] = trial
        fh = self._open()
        if fh is not None:
            line = memoryview((json.dumps(trial, default=_json_default) + "\n").encode())
            at = os.fstat(fh.fileno()).st_size
            try:
                with writing(self.path, "trial log"):
                    while line:
                        line = line[fh.write(line):]
            except WorldModelError:
                # a full disk mid-line: cut the fragment this process just wrote, so the log stays whole
                try:
                    fh.truncate(at)
                except OSError:
                    pass
                raise

    def close(self) -> None:
        if self._fh is not None:
            try:
                self._fh.close()
            except OSError:
                pass
            self._fh = None
        if self._claim is not None:
            self._claim.release()
            self._claim = None

    def __enter__(self) -> "TrialLog":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def trials(self, n: int | None = None) -> list[dict]:
        idx = sorted(self.done) if n is None else [i for i in range(n) if i in self.done]
        return [self.done[i] for i in idx]


def shard_part(path: Path, rank: int) -> Path:
    """Process ``rank``'s part of the trial log ``path`` (``x.trials.jsonl`` -> ``x.trials.part3.jsonl``)."""
    return path.with_name(f"{path.stem}.part{rank}{path.suffix}")


def shard_parts(path: Path) -> list[Path]:
    """Every part file of ``path`` present on disk, whatever the number of processes that wrote them."""
    return sorted(path.parent.glob(f"{path.stem}.part*{path.suffix}"))


class ShardedTrialLog(TrialLog):
    """One process's share of a trial log split across ``size`` processes (sharded evaluation).

    It appends to its own part file (:func:`shard_part`); trials already in the main log
    or in any part file are done and not run again. The metric runner reads
    :attr:`shard` and runs only this process's batches of trials:
    batch ``b`` of the trials left to do belongs to process ``b mod size``, so every
    trial sees the same batch companions as in a single-process run.
    :func:`merge_trial_logs` then joins the parts into the main log.
    """

    def __init__(self, path: str | Path, settings: dict[str, Any], rank: int, size: int):
        path = Path(path)
        super().__init__(shard_part(path, rank), settings)
        self.main = path
        self.shard = (int(rank), int(size))
        for other in [path, *shard_parts(path)]:
            if other != self.path:
                self.done.update(read_trial_log(other, self.settings)[0])


def merge_trial_logs(path: str | Path, settings: dict[str, Any]) -> int:
    """Join the main trial log and its part files into the main log, in trial order; returns the count.

    The main log is replaced atomically, then the parts are deleted; a trial found in
    several files is kept once.
    """
    path = Path(path)
    parts = shard_parts(path)
    done: dict[int, dict] = {}
    for f in [path, *parts]:
        done.update(read_trial_log(f, settings)[0])
    lines = [json.dumps({"settings": json.loads(json.dumps(settings))})]
    lines += [json.dumps(done[i], default=_json_default) for i in sorted(done)]
    with claim(path, "trial log"):
        rewrite_lines(path, lines, "trial log")
    for f in parts:
        f.unlink()
    return len(done)


def _json_default(obj):
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating,)):
        return float(obj)
    if isinstance(obj, (np.ndarray,)):
        return obj.tolist()
    if isinstance(obj, (tuple, set, frozenset)):
        return list(obj)
    return str(obj)


# ---------------------------------------------------------------------------
# Summaries
# ---------------------------------------------------------------------------

def metric_columns() -> list[tuple[str, str]]:
    """``(result key, label)`` of every registered metric, in table order (:data:`worldmodel.registry.METRICS`)."""
    from . import registry

    specs = sorted(registry.metrics(), key=lambda m: m.table_rank)
    return [c for spec in specs for c in spec.columns]


def markdown_table(rows: dict[str, dict[str, MetricResult | dict]], columns=None) -> str:
    """A Markdown table: one row per model, one column per metric, "mean (stderr)"."""
    columns = columns or [c for c in metric_columns() if any(c[0] in r for r in rows.values())]
    extra = []
    for r in rows.values():
        for k in r:
            if k not in [c[0] for c in columns] and k not in [e[0] for e in extra]:
                extra.append((k, k.replace("_", " ")))
    columns = list(columns) + extra
    head = "| Model | " + " | ".join(c[1] for c in columns) + " |"
    sep = "|---|" + "|".join("---" for _ in columns) + "|"
    lines = [head, sep]
    for model, metrics in rows.items():
        cells = []
        for key, _ in columns:
            m = metrics.get(key)
            if m is None:
                cells.append("—")
            elif isinstance(m, MetricResult):
                cells.append(m.cell())
            else:
                cells.append("n/a" if not m.get("n") else f"{m['mean']:.2f} ({m['stderr']:.2f})")
        lines.append(f"| {model} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def summarise_runs(runs: list[dict], keys: Iterable[str]) -> dict[str, dict]:
    """Per metric key: the mean over training runs, the sample sd across them and the mean within-run error.

    ``runs`` are metric dicts (``{key: {"mean", "stderr", ...}}``), one per training run; a run
    whose mean is missing or NaN is left out of that key's summary, a missing or NaN standard
    error out of its mean. ``sd_across_runs`` is ``None`` for one run. Keys no run scored are
    absent.
    """
    out = {}
    for key in keys:
        vals = [r[key] for r in runs if r.get(key) and r[key].get("mean") is not None and not math.isnan(r[key]["mean"])]
        if not vals:
            continue
        means = [v["mean"] for v in vals]
        mean = sum(means) / len(means)
        sd = math.sqrt(sum((m - mean) ** 2 for m in means) / (len(means) - 1)) if len(means) > 1 else None
        ses = [v["stderr"] for v in vals if v.get("stderr") is not None and not math.isnan(v["stderr"])]
        out[key] = {"mean": mean, "sd_across_runs": sd, "mean_stderr": sum(ses) / len(ses) if ses else None,
                    "runs": len(means), "per_run": means}
    return out


def runs_cell(summary: dict | None, missing: str = "n/a") -> str:
    """One :func:`summarise_runs` entry as ``mean ± sd (mean stderr)``, ``–`` where one is undefined."""
    if not summary:
        return missing
    sd = "–" if summary["sd_across_runs"] is None else f"{summary['sd_across_runs']:.2f}"
    se = "–" if summary["mean_stderr"] is None else f"{summary['mean_stderr']:.2f}"
    return f"{summary['mean']:.2f} ± {sd} ({se})"


CONVENTION_KEYS = ("keep_top", "next_token_positions", "next_token_pooling")


def scored_under(summary: dict) -> dict:
    """The conventions an :func:`~worldmodel.evaluator.evaluate` summary was scored under, for a results record.

    ``{"length_bound": ..., "conventions": {keep_top, next_token_positions, next_token_pooling}}``:
    the longest sequence the model was read at (``None`` for the true world model) and the
    sampling / next-token settings, so a table's JSON shows that every row follows one convention.
    """
    settings = summary.get("settings", {})
    return {"length_bound": summary.get("length_bound"), "length_bound_source": summary.get("length_bound_source"),
            "conventions": {k: settings.get(k) for k in CONVENTION_KEYS}}


def conventions_sentence(records: dict[str, dict]) -> str:
    """One sentence for a table's header: the length bounds its rows were read at and the sampling convention.

    ``records`` maps a row label to a record carrying :func:`scored_under`'s keys; rows
    without a bound (the true world model) are left out of the bounds.
    """
    def bounds(source):
        got = {label: r["length_bound"] for label, r in records.items()
               if r.get("length_bound") is not None and r.get("length_bound_source", "trained") == source}
        values = sorted(set(got.values()))
        if not values:
            return ""
        return (f"{values[0]} tokens" if len(values) == 1
                else ", ".join(f"{label} {b}" for label, b in got.items()) + " tokens")

    keep = {r.get("conventions", {}).get("keep_top") for r in records.values() if r.get("conventions")}
    parts = []
    trained, context = bounds("trained"), bounds("context")
    if trained:
        parts.append("each trained network is read only inside the longest sequence it was trained on "
                     f"(prefix + continuation stop there: {trained})")
    if context:
        parts.append(f"a network with no training record (the untrained one) inside its context ({context})")
    if keep == {True}:
        parts.append("a sample keeps the most likely token where none clears the acceptance threshold")
    return (parts[0][0].upper() + "; ".join(parts)[1:] + ".") if parts else ""


def check_writable(path: str | Path, what: str = "--out", folder: bool = False) -> None:
    """Stop with one line if ``path`` (a file, or a folder when ``folder``) cannot be written.

    Called before any work, so a bad ``--out`` fails at once and leaves nothing behind: it
    creates no folder, only a probe file in the nearest existing folder, removed at once.
    """
    import os
    import tempfile

    path = Path(path)
    if path.is_dir() and not folder:
        raise WorldModelError(f"cannot write {what} {path}: it is a folder (give a file name)")
    if path.exists() and folder and not path.is_dir():
        raise WorldModelError(f"cannot write {what} {path}: it is a file, not a folder")
    near = path.parent
    while not near.exists() and near != near.parent:
        near = near.parent
    if not near.is_dir():
        raise WorldModelError(f"cannot write {what} {path}: {near} is not a folder")
    try:
        fd, probe = tempfile.mkstemp(prefix=".worldmodel-probe-", dir=near)
    except OSError as exc:
        raise WorldModelError(f"cannot write {what} {path}: {near} is not writable ({exc.strerror})") from None
    os.close(fd)
    os.unlink(probe)


def write_if_changed(path: str | Path, text: str) -> bool:
    """Write ``text`` to ``path`` (atomically) unless it already holds exactly that; True if written.

    Reproduction scripts write their tables with it, so a rerun that gets the same
    numbers leaves a committed file untouched.
    """
    path = Path(path)
    if path.is_file() and path.read_text() == text:
        return False
    atomic_write(path, text)
    return True


def write_json_atomic(path: str | Path, data: Any) -> None:
    """``data`` as indented JSON at ``path``, all or nothing (:func:`worldmodel.safety.atomic_write`)."""
    atomic_write(path, json.dumps(data, indent=2, default=_json_default))
