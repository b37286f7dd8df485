"""Reading other people's pickles without running their code.

A pickle can name any importable callable and have the loader call it (``os.system``
included), so foreign files are read with allow-lists:

* :func:`load_torch` — ``torch.load(weights_only=True)``: tensors, plain containers,
  numbers and strings; in addition the authors' tokenizer class (``SimpleTokenizer``
  of keyonvafa/world-model-evaluation, pickled inside ``tokenizer.pt`` and inside the
  Lightning checkpoint's hyper-parameters) is rebuilt as a :class:`PlainHolder` (its
  attributes, none of its code), ``collections.defaultdict`` as a plain dict and numpy
  scalars as numbers.
* :func:`load_plain` — a plain pickle (nanoGPT's ``meta.pkl``) through the core's
  restricted unpickler, :func:`worldmodel.safe_pickle.load`.

Anything else stops with one line naming the global the file asked for; nothing
from the file runs.
"""

from __future__ import annotations

import pickle
import re
import warnings
from pathlib import Path

import numpy as np

from ...errors import WorldModelError

#: where the authors' tokenizer class may have lived when it was pickled
TOKENIZER_CLASSES = ("model.SimpleTokenizer", "__main__.SimpleTokenizer", "utils.SimpleTokenizer")


class PlainHolder:
    """Stands in for a foreign class: keeps the pickled attributes as plain data."""

    def __setstate__(self, state):
        if isinstance(state, tuple) and len(state) == 2:  # (dict, slots)
            state = {**(state[0] or {}), **(state[1] or {})}
        if not isinstance(state, dict):
            raise WorldModelError("a pickled tokenizer has a state that is not a dict of attributes")
        self.__dict__.update(state)


def _plain_dict(*_args):
    """``collections.defaultdict(factory, ...)`` read back as a plain dict (the factory is dropped)."""
    return {}


def _numpy_scalar(dtype, data=None):
    """numpy's scalar reconstructor, limited to building a number from its bytes."""
    if not isinstance(dtype, np.dtype) or dtype.hasobject:
        raise WorldModelError("a pickled numpy scalar has an object dtype")
    return np.frombuffer(data or b"", dtype=dtype)[0].item() if data else dtype.type(0).item()


def _numpy_dtype(name, *_args):
    dt = np.dtype(name)
    if dt.hasobject:
        raise WorldModelError("a pickled numpy dtype is an object dtype")
    return dt


def _path_text(*parts) -> str:
    """A pickled ``pathlib`` path (the inductive-bias-probes checkpoints keep their data paths in
    ``model_args``) read back as its text: a string, nothing constructed."""
    if not all(isinstance(p, str) for p in parts):
        raise WorldModelError("a pickled path has parts that are not strings")
    return "/".join(parts).replace("//", "/")


def _allowed_globals() -> list[tuple[object, str]]:
    out: list[tuple[object, str]] = [(PlainHolder, n) for n in TOKENIZER_CLASSES]
    out += [(_path_text, f"pathlib.{n}") for n in ("PosixPath", "WindowsPath", "Path", "PurePosixPath")]
    out += [(_plain_dict, "collections.defaultdict"), (list, "builtins.list"), (set, "builtins.set"),
            (frozenset, "builtins.frozenset")]
    for mod in ("numpy.core.multiarray", "numpy._core.multiarray"):
        out.append((_numpy_scalar, f"{mod}.scalar"))
    out.append((_numpy_dtype, "numpy.dtype"))
    return out


def _refused(path: Path, what: str) -> WorldModelError:
    return WorldModelError(
        f"refused {path}: it asks to load {what}, which is not plain data (unpickling it could run code)")


def load_torch(path: str | Path):
    """``torch.load(path, weights_only=True)`` with the authors' tokenizer class as a plain holder."""
    import torch

    from ...safety import regular_file

    path = Path(path)
    if not path.exists():
        raise WorldModelError(f"{path} does not exist or is not a file")
    regular_file(path, "checkpoint file")
    with path.open("rb") as f:
        head = f.read(8)
    if not (head.startswith(b"PK\x03\x04") or head[:1] == b"\x80"):   # torch.save's zip, or a legacy pickle
        shown = head.decode("latin-1").encode("unicode_escape").decode()
        raise WorldModelError(f"{path} is not a readable PyTorch file (it begins {shown!r}; torch.save writes a "
                              "zip archive or a pickle)")
    try:
        with torch.serialization.safe_globals(_allowed_globals()), warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Detected pickle protocol")   # the file is checked anyway
            return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        m = re.search(r"GLOBAL ([\w.]+)", str(exc))
        if m:
            raise _refused(path, m.group(1)) from None
        m = re.search(r"WeightsUnpickler error:\s*(.+?)\s*(?:\n|$)", str(exc))
        why = m.group(1) if m else (str(exc).strip().splitlines() or ["unpickling failed"])[0]
        raise WorldModelError(f"{path} is not a readable PyTorch file ({why})") from None
    except WorldModelError:
        raise
    except MemoryError:
        raise WorldModelError(f"{path}: out of memory while reading it (a corrupt or hostile size?)") from None
    except (RuntimeError, EOFError, OSError, ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise WorldModelError(f"{path} is not a readable PyTorch file: {first}") from None


def load_plain(path: str | Path):
    """A plain pickle (nanoGPT's ``meta.pkl``) through :func:`worldmodel.safe_pickle.load`: plain values only."""
    from ...safe_pickle import load

    path = Path(path)
    if not path.is_file():
        raise WorldModelError(f"{path} does not exist or is not a file")
    return load(path)
