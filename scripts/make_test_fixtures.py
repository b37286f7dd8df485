"""Cut the small data fixtures the tests use from a full copy of the shared data.

    python scripts/make_test_fixtures.py [--from ../shared/data] [--out tests/fixtures/data]

* ``manhattan/``: the paper's graph (all three variants) cut to the nodes within
  1,200 m of Bryant Park (the ``nav-manhattan-region`` task cuts 900 m, so it builds the
  same map from the fixture as from the full graph), ``world_model_edges.json`` written by
  the same converter ``worldmodel fetch`` uses, and the matching rows of ``nodes.csv``
  and ``edges.csv``.
* ``othello/``: the first 300 game records of ``WTH_1990.wtb`` (header count rewritten)
  and the unchanged ``WTH.JOU`` / ``WTH.TRN`` that the records index into.

Provenance and licences are in ``PROVENANCE.md`` of each fixture folder. Rerunning the
script on the same data gives the same bytes.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import shutil
import struct
from pathlib import Path

from worldmodel.worlds.navigation.data_sets import paper_graph_json

CENTER = (40.7540, -73.9840)
RADIUS_M = 1200.0
GAMES = 300
YEAR = 1990


def _haversine(a, b) -> float:
    la1, lo1, la2, lo2 = map(math.radians, (*a, *b))
    h = math.sin((la2 - la1) / 2) ** 2 + math.cos(la1) * math.cos(la2) * math.sin((lo2 - lo1) / 2) ** 2
    return 2 * 6371008.8 * math.asin(math.sqrt(h))


def cut_manhattan(src: Path, out: Path) -> int:
    with (src / "nodes.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    keep = {r["osm_id"] for r in rows if _haversine(CENTER, (float(r["lat"]), float(r["lon"]))) <= RADIUS_M}
    data = json.loads((src / "world_model_edges.json").read_text())
    variants = {}
    for name, v in data["variants"].items():
        edges = v["edges"] if "edges" in v else data["variants"][v["edges_same_as"]]["edges"]
        neighbours = {(u, d): w for u, d, w in edges if str(u) in keep and str(w) in keep}
        turns = {k: t for k, t in v["valid_turns"].items() if k in keep}
        variants[name] = (neighbours, turns)
    out.mkdir(parents=True, exist_ok=True)
    (out / "world_model_edges.json").write_bytes(paper_graph_json(variants))
    for name, key in (("nodes.csv", ("osm_id",)), ("edges.csv", ("u", "v"))):
        with (src / name).open(newline="") as f:
            reader = csv.DictReader(f)
            kept = [r for r in reader if all(r[k] in keep for k in key)]
            fields = reader.fieldnames
        with (out / name).open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
            w.writeheader()
            w.writerows(kept)
    return len(keep)


def cut_wthor(src: Path, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    data = (src / f"WTH_{YEAR}.wtb").read_bytes()
    head = bytearray(data[:16])
    struct.pack_into("<I", head, 4, GAMES)
    (out / f"WTH_{YEAR}.wtb").write_bytes(bytes(head) + data[16:16 + 68 * GAMES])
    for name in ("WTH.JOU", "WTH.TRN"):
        shutil.copyfile(src / name, out / name)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--from", dest="src", default="../shared/data")
    ap.add_argument("--out", default="tests/fixtures/data")
    args = ap.parse_args(argv)
    src, out = Path(args.src), Path(args.out)
    n = cut_manhattan(src / "manhattan", out / "manhattan")
    cut_wthor(src / "othello", out / "othello")
    print(f"wrote {out}: {n} Manhattan nodes within {RADIUS_M:g} m of Bryant Park, {GAMES} WTHOR games of {YEAR}")


if __name__ == "__main__":
    main()
