"""Data sets from elsewhere: where they come from, their checksums, and a local cache.

Tasks name data files as ``shared:<folder>/<file>`` (``shared:manhattan/nodes.csv``,
``shared:othello``). :func:`resolve_shared` finds them, in this order:

1. ``$WORLDMODEL_SHARED/<folder>`` when that variable is set and the folder exists there;
2. the user cache, ``<cache>/data/<folder>`` (``$WORLDMODEL_CACHE``, else the platform's
   user cache directory, e.g. ``~/.cache/worldmodel``), filled by ``worldmodel fetch``;
3. the ``shared/data`` mirror beside the repository (``../shared/data``).

A folder that none of them holds stops with one line naming the command that gets it
(``worldmodel fetch manhattan-paper``).

:func:`fetch` fills the cache, either from the original public sources or from a local
mirror (``--from DIR``, a folder laid out like ``shared/data``). Every file is checked
against the SHA-256 recorded here before it is installed. A data set is installed as a
whole: its files are gathered in a hidden staging folder of the cache, a
``MANIFEST.json`` is written last, and the folder is renamed into place, so the cache
never holds a half-written entry. Downloads in progress are kept as ``.part`` files under
``<cache>/downloads`` and resumed (HTTP ``Range``) by the next attempt.

Data sets (:data:`DATASETS`):

* ``manhattan-paper``: the paper's Manhattan graph (Vafa et al.), ``world_model_edges.json``
  built from the authors' six pickles (keyonvafa/world-model-evaluation at a pinned
  commit; read with :mod:`worldmodel.safe_pickle`, converted byte for byte to the JSON the
  checksum names), plus ``nodes.csv``/``edges.csv`` (coordinates and lengths from
  OpenStreetMap). Online, the coordinates come from a live osmnx download; OpenStreetMap
  changes, so those two files cannot match the mirror's checksums and are recorded in the
  manifest as unverified. From a mirror all three are verified.
* ``wthor``: the Fédération Française d'Othello's WTHOR database, one file per year
  (1977–2025) plus the player and tournament lists, from ffothello.org; when the FFO has
  published a newer release than the one pinned here (its files then fail the checksum),
  the pinned copy in borassi/othello-sensei is used instead.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import shutil
import socket
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from .errors import WorldModelError

BESIDE = Path(__file__).resolve().parents[1].parent / "shared" / "data"
MANIFEST = "MANIFEST.json"
CHUNK = 1 << 16
ATTEMPTS = 3           # tries per URL when a download stops early (each resumes the last)
TIMEOUT_S = 30.0


class FetchError(WorldModelError):
    """A data set could not be fetched (network, checksum, missing mirror file)."""


@dataclass(frozen=True)
class Remote:
    """One file to download: tried from each URL in turn, kept only if its SHA-256 matches."""

    name: str
    sha256: str
    size: int
    urls: tuple[str, ...]


@dataclass(frozen=True)
class DataSet:
    """A data set: the files of its cache folder and how to obtain them online.

    ``files`` maps each installed file to its SHA-256 (the checksum a mirror copy must
    match). ``remotes`` are the downloads; ``build`` turns the downloaded files (a dict
    name -> path) into the installed files in a staging folder and returns the names it
    could not verify (live sources). Without ``build`` the remotes are installed as is.
    """

    name: str
    folder: str
    description: str
    files: dict[str, str]
    remotes: tuple[Remote, ...]
    build: Callable[[dict[str, Path], Path], list[str]] | None = None
    licence: str = ""


# ---------------------------------------------------------------------------
# The paper's Manhattan graph
# ---------------------------------------------------------------------------

PAPER_REPO = "keyonvafa/world-model-evaluation"
PAPER_COMMIT = "ba363f05b59fe63f30ff79a3dfbe6609101383f8"
PAPER_PICKLES = {  # (variant, file) -> (sha256, bytes)
    ("shortest", "node_and_direction_to_neighbor"): ("660ba10e503626de6d9357cd38d8149f864b803e18082e3a562796d3f4e597b1", 140672),
    ("shortest", "valid_turns"): ("e7e858b87317630852c48f7dc9a015953d631fc6f306da678d9f75962de57141", 61120),
    ("random", "node_and_direction_to_neighbor"): ("3718bca93a0c4da09ef191adaf0ba7aaef6cc6e465bf9a9ef83e7f169be70320", 140678),
    ("random", "valid_turns"): ("3d18253b54d14e06c9270e765ba615273d870dcf0f3e188680f248395fa48203", 61097),
    ("traffic", "node_and_direction_to_neighbor"): ("3718bca93a0c4da09ef191adaf0ba7aaef6cc6e465bf9a9ef83e7f169be70320", 140678),
    ("traffic", "valid_turns"): ("3493c98fecab1d8837a398710624e84530de1aaeb82785d334de0abffa4bf250", 61129),
}
MANHATTAN_PLACE = "Manhattan, New York City, New York, USA"
DIRECTIONS = ("N", "NE", "E", "SE", "S", "SW", "W", "NW")
_GRAPH_HEADER = {
    "format": "edges: [u, direction, v] = from OSM node u, moving in `direction`, the next intersection is OSM "
              "node v (one entry per key of node_and_direction_to_neighbor.pkl). valid_turns: {u (as string): "
              "[directions]} copied verbatim from valid_turns.pkl, list order kept.",
    "directions": list(DIRECTIONS),
    "source": "keyonvafa/world-model-evaluation, mapping/sequences/{shortest,random,traffic}/"
              "{node_and_direction_to_neighbor,valid_turns}.pkl; see PROVENANCE.md",
    "note": "random/ and traffic/ node_and_direction_to_neighbor.pkl are byte-identical, so traffic stores "
            "edges_same_as=random. The three valid_turns.pkl differ only in which nodes carry an empty list.",
}


def paper_graph_json(variants: dict[str, tuple[dict, dict]]) -> bytes:
    """``world_model_edges.json`` from the paper's pickles, ``{variant: (neighbours, valid_turns)}``.

    ``neighbours`` maps ``(node, direction)`` to the next node; ``valid_turns`` maps a node
    to its directions (order kept). Edges are written sorted as ``[u, direction, v]``, one
    per line; a variant whose edges equal an earlier one's stores ``edges_same_as``. The
    layout is fixed, so the same pickles always give the same bytes.
    """
    out = ["{"] + [f" {json.dumps(k)}: {json.dumps(v)}," for k, v in _GRAPH_HEADER.items()]
    out.append(' "variants": {')
    seen: dict[str, list] = {}
    names = list(variants)
    for i, name in enumerate(names):
        neighbours, turns = variants[name]
        try:
            edges = sorted((int(u), str(d), int(w)) for (u, d), w in neighbours.items())
            turn_table = {str(int(k)): [str(d) for d in v] for k, v in turns.items()}
        except (TypeError, ValueError, AttributeError) as exc:
            raise FetchError(f"paper graph pickles for {name!r} do not hold the expected tables ({exc})") from None
        out.append(f"  {json.dumps(name)}: {{")
        same = next((other for other, e in seen.items() if e == edges), None)
        if same is not None:
            out.append(f'   "edges_same_as": {json.dumps(same)},')
        else:
            seen[name] = edges
            out.append('   "edges": [')
            out += [f"    {json.dumps(list(e))}," for e in edges]
            out[-1] = out[-1].rstrip(",")
            out.append("   ],")
        out.append(f'   "valid_turns": {json.dumps(turn_table)}')
        out.append("  }" + ("," if i < len(names) - 1 else ""))
    out += [" }", "}"]
    return ("\n".join(out) + "\n").encode()


def _build_manhattan(downloaded: dict[str, Path], staging: Path) -> list[str]:
    from . import safe_pickle

    variants = {}
    for variant in ("shortest", "random", "traffic"):
        variants[variant] = tuple(safe_pickle.load(downloaded[f"{variant}-{kind}.pkl"])
                                  for kind in ("node_and_direction_to_neighbor", "valid_turns"))
    (staging / "world_model_edges.json").write_bytes(paper_graph_json(variants))
    osmnx_coordinates(staging / "world_model_edges.json", staging / "nodes.csv", staging / "edges.csv")
    return ["nodes.csv", "edges.csv"]


def osmnx_coordinates(graph_json: Path, nodes_csv: Path, edges_csv: Path, place: str = MANHATTAN_PLACE,
                      graph=None) -> None:
    """Write ``nodes.csv`` (``osm_id,lat,lon,src``) and ``edges.csv`` (``u,v,length_m``) for the
    nodes of ``graph_json`` from an osmnx drive network of ``place`` (downloaded unless
    ``graph``, a networkx MultiDiGraph with ``x``/``y`` node and ``length`` edge attributes, is given)."""
    import csv
    import datetime

    data = json.loads(Path(graph_json).read_text())
    ids: set[str] = set()
    for v in data["variants"].values():
        for u, _, w in v.get("edges", []):
            ids.update((str(u), str(w)))
        ids.update(v.get("valid_turns", {}))
    if graph is None:
        try:
            import osmnx as ox

            graph = ox.graph_from_place(place, network_type="drive", simplify=True)
        except (OSError, ValueError, RuntimeError, KeyError) as exc:  # network or Overpass failures
            raise FetchError(f"could not download coordinates of {place!r} from OpenStreetMap with osmnx "
                             f"({type(exc).__name__}: {exc}); use `worldmodel fetch manhattan-paper --from DIR` "
                             "with a copy of the data") from None
    stamp = "osmnx-" + datetime.date.today().isoformat()
    rows = sorted((str(n), float(a["y"]), float(a["x"])) for n, a in graph.nodes(data=True) if str(n) in ids)
    lengths: dict[tuple[str, str], float] = {}
    for u, v, a in graph.edges(data=True):
        key = (str(u), str(v))
        if key[0] in ids and key[1] in ids and "length" in a:
            lengths[key] = min(float(a["length"]), lengths.get(key, float("inf")))
    with nodes_csv.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["osm_id", "lat", "lon", "src"])
        w.writerows([n, f"{lat:.7f}", f"{lon:.7f}", stamp] for n, lat, lon in rows)
    with edges_csv.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["u", "v", "length_m"])
        w.writerows([u, v, f"{m:.3f}"] for (u, v), m in sorted(lengths.items()))


MANHATTAN = DataSet(
    name="manhattan-paper",
    folder="manhattan",
    description="the paper's Manhattan street graph (4,580 nodes, 9,705 edges per variant) with coordinates",
    files={
        "world_model_edges.json": "c810d3baf795d68c1965bea2c44188179c7419ae172fb6ff093e4fcbbd20de8e",
        "nodes.csv": "c6cf0d48cccd1b6c2f738f493cc5104ab287e6839b80f748255337dc0c78e3b5",
        "edges.csv": "edc3edb132886857b9e5f35f7809cb64bfd927b5dd49c30f35bec09ec349be51",
    },
    remotes=tuple(
        Remote(f"{variant}-{kind}.pkl", sha, size,
               (f"https://raw.githubusercontent.com/{PAPER_REPO}/{PAPER_COMMIT}/mapping/sequences/{variant}/{kind}.pkl",))
        for (variant, kind), (sha, size) in PAPER_PICKLES.items()
    ),
    build=_build_manhattan,
    licence="graph: MIT (c) 2024 Keyon Vafa; coordinates and lengths: (c) OpenStreetMap contributors, ODbL 1.0",
)


# ---------------------------------------------------------------------------
# WTHOR (Fédération Française d'Othello)
# ---------------------------------------------------------------------------

FFO_BASE = "https://www.ffothello.org/wthor/base"
SENSEI_BASE = ("https://raw.githubusercontent.com/borassi/othello-sensei/"
               "07818a00a30b86eab610d4265984e7ff43de77c9/assets/archive/Thor")
WTHOR_FILES = (  # (name, sha256, bytes): the FFO release of 2026-02, as archived by othello-sensei
    ("WTH.JOU", "3db81a3850ab4bb1ff4523f2d326fccbc4168ae68865ec4fcc45b884bdde56c9", 88976),
    ("WTH.TRN", "eb0e261c958fc0aa3bdd0aca887e989f1bdf3cad7e64e49ff18cdf7c3327b333", 12808),
    ("WTH_1977.wtb", "9c44b6bf9dca9c9226252a99678d298cec7ae26a39368fdfff207e61ab3cef94", 832),
    ("WTH_1978.wtb", "46e1ecef62dc7e7e5d6dd315aa6de9d9e4147b19cc94bf4a45ef10e8dc22499d", 560),
    ("WTH_1979.wtb", "b210e8334d49b8c29cd5e6671efa3283c03f320019df1bd07db7c915b8e40546", 764),
    ("WTH_1980.wtb", "38a6f4a121883621e11ac5ea9943c5342bc18bbf9c7ea3ef72fb2a9717343331", 10896),
    ("WTH_1981.wtb", "ed654368797faf50e005e07b3c457d34ba6a06833fd52a1f186aa07bf74f82c9", 10420),
    ("WTH_1982.wtb", "a9f113b77034584184f103ead32030097739eb30600a6c6bf1d4cbc040429e29", 7496),
    ("WTH_1983.wtb", "a962233829c420d78a133aecfab466ad2da456b87db98c8a62087446540d16a6", 13548),
    ("WTH_1984.wtb", "c4f848c5a5e99e6a80be0e29af541958914a25e0515f51184d48ade9aa03546d", 39932),
    ("WTH_1985.wtb", "cff42294d01eec1784a194dbb5af250b302bf6a725f0158f4d99282fc58f4722", 64888),
    ("WTH_1986.wtb", "ccaff79b4e6f86dc6f4b917178b0ef01784aba4c39500143f87b0c70af0ac299", 97936),
    ("WTH_1987.wtb", "9410c7a166248de66649ae80f9da67f4ef2cbc520956d3117d56848747813156", 94264),
    ("WTH_1988.wtb", "8e70a6f6c2e79ed60af3c593505d5b87e8b81d16f87f0788e9ddcab755430b15", 123980),
    ("WTH_1989.wtb", "459d9c22674ee5033f38249c20260eba9b4773e4ac9caaeab4fbd2f974729539", 148664),
    ("WTH_1990.wtb", "8100ff898e9c1c13d44dd6cfbfd78d8753cda731e1dc4db05cb31add10f8e209", 203064),
    ("WTH_1991.wtb", "246cb916d0af1d229e541ccb2cafff7e64d5d0174f191b4d3ace564642260206", 214352),
    ("WTH_1992.wtb", "44f9c95612fdbe75a285a51e66dbb83712f7f1b5822910fb41b5b5a6434d3872", 227612),
    ("WTH_1993.wtb", "2fdba7cbc3d771b6d23be3889445c7580c36c05745916d9f9049c33ea65f023b", 236928),
    ("WTH_1994.wtb", "5bdb8b6c394ff0f85952256d88015b3dfcda59939e2be48af05d6889f42dedb2", 295340),
    ("WTH_1995.wtb", "77102226943bd869233b9a9c58e70f83b3308170a9c2d10abece64a68a64a9d7", 337840),
    ("WTH_1996.wtb", "cf10aae185db77c6e1089a56351d6ce7436f4e5fc910b5e71f03c712859258b7", 397952),
    ("WTH_1997.wtb", "4b0b9f403e2a1bb1c9ba0ed02c1c39cea0127db056fcdfc6c4c6ce74baf5eb50", 522324),
    ("WTH_1998.wtb", "a5d39409c5e3a84519fa0c2a84f368cb97ce63be4964ef1321be9381976aae5a", 549252),
    ("WTH_1999.wtb", "e78208e66ff6b2dca9c37754c1a840cd177c53d8691926d35e75b6cce5b37a4f", 522596),
    ("WTH_2000.wtb", "f70faa94377a6f8b67792da6ac0e905593712352d8b26ac064da54506dd53944", 289220),
    ("WTH_2001.wtb", "21920f4776d810126ee1b68c99541f8ac389cf98055c19cb5fa815ed95b846dd", 379116),
    ("WTH_2002.wtb", "fe36942863354622a6cc307e73307202348c262c5e49a99371d4743284218852", 368780),
    ("WTH_2003.wtb", "57bcab596cc10e7668c898642094219213c0d3293d7e2180852e0c4ac9c6a95c", 262360),
    ("WTH_2004.wtb", "90e5dc4f4cd37a5e02f3833e9b82128a330534f8afd22e780011748f1683cc97", 619700),
    ("WTH_2005.wtb", "a2793df2b806f2933a16c8c615de7192f0d778f8c8ed9683a1a8790f417013dc", 285548),
    ("WTH_2006.wtb", "596504fe8435acd73d479bf570ae3fb8d033796db5b3f2ef3c61bde9492b1955", 200072),
    ("WTH_2007.wtb", "a29e8a1d26913bc704ddb7d7a8a0ee01a8b9def101428cd661411cd1da39e4fc", 168520),
    ("WTH_2008.wtb", "9e4b4501a8c48e464148409d7f3583220ed1426f75f50a0420333fe471056701", 151792),
    ("WTH_2009.wtb", "a25036acbbe03ccaa0236445d5176174040d57f7b9941d21979013bd616a6112", 295680),
    ("WTH_2010.wtb", "b7fdbcb1d64c08cc012792404fe297b07f9e0eac8cd73d2afab48303d4d92a91", 147712),
    ("WTH_2011.wtb", "ebea481ed09095247b107abf8e348b79bb398ced5c0854166027a6abeeff2030", 128604),
    ("WTH_2012.wtb", "a92d7b251986dabde2aa6774456a6dcb3785e9e0db7a2b11094aa49bf903e611", 150160),
    ("WTH_2013.wtb", "f71f1981b6519b7bcc768f832f6c25e3bb9d2b896dc5375a6b681fc1ddad8f2d", 162944),
    ("WTH_2014.wtb", "45728d4de4f2b1a40a83bdd46fcffe48e21c85aa4e786f2c6aec6fe6db8bd230", 123572),
    ("WTH_2015.wtb", "7fac0f0a4fb2734a7ac6d98f85a9d6969e02250b8a61f46bbebcfe11cacff59e", 130984),
    ("WTH_2016.wtb", "afaccc1ab00502da45416010621566d808ca8d00de09232b196dc3e3451af446", 136900),
    ("WTH_2017.wtb", "854ce8189596c87846d78ee151776ef74dcdc8972bf02eac6f4d8e60f5308c18", 166548),
    ("WTH_2018.wtb", "db9e475aa33cbbd68f9a1231421656b6c9f4939cccec386f1761e2d19661edf4", 165188),
    ("WTH_2019.wtb", "5907d39469ef7a67846c59e50f4368fcd0458bb4bf9802a7d6050dca2c71bf1f", 134860),
    ("WTH_2020.wtb", "2987c5a149ff88a6087c863a065d54d0c0d586255b41cfd06976495a173ac573", 60944),
    ("WTH_2021.wtb", "f7c2672aaae2badeb1c21bccfc7e4936a11277c68fcb9775f6c7375872f22208", 46256),
    ("WTH_2022.wtb", "f48859be434a916be20e7dacc5a403acaaf6ba9ee0c2ca6129446e001d84f72a", 93448),
    ("WTH_2023.wtb", "eb4988e1f34d44c1d8ae82aea620422d7b9762a51eb12fd07ad79fb23b0a54ea", 168520),
    ("WTH_2024.wtb", "cfb0a86eac305d3de8399a600de99241bd0f0ddceb9431381c70a471281494fb", 196604),
    ("WTH_2025.wtb", "dfdb85456431e59122336a03fe384b037436ac5f3f0c3b6e5462870635c9483d", 198576),
)


def _ffo_name(name: str) -> str:
    return {"WTH.JOU": "WTHOR.JOU", "WTH.TRN": "WTHOR.TRN"}.get(name, name)


WTHOR = DataSet(
    name="wthor",
    folder="othello",
    description="the WTHOR database of Othello games, 1977-2025 (137,548 games, 9.5 MB)",
    files={name: sha for name, sha, _ in WTHOR_FILES},
    remotes=tuple(Remote(name, sha, size, (f"{FFO_BASE}/{_ffo_name(name)}", f"{SENSEI_BASE}/{name}"))
                  for name, sha, size in WTHOR_FILES),
    licence="Fédération Française d'Othello (WTHOR database), free public download; credit the FFO",
)

DATASETS: dict[str, DataSet] = {d.name: d for d in (MANHATTAN, WTHOR)}


def dataset(name: str) -> DataSet:
    if name not in DATASETS:
        raise WorldModelError(f"unknown data set {name!r} (known: {', '.join(DATASETS)})")
    return DATASETS[name]


# ---------------------------------------------------------------------------
# Where data lives
# ---------------------------------------------------------------------------


def cache_dir() -> Path:
    """``$WORLDMODEL_CACHE``, else the platform's user cache folder for ``worldmodel``."""
    env = os.environ.get("WORLDMODEL_CACHE")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("worldmodel"))


def cache_data_dir() -> Path:
    return cache_dir() / "data"


def installed(ds: DataSet) -> Path | None:
    """The data set's cache folder if a complete copy is installed there."""
    folder = cache_data_dir() / ds.folder
    return folder if (folder / MANIFEST).is_file() else None


def _folder_owner(folder: str) -> DataSet | None:
    return next((d for d in DATASETS.values() if d.folder == folder), None)


def resolve_shared(relative: str) -> Path:
    """The path of ``shared:<relative>``: ``$WORLDMODEL_SHARED``, the cache, or ``../shared/data``.

    A folder of a known data set that none of them holds raises :class:`WorldModelError`
    naming the ``worldmodel fetch`` command that gets it.
    """
    relative = relative.strip().lstrip("/")
    folder = relative.split("/", 1)[0]
    env = os.environ.get("WORLDMODEL_SHARED")
    if env and (Path(env) / folder).exists():
        return Path(env) / relative
    ds = _folder_owner(folder)
    if ds is not None and installed(ds):
        return cache_data_dir() / relative
    if (BESIDE / folder).exists():
        return BESIDE / relative
    if ds is not None:
        where = ", ".join(([f"$WORLDMODEL_SHARED={env}"] if env else []) + [str(cache_data_dir()), str(BESIDE)])
        raise WorldModelError(f"data set {ds.name} ({relative}) is not available (looked in {where}): "
                              f"run `worldmodel fetch {ds.name}`")
    return (Path(env) if env else BESIDE) / relative


def resolve_path(value: str | Path, base: Path | None = None) -> Path:
    """A path from a task file: ``shared:...`` through :func:`resolve_shared`; a relative path
    that does not exist from the working folder is taken from ``base`` when given."""
    text = str(value)
    if text.startswith("shared:"):
        return resolve_shared(text[len("shared:"):])
    p = Path(text)
    if not p.is_absolute() and base is not None and not p.exists():
        p = base / p
    return p


# ---------------------------------------------------------------------------
# Fetching
# ---------------------------------------------------------------------------


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


@dataclass
class FetchReport:
    dataset: str
    folder: Path
    status: str                       # "installed", "up to date"
    files: dict[str, dict] = field(default_factory=dict)

    def line(self) -> str:
        unverified = [n for n, f in self.files.items() if not f.get("verified")]
        extra = f"; not checksummed (live source): {', '.join(unverified)}" if unverified else ""
        return f"{self.dataset}: {self.status} in {self.folder} ({len(self.files)} files{extra})"


def download(url: str, part: Path, size: int | None = None, attempts: int = ATTEMPTS,
             timeout: float = TIMEOUT_S) -> Path:
    """Download ``url`` into ``part``, resuming what an earlier attempt left there.

    Each attempt asks for the missing bytes (``Range``); a server that answers 200
    instead restarts the file. At most ``attempts`` tries; a transfer that still ends
    early raises :class:`FetchError` and keeps ``part`` for the next run to resume.
    """
    part.parent.mkdir(parents=True, exist_ok=True)
    last = ""
    for _ in range(attempts):
        have = part.stat().st_size if part.exists() else 0
        if size is not None and have > size:
            part.unlink()
            have = 0
        if size is not None and have == size:
            return part
        headers = {"User-Agent": "worldmodel-fetch"}
        if have:
            headers["Range"] = f"bytes={have}-"
        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout) as resp:
                resumed = have > 0 and resp.status == 206
                if not resumed:
                    have = 0
                length = resp.headers.get("Content-Length")
                total = have + int(length) if length and length.isdigit() else size
                limit = (size if size is not None else total if total is not None else 1 << 34) - have
                with part.open("ab" if resumed else "wb") as f:
                    got = 0
                    while got <= limit:
                        chunk = resp.read(CHUNK)
                        if not chunk:
                            break
                        f.write(chunk)
                        got += len(chunk)
                    if got > limit:
                        raise FetchError(f"download of {url} is larger than the expected {have + limit} bytes")
        except urllib.error.HTTPError as exc:
            if exc.code == 416 and have:  # nothing left to send: the part is complete (checked by the caller)
                return part
            raise FetchError(f"download of {url} failed: HTTP {exc.code} {exc.reason}") from None
        except urllib.error.URLError as exc:
            raise FetchError(f"cannot reach {url} ({exc.reason}); are you offline? "
                             "`worldmodel fetch NAME --from DIR` copies from a local mirror instead") from None
        except (http.client.IncompleteRead, ConnectionError, socket.timeout, TimeoutError) as exc:
            last = f"{type(exc).__name__}"
            continue
        now = part.stat().st_size
        if total is None or now >= total:
            return part
        last = f"stopped after {now} of {total} bytes"
    now = part.stat().st_size if part.exists() else 0
    raise FetchError(f"download of {url} was interrupted ({last or 'no data'}; {now} bytes kept) after "
                     f"{attempts} attempts; rerun the same `worldmodel fetch` to resume")


def _get_remote(remote: Remote, downloads: Path, attempts: int, timeout: float) -> Path:
    """Download one file from the first URL that gives the right checksum; returns the file."""
    errors = []
    for url in remote.urls:
        part = downloads / f"{hashlib.sha1(url.encode()).hexdigest()[:12]}-{remote.name}.part"
        try:
            download(url, part, remote.size, attempts, timeout)
        except FetchError as exc:
            errors.append(str(exc))
            continue
        got = sha256_of(part)
        if got == remote.sha256:
            return part
        part.unlink()
        errors.append(f"checksum mismatch for {remote.name} from {url}: expected sha256 {remote.sha256[:16]}…, "
                      f"got {got[:16]}…")
    if len(errors) == 1:
        raise FetchError(errors[0])
    raise FetchError(f"{remote.name}: no source gave the pinned file ({'; '.join(errors)})")


def _mirror_file(root: Path, ds: DataSet, name: str) -> Path:
    for candidate in (root / ds.folder / name, root / name):
        if candidate.is_file():
            return candidate
    raise FetchError(f"mirror {root} has no {ds.folder}/{name} (data set {ds.name})")


def _verify_installed(folder: Path) -> bool:
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
        return all(sha256_of(folder / n) == f["sha256"] for n, f in manifest["files"].items())
    except (OSError, ValueError, KeyError, TypeError):
        return False


def fetch(name: str | DataSet, mirror: str | Path | None = None, force: bool = False, progress: bool = True,
          attempts: int = ATTEMPTS, timeout: float = TIMEOUT_S) -> FetchReport:
    """Install a data set into the cache, from ``mirror`` (a local folder) or online.

    Already installed and intact: nothing is done (unless ``force``). Every file is
    checked against its recorded SHA-256 (a live source that cannot be pinned is
    recorded as unverified). Raises :class:`FetchError` with one line on any problem;
    the cache entry is then left as it was.
    """
    ds = dataset(name) if isinstance(name, str) else name
    if mirror is not None and not Path(mirror).is_dir():
        raise FetchError(f"mirror folder {mirror} does not exist")
    data_dir = cache_data_dir()
    final = data_dir / ds.folder
    if not force and (final / MANIFEST).is_file() and _verify_installed(final):
        return FetchReport(ds.name, final, "up to date", json.loads((final / MANIFEST).read_text())["files"])
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".staging-{ds.folder}-", dir=data_dir))
    except OSError as exc:
        raise FetchError(f"cannot write to the cache {data_dir} ({exc.strerror}); set WORLDMODEL_CACHE to a "
                         "writable folder") from None
    try:
        files = _gather(ds, staging, Path(mirror) if mirror is not None else None, progress, attempts, timeout)
        (staging / MANIFEST).write_text(json.dumps(
            {"dataset": ds.name, "fetched": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
             "licence": ds.licence, "files": files}, indent=1) + "\n")
        _install(staging, final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if mirror is None:
        shutil.rmtree(data_dir.parent / "downloads" / ds.folder, ignore_errors=True)
    return FetchReport(ds.name, final, "installed", files)


def _gather(ds: DataSet, staging: Path, mirror: Path | None, progress: bool, attempts: int,
            timeout: float) -> dict[str, dict]:
    from tqdm.auto import tqdm

    files: dict[str, dict] = {}
    if mirror is not None:
        if not mirror.is_dir():
            raise FetchError(f"mirror folder {mirror} does not exist")
        for name, sha in tqdm(ds.files.items(), desc=f"copy {ds.name}", unit="file", disable=not progress):
            src = _mirror_file(mirror, ds, name)
            dst = staging / name
            shutil.copyfile(src, dst)
            got = sha256_of(dst)
            if got != sha:
                raise FetchError(f"checksum mismatch for {src}: expected sha256 {sha[:16]}…, got {got[:16]}… "
                                 f"(not the {ds.name} files this version of worldmodel pins)")
            files[name] = {"sha256": got, "bytes": dst.stat().st_size, "source": str(src.resolve()), "verified": True}
        return files
    downloads = staging.parent.parent / "downloads" / ds.folder
    got: dict[str, Path] = {}
    for remote in tqdm(ds.remotes, desc=f"download {ds.name}", unit="file", disable=not progress):
        got[remote.name] = _get_remote(remote, downloads, attempts, timeout)
    unverified: list[str] = []
    if ds.build is None:
        for remote in ds.remotes:
            shutil.move(str(got[remote.name]), staging / remote.name)
    else:
        unverified = ds.build(got, staging)
    for name, sha in ds.files.items():
        path = staging / name
        if not path.is_file():
            raise FetchError(f"{ds.name}: building {name} failed (no file written)")
        actual = sha256_of(path)
        if name not in unverified and actual != sha:
            raise FetchError(f"checksum mismatch for {name} built from the downloads: expected sha256 "
                             f"{sha[:16]}…, got {actual[:16]}…")
        files[name] = {"sha256": actual, "bytes": path.stat().st_size, "verified": name not in unverified,
                       "source": "live download" if name in unverified else
                       " or ".join(r.urls[0] for r in ds.remotes if r.name == name) or "built from the downloads"}
    return files


def _install(staging: Path, final: Path) -> None:
    """Put ``staging`` in place of ``final`` by renames only (an old copy is removed after)."""
    old = None
    if final.exists():
        old = final.with_name(f".old-{final.name}-{os.getpid()}")
        if old.exists():
            shutil.rmtree(old)
        final.rename(old)
    staging.rename(final)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def status() -> list[tuple[str, str, str]]:
    """(name, where it resolves or 'missing', description) for every data set."""
    rows = []
    for ds in DATASETS.values():
        try:
            where = str(resolve_shared(ds.folder))
        except WorldModelError:
            where = "missing"
        rows.append((ds.name, where, ds.description))
    return rows


def fetch_many(names: Iterable[str], **kwargs) -> list[FetchReport]:
    return [fetch(n, **kwargs) for n in names]
