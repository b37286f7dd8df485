"""Figures shared by the reproduction scripts (matplotlib, headless)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence


def metric_bars(path: str | Path, rows: Mapping[str, Mapping[str, dict]], metrics: Sequence[str],
                labels: Mapping[str, str], title: str, figsize=(10, 4.8), dpi: int = 130) -> None:
    """A grouped bar chart: one group per metric, one bar per model, standard-error bars.

    ``rows[model][metric]`` is a summary dict with ``mean``, ``stderr`` and ``n``; a
    metric with ``n == 0`` (or missing) is drawn as an empty slot marked "n/a".
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    models = list(rows)
    x = np.arange(len(metrics))
    width = 0.8 / max(1, len(models))
    fig, ax = plt.subplots(figsize=figsize)
    for i, model in enumerate(models):
        cells = [rows[model].get(m) or {} for m in metrics]
        means = [c["mean"] if c.get("n") and c.get("mean") is not None else np.nan for c in cells]
        errs = [c["stderr"] if c.get("n") and np.isfinite(c.get("stderr") or np.nan) else 0 for c in cells]
        xs = x + (i - (len(models) - 1) / 2) * width
        ax.bar(xs, means, width, yerr=errs, capsize=2, label=model, error_kw={"lw": 0.8})
        for xi, m in zip(xs, means):
            if not np.isfinite(m):
                ax.text(xi, 0.02, "n/a", ha="center", va="bottom", fontsize=7, rotation=90, color="0.4")
    ax.set_xticks(x, [labels[m].replace(" ", "\n", 1) for m in metrics])
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("score (mean ± s.e.)")
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    ax.set_title(title)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=len(models), frameon=False)
    fig.tight_layout()
    save_figure(fig, path, dpi=dpi)


def save_figure(fig, path: str | Path, dpi: int = 120, **savefig: Any) -> Path:
    """Write ``fig`` to ``path`` and close it; the folder is made, the file replaced whole.

    The figure goes to a temporary file beside ``path`` renamed over it
    (:func:`worldmodel.safety.atomic_file`), so a run killed mid-write leaves the old
    figure, never half of one. ``savefig`` passes on (``bbox_inches``, …).
    """
    import matplotlib.pyplot as plt

    from .safety import atomic_file

    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_file(path, lambda tmp: fig.savefig(tmp, dpi=dpi, **savefig), "figure")
    finally:
        plt.close(fig)
    return path
