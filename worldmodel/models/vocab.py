"""Domain tokens <-> model ids, saved as ``vocab.json`` beside every checkpoint.

Two kinds of vocabulary share one class:

* **ours** (``Vocabulary(tokens)``, what ``worldmodel train`` writes): ``<pad>`` = 0,
  ``<bos>`` = 1, the world's tokens from 2 on, in the world's order;
* **foreign** (``Vocabulary.from_ids``, what ``worldmodel import`` writes): an explicit
  token -> id map into a model vocabulary of any size, an optional BOS id and a pad
  id. A model without BOS reads the first token of a sequence as context and never
  predicts it (the paper's navigation models, Li et al.'s Othello-GPT).

``vocab.json`` (format 2) stores ``ids`` (token -> id), ``size`` (the model's number of
ids), ``bos_id`` (or null), ``pad_id`` and ``world``; the first format (``tokens`` +
``specials``) still loads. The file is read bounded and strictly
(:func:`worldmodel.safety.read_json`: a regular file of at most 64 MiB, no key twice in an
object); a declared ``size`` above :data:`~worldmodel.safety.MAX_VOCAB_IDS`, a token listed
twice, a token named like a special (``<pad>``, ``<bos>``) or an id outside the model's are
errors.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from ..dfa import Token, World
from ..errors import WorldModelError
from ..safety import MAX_VOCAB_IDS, atomic_json, read_json_object


class Vocabulary:
    """World tokens <-> model ids.

    :attr:`tokens` are the world tokens the model can name (the columns of every
    distribution an adapter returns), :attr:`token_ids` their model ids, :attr:`size`
    the model's number of ids, :attr:`bos_id` the id fed before every sequence (None:
    no BOS) and :attr:`pad_id` the id used for padding (always masked out).
    """

    PAD, BOS = "<pad>", "<bos>"
    FILE = "vocab.json"

    def __init__(self, tokens: Sequence[Token], world_name: str = ""):
        tokens = tuple(tokens)
        self._setup({t: i + 2 for i, t in enumerate(tokens)}, len(tokens) + 2, bos_id=1, pad_id=0,
                    world_name=world_name, names={0: self.PAD, 1: self.BOS})

    @classmethod
    def from_ids(cls, ids: Mapping[Token, int], size: int, bos_id: int | None = None, pad_id: int | None = None,
                 world_name: str = "", names: Mapping[int, str] | None = None) -> "Vocabulary":
        """A vocabulary over a foreign model's ids (``names``: labels of its other ids, for messages)."""
        v = cls.__new__(cls)
        v._setup(dict(ids), int(size), bos_id, pad_id, world_name, dict(names or {}))
        return v

    def _setup(self, ids: dict, size: int, bos_id, pad_id, world_name: str, names: dict) -> None:
        if isinstance(size, bool) or not 0 < int(size) <= MAX_VOCAB_IDS:
            raise WorldModelError(f"vocabulary size {size} is outside 1..{MAX_VOCAB_IDS:,}")
        tokens = tuple(ids)
        if len(set(tokens)) != len(tokens):
            raise WorldModelError("vocabulary tokens must be distinct")
        id_list = [int(i) for i in ids.values()]
        if len(set(id_list)) != len(id_list):
            raise WorldModelError("vocabulary maps two tokens to one id")
        for i in id_list + [x for x in (bos_id, pad_id) if x is not None]:
            if not 0 <= int(i) < size:
                raise WorldModelError(f"vocabulary id {i} is outside the model's {size} ids")
        if bos_id is not None and int(bos_id) in id_list:
            raise WorldModelError(f"the BOS id {bos_id} is also a world token's id")
        self.tokens = tokens
        self.world_name = world_name
        self.size = int(size)
        self.stoi = {t: int(i) for t, i in ids.items()}
        self.token_ids = np.array(id_list, dtype=np.int64)
        self.bos_id = None if bos_id is None else int(bos_id)
        # padding is always masked; any id will do when the model names none
        self.pad_id = int(pad_id) if pad_id is not None else (self.bos_id if self.bos_id is not None else 0)
        self.names = {int(k): str(v) for k, v in names.items()}
        for i in self.names:
            if not 0 <= i < self.size:
                raise WorldModelError(f"vocabulary names id {i}, outside the model's {self.size} ids")
        self._itos = None
        self.specials = tuple(self.names[i] for i in sorted(self.names) if i not in set(id_list))
        # ours: domain columns are one contiguous slice (fast path in the adapters)
        first = id_list[0] if id_list else 0
        self.offset = first if id_list == list(range(first, first + len(id_list))) else None

    @property
    def itos(self) -> tuple[str, ...]:
        """The label of every model id (world tokens, named specials, ``<id N>`` for the rest); built on first use."""
        if self._itos is None:
            itos = [self.names.get(i, f"<id {i}>") for i in range(self.size)]
            for t, i in self.stoi.items():
                itos[i] = t
            self._itos = tuple(itos)
        return self._itos

    @property
    def has_bos(self) -> bool:
        return self.bos_id is not None

    def __len__(self) -> int:
        return self.size

    def encode(self, seq: Sequence[Token], bos: bool = True) -> list[int]:
        """Model ids of ``seq``, after the BOS id when ``bos`` and the vocabulary has one."""
        try:
            ids = [self.stoi[t] for t in seq]
        except KeyError as exc:
            raise WorldModelError(f"token {exc.args[0]!r} is not in the model's vocabulary") from None
        return [self.bos_id] + ids if bos and self.bos_id is not None else ids

    def is_ours(self) -> bool:
        return self.bos_id == 1 and self.pad_id == 0 and self.offset == 2 and self.size == len(self.tokens) + 2

    def save(self, folder: Path) -> None:
        if self.is_ours():
            data = {"tokens": list(self.tokens), "specials": [self.PAD, self.BOS], "world": self.world_name}
        else:
            data = {"format": 2, "world": self.world_name, "size": self.size, "bos_id": self.bos_id,
                    "pad_id": self.pad_id, "ids": self.stoi, "names": {str(k): v for k, v in self.names.items()}}
        atomic_json(Path(folder) / self.FILE, data, "vocabulary", indent=1)

    @classmethod
    def load(cls, folder: Path) -> "Vocabulary":
        path = Path(folder) / cls.FILE
        if not path.exists() and not path.is_symlink():
            raise WorldModelError(f"checkpoint {folder}: missing {cls.FILE} (not a worldmodel checkpoint?)")
        try:
            data = read_json_object(path, "json", "file")
        except WorldModelError as exc:
            raise WorldModelError(f"checkpoint {folder}: {cls.FILE} is malformed ({exc})") from None
        try:
            if data.get("format") == 2:
                size = data["size"]
                if isinstance(size, bool) or not isinstance(size, int) or not 0 < size <= MAX_VOCAB_IDS:
                    raise ValueError(f"size {size!r} is not a number of ids in 1..{MAX_VOCAB_IDS:,}")
                if not isinstance(data["ids"], dict):
                    raise TypeError("ids is not an object")
                specials = {cls.PAD, cls.BOS}
                clash = sorted(t for t in data["ids"] if t in specials)
                if clash:
                    raise ValueError(f"the world token {clash[0]!r} has a special token's name")
                return cls.from_ids({str(t): _int(i) for t, i in data["ids"].items()}, size,
                                    _opt_int(data.get("bos_id")), _opt_int(data.get("pad_id")), data.get("world", ""),
                                    {_int(k): str(v) for k, v in (data.get("names") or {}).items()})
            tokens = data["tokens"]
            if not isinstance(tokens, list) or len(tokens) > MAX_VOCAB_IDS:
                raise ValueError(f"tokens is not a list of at most {MAX_VOCAB_IDS:,} names")
            twice = next((t for t, n in _counts(tokens).items() if n > 1), None)
            if twice is not None:
                raise ValueError(f"the token {twice!r} is listed twice")
            if cls.PAD in tokens or cls.BOS in tokens:
                raise ValueError("a world token has a special token's name (<pad>, <bos>)")
            return cls([str(t) for t in tokens], data.get("world", ""))
        except (KeyError, TypeError, ValueError, AttributeError, WorldModelError) as exc:
            why = f"no {exc.args[0]!r}" if isinstance(exc, KeyError) else str(exc)
            raise WorldModelError(f"checkpoint {folder}: {cls.FILE} is malformed ({why})") from None

    def check_world(self, world: World, where: str, missing: str = "error") -> None:
        """The vocabulary's tokens must be the world's (``missing="zero"``: a subset of them)."""
        if missing == "zero" and set(self.tokens) <= set(world.tokens):
            return
        if set(self.tokens) != set(world.tokens):
            missing = sorted(set(world.tokens) - set(self.tokens))[:5]
            extra = sorted(set(self.tokens) - set(world.tokens))[:5]
            raise WorldModelError(
                f"checkpoint {where}: vocabulary does not match the {world.name} world "
                f"({len(self.tokens)} tokens vs {len(world.tokens)}; missing e.g. {missing}, unknown e.g. {extra})"
                + ("; give --missing-tokens zero to score it with the missing ones at probability 0"
                   if missing and not extra else "")
            )


def _int(x) -> int:
    """An id: a whole number (a numeric string from a JSON key included), never a bool or a float."""
    if isinstance(x, bool) or isinstance(x, float):
        raise ValueError(f"id {x!r} is not a whole number")
    return int(x)


def _opt_int(x):
    return None if x is None else _int(x)


def _counts(items) -> dict:
    out: dict = {}
    for x in items:
        out[x] = out.get(x, 0) + 1
    return out
