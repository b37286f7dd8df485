"""Domain tokens <-> model ids, saved as ``vocab.json`` beside every checkpoint."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from ..dfa import Token, World
from ..errors import WorldModelError


class Vocabulary:
    """Domain tokens <-> model ids. Ids 0 and 1 are ``<pad>`` and ``<bos>``.

    Saved as ``vocab.json`` beside every checkpoint (the ``save_pretrained`` folder).
    """

    PAD, BOS = "<pad>", "<bos>"
    FILE = "vocab.json"

    def __init__(self, tokens: Sequence[Token], world_name: str = ""):
        tokens = tuple(tokens)
        if len(set(tokens)) != len(tokens):
            raise WorldModelError("vocabulary tokens must be distinct")
        self.tokens = tokens
        self.world_name = world_name
        self.specials = (self.PAD, self.BOS)
        self.itos = self.specials + tokens
        self.stoi = {t: i for i, t in enumerate(self.itos)}
        self.pad_id, self.bos_id = 0, 1
        self.offset = len(self.specials)

    def __len__(self) -> int:
        return len(self.itos)

    def encode(self, seq: Sequence[Token], bos: bool = True) -> list[int]:
        try:
            ids = [self.stoi[t] for t in seq]
        except KeyError as exc:
            raise WorldModelError(f"token {exc.args[0]!r} is not in the model's vocabulary") from None
        return [self.bos_id] + ids if bos else ids

    def save(self, folder: Path) -> None:
        data = {"tokens": list(self.tokens), "specials": list(self.specials), "world": self.world_name}
        (Path(folder) / self.FILE).write_text(json.dumps(data, indent=1))

    @classmethod
    def load(cls, folder: Path) -> "Vocabulary":
        path = Path(folder) / cls.FILE
        if not path.exists():
            raise WorldModelError(f"checkpoint {folder}: missing {cls.FILE} (not a worldmodel checkpoint?)")
        try:
            data = json.loads(path.read_text())
            vocab = cls(data["tokens"], data.get("world", ""))
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise WorldModelError(f"checkpoint {folder}: {cls.FILE} is malformed ({exc})") from None
        return vocab

    def check_world(self, world: World, where: str) -> None:
        if set(self.tokens) != set(world.tokens):
            missing = sorted(set(world.tokens) - set(self.tokens))[:5]
            extra = sorted(set(self.tokens) - set(world.tokens))[:5]
            raise WorldModelError(
                f"checkpoint {where}: vocabulary does not match the {world.name} world "
                f"({len(self.tokens)} tokens vs {len(world.tokens)}; missing e.g. {missing}, unknown e.g. {extra})"
            )
