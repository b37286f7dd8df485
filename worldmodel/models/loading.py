"""Reading a saved model folder safely: its files checked, every failure one line naming the folder.

Used by :class:`~.hf.HFModel` (which re-exports these names), :func:`~.families.load_network`
and the importers; a module of its own so that the families need not import the adapter.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import WorldModelError

#: What loading a model folder can raise when its files are broken, truncated or refused (a pickle
#: that asks for code is an ``UnpicklingError``); each becomes one line naming the folder.
LOAD_ERRORS = (OSError, ValueError, RuntimeError, KeyError, TypeError, EOFError, IndexError, AttributeError)


def check_model_folder(folder: Path, what: str = "checkpoint") -> dict:
    """The parsed ``config.json`` of a model folder, checked before transformers reads anything.

    Every file of the folder must be a regular file (a symlink to ``/dev/zero`` or a pipe is
    refused) and ``config.json`` must be a bounded JSON object without repeated keys.
    """
    from ..safety import read_json_object, regular_file

    folder = Path(folder)
    for f in sorted(folder.iterdir()):
        if not f.is_dir() or f.is_symlink():
            regular_file(f, f"{what} file")
    if not (folder / "config.json").exists():
        raise WorldModelError(f"{what} {folder} has no config.json (not a saved model)")
    return read_json_object(folder / "config.json", "json", f"{what} file")


def load_pretrained(loader, folder: Path, what: str = "checkpoint", **kwargs):
    """``loader.from_pretrained(folder, **kwargs)`` with every failure as one line naming ``folder``."""
    import pickle

    try:
        return loader.from_pretrained(folder, **kwargs)
    except pickle.UnpicklingError as exc:
        import re

        asked = re.search(r"GLOBAL ([\w.]+)", str(exc))
        why = f"it asks to load {asked.group(1)}" if asked else "it is not plain data"
        raise WorldModelError(f"{what} {folder}: its weights file is refused: {why} "
                              "(unpickling it could run code; nothing was run)") from None
    except LOAD_ERRORS as exc:
        if type(exc).__name__ == "OutOfMemoryError" or "can't allocate memory" in str(exc):
            raise
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise WorldModelError(f"{what} {folder} is incomplete or corrupt: {first[:300]}") from None
    except Exception as exc:
        if type(exc).__name__ != "SafetensorError":
            raise
        raise WorldModelError(f"{what} {folder} is incomplete or corrupt: {str(exc)[:300]}") from None
