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

Data sets are the worlds' own: each world lists its :class:`DataSet` entries in its
``data_sets`` module, registered in :mod:`worldmodel.registry` (``worldmodel fetch --list``
shows them all): ``manhattan-paper`` (:mod:`worldmodel.worlds.navigation.data_sets`),
``wthor`` (:mod:`worldmodel.worlds.othello.data_sets`).
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


def data_sets() -> dict[str, DataSet]:
    """Every world's data sets by name (each world registers its own: :func:`worldmodel.registry.data_sets`)."""
    from . import registry

    return {d.name: d for d in registry.data_sets()}


def dataset(name: str) -> DataSet:
    known = data_sets()
    if name not in known:
        raise WorldModelError(f"unknown data set {name!r} (known: {', '.join(known)})")
    return known[name]


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
    return next((d for d in data_sets().values() if d.folder == folder), None)


def resolve_shared(relative: str) -> Path:
    """The path of ``shared:<relative>``: ``$WORLDMODEL_SHARED``, the cache, or ``../shared/data``.

    A folder of a known data set that none of them holds raises :class:`WorldModelError`
    naming the ``worldmodel fetch`` command that gets it.
    """
    from .safety import inside

    relative = relative.strip().lstrip("/")
    folder = relative.split("/", 1)[0]
    if not folder or folder in (".", ".."):
        raise WorldModelError(f"shared:{relative} names no data folder")
    where = f"shared:{relative}"
    env = os.environ.get("WORLDMODEL_SHARED")
    if env and (Path(env) / folder).exists():
        return inside(Path(env), relative, where)      # `..` or a symlink out of the folder is refused
    ds = _folder_owner(folder)
    if ds is not None and installed(ds):
        return inside(cache_data_dir(), relative, where)
    if (BESIDE / folder).exists():
        return inside(BESIDE, relative, where)
    if ds is not None:
        where = ", ".join(([f"$WORLDMODEL_SHARED={env}"] if env else []) + [str(cache_data_dir()), str(BESIDE)])
        raise WorldModelError(f"data set {ds.name} ({relative}) is not available (looked in {where}): "
                              f"run `worldmodel fetch {ds.name}`")
    return inside(Path(env) if env else BESIDE, relative, where)


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


def _manifest(folder: Path) -> dict:
    """The ``MANIFEST.json`` of an installed data set, checked: bounded, no repeated key, file names that stay
    inside the folder (one name each, no ``/`` or ``..``)."""
    from .safety import path_component, read_json_object

    manifest = read_json_object(folder / MANIFEST, "json", "data set manifest")
    files = manifest.get("files")
    if not isinstance(files, dict) or not all(isinstance(f, dict) for f in files.values()):
        raise WorldModelError(f"data set manifest {folder / MANIFEST} has no files table")
    for name in files:
        path_component(name, f"data set manifest {folder / MANIFEST}: file name")
    return manifest


def _verify_installed(folder: Path) -> bool:
    try:
        manifest = _manifest(folder)
        return all(sha256_of(folder / n) == f["sha256"] for n, f in manifest["files"].items())
    except (OSError, ValueError, KeyError, TypeError, WorldModelError):
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
        return FetchReport(ds.name, final, "up to date", _manifest(final)["files"])
    from .safety import atomic_write, claim, writing

    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".staging-{ds.folder}-", dir=data_dir))
    except OSError as exc:
        raise FetchError(f"cannot write to the cache {data_dir} ({exc.strerror}); set WORLDMODEL_CACHE to a "
                         "writable folder") from None
    try:
        # one fetch per data set at a time (a second waits); a full disk is one line naming the cache
        with claim(final, "data set cache", wait=True), writing(final, f"data set {ds.name} into"):
            files = _gather(ds, staging, Path(mirror) if mirror is not None else None, progress, attempts, timeout)
            manifest = {"dataset": ds.name, "fetched": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                        "licence": ds.licence, "files": files}
            atomic_write(staging / MANIFEST, json.dumps(manifest, indent=1) + "\n", "data set manifest")
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
            dst.parent.mkdir(parents=True, exist_ok=True)  # names may hold a folder (eight: arcs/...)
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
            (staging / remote.name).parent.mkdir(parents=True, exist_ok=True)
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
    """Put ``staging`` in place of ``final`` (:func:`worldmodel.safety.swap_folder`: the old copy stays until then)."""
    from .safety import recover_swap, swap_folder

    recover_swap(final)
    swap_folder(staging, final)


def status() -> list[tuple[str, str, str]]:
    """(name, where it resolves or 'missing', description) for every data set."""
    rows = []
    for ds in data_sets().values():
        try:
            where = str(resolve_shared(ds.folder))
        except WorldModelError:
            where = "missing"
        rows.append((ds.name, where, ds.description))
    return rows


def fetch_many(names: Iterable[str], **kwargs) -> list[FetchReport]:
    return [fetch(n, **kwargs) for n in names]
