"""Li et al.'s Othello-GPT checkpoints (likenneth/othello_world): the ``li-othello`` import format.

A minGPT state dict (``gpt_synthetic.ckpt``, ``gpt_championship.ckpt``; 8 layers, 8 heads, 512 dims)
over the ``CharDataset`` vocabulary: id 0 is the padding move ``-100``, ids 1..60 the 60 playable
squares in increasing index ``row * 8 + col`` (no BOS). Heads: 8 unless ``--n-head`` says otherwise
(a state dict does not record them). Registered in :data:`worldmodel.registry.FORMATS`.
"""

from __future__ import annotations

from pathlib import Path

from ...dfa import World
from ...errors import WorldModelError
from ...models.importers.common import Imported, ImportOptions, _provenance
from ...models.importers.gpt2 import build_gpt2, mingpt_to_gpt2
from ...models.importers.safe_pickle import load_torch
from ...models.vocab import Vocabulary
from .world import OthelloWorld


def detect(source: Path, data) -> bool:
    """A minGPT state dict: ``tok_emb.weight`` and ``blocks.N.…`` keys."""
    return isinstance(data, dict) and "tok_emb.weight" in data and any(str(k).startswith("blocks.") for k in data)


def li_vocabulary(world: World, where: str) -> tuple[dict[str, int], int]:
    """Li et al.'s ``CharDataset`` ids: 0 = padding (-100), squares ``row*8+col`` ascending from 1."""
    if not isinstance(world, OthelloWorld):
        raise WorldModelError(f"{where}: li-othello checkpoints score an Othello world, not {world.name}")
    squares = sorted(world.square_index(t) for t in world.tokens)
    by_square = {world.square_index(t): t for t in world.tokens}
    return {by_square[sq]: i + 1 for i, sq in enumerate(squares)}, len(squares) + 1


def import_li_othello(source: Path, world: World, n_head: int | None = None, data=None) -> Imported:
    where = str(source)
    data = load_torch(source) if data is None else data
    if not detect(source, data):
        raise WorldModelError(f"{where}: not a minGPT state dict (expected tok_emb.weight, pos_emb, blocks.N.…)")
    heads = int(n_head or 8)
    model = build_gpt2(mingpt_to_gpt2(data, where), heads, "gelu", tie=False, pad_id=0, where=where)
    ids, size = li_vocabulary(world, where)
    if model.config.vocab_size != size:
        raise WorldModelError(f"{where}: the model has {model.config.vocab_size} ids, Li et al.'s vocabulary for "
                              f"the {world.name} world has {size} (padding + {size - 1} squares)")
    vocab = Vocabulary.from_ids(ids, size, bos_id=None, pad_id=0, world_name=world.name, names={0: "<pad -100>"})
    return Imported(model, vocab, _provenance("li-othello", source, None, {"n_head": heads}))


def load(source: Path, world: World, options: ImportOptions, data=None) -> Imported:
    """Format ``li-othello`` (the registry's loader)."""
    return import_li_othello(source, world, options.n_head, data=data)
