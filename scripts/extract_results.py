"""Extract the automata of the trained likelihood-mode models and write ``results/<task>/extract/``.

    OMP_NUM_THREADS=1 python scripts/extract_results.py [--tasks toy-dfa seating]

For each task this runs ``worldmodel extract TASK --checkpoint CK --out results/TASK/extract``
on the checkpoint its reproduction script trains (``runs/toy-dfa/checkpoint`` from
``scripts/reproduce_toy.py``, ``runs/seating/gpt2-seating`` from
``scripts/reproduce_seating.py``); a missing checkpoint is trained first, with the
same data folder and the task's seed (``checkpoints.reuse_or_train``), so it is the same model.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from worldmodel.checkpoints import reuse_or_train
from worldmodel.cli import main as worldmodel
from worldmodel.tasks import load_task

CHECKPOINTS = {  # task -> (checkpoint, data folder), as the reproduction scripts lay them out
    "toy-dfa": ("runs/toy-dfa/checkpoint", "runs/toy-dfa/data"),
    "seating": ("runs/seating/gpt2-seating", "runs/seating/data"),
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", nargs="+", default=list(CHECKPOINTS), choices=list(CHECKPOINTS))
    ap.add_argument("--results", default="results")
    args = ap.parse_args(argv)
    for name in args.tasks:
        ck, data = CHECKPOINTS[name]
        task = load_task(name)
        reuse_or_train(task, task.domain.datasets()[0], Path(ck), data_dir=Path(data))
        rc = worldmodel(["extract", name, "--checkpoint", ck, "--out", f"{args.results}/{name}/extract"])
        if rc:
            return rc
    return 0


if __name__ == "__main__":
    sys.exit(main())
