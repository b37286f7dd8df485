"""The authors' own metric code (keyonvafa/world-model-evaluation), run on the engine's prefix pairs.

Used by ``scripts/bench_metrics.py --authors-code DIR``. ``DIR`` is a checkout the
user makes outside this repository (``git clone
https://github.com/keyonvafa/world-model-evaluation DIR``); nothing of it is copied
here: its files are imported (or compiled) from ``DIR`` at run time.

What runs, from ``DIR``, unchanged:

* **navigation** — ``utils.py`` imported as a module:
  ``sample_model_suffixes_from_prefix`` (one ``generate`` with
  ``num_return_sequences=M``, ``do_sample=True``, ``epsilon_cutoff=ε``,
  ``max_length=128``, ``eos_token_id`` of ``end``),
  ``get_conditional_probability_of_suffixes_after_prefix`` (the suffixes after a
  prefix as one right-padded forward pass), ``is_suffix_valid``,
  ``get_all_suffixes_from_state``, ``get_true_mn_boundary``; and the functions
  ``get_distinction_precision`` and ``get_distinction_recall`` of
  ``distinction_test.py``, compiled from that file's source (only those function
  definitions: the script's top level, which parses arguments and loads their
  checkpoints and data files, is not run). Compression is the scoring tail of
  ``compression_test.py``'s ``perform_single_compression_test`` after it has drawn
  its pair: sample after prefix 1, score after prefix 2, precision ``all(p > ε)``
  over every sampled token (three lines, :func:`nav_compression_trial`).
* **Othello** — ``othello_world/test_world_model.py``'s functions
  ``sample_model_suffixes_from_prefix`` (M separate calls of minGPT's ``sample``,
  each ``60 - len(prefix)`` steps of a full forward pass without a cache),
  ``get_conditional_probability_of_suffixes``, ``get_mn_boundary_from_samples``,
  ``is_suffix_valid``, ``get_distinction_precision``, ``get_distinction_recall``
  (compiled from the file, as above), with ``othello_world/mingpt/utils.py``'s
  ``sample``, ``othello_world/data/othello.py``'s ``OthelloBoardState`` and
  ``othello_world/utils.py``'s ``sample_game_from_board``. Compression is the tail
  of that file's ``perform_single_compression_test``, as for navigation. 8×8 only
  (their code plays 60-move games).

Their randomness is their own: ``generate``/``torch.multinomial`` on torch's
global generator, ``np.random`` and ``random`` for their true-boundary samples,
all seeded once per run from the run seed (so a run of theirs repeats itself, and
its values differ from the engine's by sampling noise only). Their globals are
set as their scripts set them: ``num_suffix_samples = M``, ``epsilon = ε``,
``max_suffix_length = k`` (the engine's settings); navigation's
``valid_turns``/``node_and_direction_to_neighbor`` come from the world's street
map, with the ``(node, 'end') -> 'end'`` entries their scripts add.

**Stubs.** Modules their files import but this path never uses are replaced by
empty modules when they are not installed (``sys.modules``; nothing is
installed): ``pytorch_lightning`` (``model.py`` subclasses its
``LightningModule`` for their training wrapper ``GPT2Model``, which is not
instantiated here; the stub's ``LightningModule`` is ``torch.nn.Module``),
``seaborn`` and ``pgn`` (``data/othello.py``'s plotting and PGN reader).

**The model: our checkpoint's weights behind their model's interface.** The same
``GPT2LMHeadModel`` object the engine runs:

* navigation: their code reads ``model.model`` (``__call__`` and ``generate``),
  ``model.tokenizer`` and ``model.device``. The tokenizer is their own
  ``SimpleTokenizer`` class with our checkpoint's ids. Our checkpoints read a BOS
  token first (their paper-nav checkpoints do not): :class:`BosModel` prepends it
  to every input their code passes and drops its output position, so their code
  sees a model over their no-BOS ids; ``generate``'s ``max_length`` counts it
  (their 128 + 1, capped at the model's context). For a checkpoint without BOS
  (``worldmodel import --format paper-nav``) the model is passed through as is.
* Othello: their code calls minGPT's interface, ``model(x) -> (logits, loss)``
  and ``model.get_block_size()``; :class:`MinGPTInterface` offers it over the
  Hugging Face forward of the same weights (BOS handled the same way), and
  ``dataset.stoi``/``itos`` map their square indices (``row * 8 + col``; -100 for
  padding) to our ids.
"""

from __future__ import annotations

import ast
import importlib.util
import random
import sys
import types
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch

from worldmodel.errors import WorldModelError

STUBBED: list[str] = []


def _stub_missing() -> None:
    """Empty modules for imports their files make that this path never uses (only where not installed)."""
    for name in ("pytorch_lightning", "seaborn", "pgn"):
        if name in sys.modules or importlib.util.find_spec(name) is not None:
            continue
        mod = types.ModuleType(name)
        mod.__doc__ = "stub made by scripts/authors_code.py: imported by the authors' code, unused on this path"
        if name == "pytorch_lightning":
            mod.LightningModule = torch.nn.Module
        sys.modules[name] = mod
        STUBBED.append(name)


def _load_module(name: str, path: Path, search: Path):
    """Import ``path`` as module ``name`` with ``search`` first on ``sys.path`` (for its own imports)."""
    sys.path.insert(0, str(search))
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(search))
    return mod


def _functions(path: Path, names: list[str], namespace: dict) -> dict:
    """Compile only the named top-level function definitions of a script into ``namespace``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in names]
    missing = set(names) - {d.name for d in defs}
    if missing:
        raise WorldModelError(f"{path}: no function {sorted(missing)[0]!r} (is this keyonvafa/world-model-evaluation?)")
    exec(compile(ast.Module(body=defs, type_ignores=[]), str(path), "exec"), namespace)  # the user's checkout
    return namespace


def check_checkout(root: Path) -> Path:
    root = Path(root)
    need = ["utils.py", "model.py", "compression_test.py", "distinction_test.py", "othello_world/test_world_model.py"]
    for rel in need:
        if not (root / rel).is_file():
            raise WorldModelError(f"--authors-code {root}: no {rel}; expected a checkout of "
                                  "https://github.com/keyonvafa/world-model-evaluation")
    return root


def seed_their_rngs(seed: int) -> None:
    """Their code draws from the global generators; seed them once per run."""
    torch.manual_seed(seed)
    np.random.seed(seed % 2**32)
    random.seed(seed)


# ---------------------------------------------------------------------------
# our checkpoint behind their model's interface
# ---------------------------------------------------------------------------


class BosModel:
    """``model.model`` for their navigation code: our GPT-2, fed our BOS before their ids.

    ``__call__(input_ids, attention_mask)`` returns an object with ``.logits`` for
    their positions only; ``generate`` passes every keyword of theirs through, with
    ``max_length`` counting the BOS (capped at the model's context), and returns
    their ids without it.
    """

    def __init__(self, hf_model, bos_id: int | None, n_positions: int):
        self.hf, self.bos, self.n_positions = hf_model, bos_id, int(n_positions)

    def _with_bos(self, ids, mask=None):
        col = torch.full((ids.shape[0], 1), self.bos, dtype=ids.dtype, device=ids.device)
        ids = torch.cat([col, ids], dim=1)
        if mask is not None:
            mask = torch.cat([torch.ones_like(col, dtype=mask.dtype), mask], dim=1)
        return ids, mask

    def __call__(self, input_ids, attention_mask=None):
        if self.bos is None:
            return self.hf(input_ids, attention_mask=attention_mask)
        ids, mask = self._with_bos(input_ids, attention_mask)
        return SimpleNamespace(logits=self.hf(ids, attention_mask=mask).logits[:, 1:])

    def generate(self, input_ids, max_length=None, **kw):
        if self.bos is None:
            return self.hf.generate(input_ids, max_length=max_length, **kw)
        ids, _ = self._with_bos(input_ids)
        if max_length is not None:
            max_length = min(int(max_length) + 1, self.n_positions)
        return self.hf.generate(ids, max_length=max_length, **kw)[:, 1:]


class MinGPTInterface:
    """minGPT's calling convention (``model(x) -> (logits, None)``, ``get_block_size()``) over our GPT-2."""

    def __init__(self, hf_model, bos_id: int | None, n_positions: int):
        self.inner = BosModel(hf_model, bos_id, n_positions)
        self.block_size = int(n_positions) - (0 if bos_id is None else 1)

    def get_block_size(self):
        return self.block_size

    def eval(self):
        self.inner.hf.eval()
        return self

    def __call__(self, idx, targets=None):
        return self.inner(idx).logits, None


def _names(vocab) -> dict[int, str]:
    """Model id -> a word without spaces (their decode joins words with spaces)."""
    return {i: str(w).replace(" ", "_") for i, w in enumerate(vocab.itos)}


# ---------------------------------------------------------------------------
# navigation
# ---------------------------------------------------------------------------


class NavigationCode:
    """Their navigation functions, bound to our checkpoint and our world's street map."""

    def __init__(self, root: Path, model, world, settings):
        _stub_missing()
        root = check_checkout(root)
        self.utils = _load_module("authors_nav_utils", root / "utils.py", root)
        their_model = sys.modules["model"]  # imported by their utils.py from the checkout
        vocab = model.vocab
        tok = their_model.SimpleTokenizer.__new__(their_model.SimpleTokenizer)
        tok.word_to_id = {**{t: int(i) for t, i in vocab.stoi.items()}, "<pad>": int(vocab.pad_id)}
        tok.id_to_word = _names(vocab)
        tok.id_to_word[int(vocab.pad_id)] = "<pad>"
        tok.pad_token_id = int(vocab.pad_id)
        if vocab.bos_id is not None:
            tok.word_to_id[tok.id_to_word[vocab.bos_id]] = int(vocab.bos_id)
        self.model = SimpleNamespace(model=BosModel(model.model, vocab.bos_id, model.max_positions), tokenizer=tok,
                                     device=model.device)
        self.world, self.s = world, settings
        self.root = root
        self.reset()

    def reset(self) -> None:
        """Fresh globals, as one run of their scripts has (their code appends to ``valid_turns`` lists)."""
        m = self.world.map
        valid_turns = {n: list(m.neighbours(n)) for n in m.nodes}
        ndn = {(u, d): v for (u, d), v in m.edges.items()}
        for node in [n for n in m.nodes if valid_turns[n]]:  # as their scripts' top level
            ndn[(node, "end")] = "end"
        ndn[("end", "end")] = "end"
        self.valid_turns, self.ndn = valid_turns, ndn
        ns = {"utils": self.utils, "model": self.model, "num_suffix_samples": self.s.M,
              "epsilon": float(self.s.acceptance.epsilon), "max_suffix_length": self.s.k,
              "valid_turns": valid_turns, "node_and_direction_to_neighbor": ndn}
        self.ns = _functions(self.root / "distinction_test.py", ["get_distinction_precision", "get_distinction_recall"], ns)

    def compression_trial(self, pair) -> float:
        """``perform_single_compression_test`` after its pair is drawn (compression_test.py)."""
        prefix1, prefix2 = list(pair.prefix1), list(pair.prefix2)
        M, eps = self.s.M, float(self.s.acceptance.epsilon)
        suffixes1 = self.utils.sample_model_suffixes_from_prefix(prefix1, self.model, M, eps)
        suffix1_probs_prefix2 = self.utils.get_conditional_probability_of_suffixes_after_prefix(prefix2, suffixes1,
                                                                                              self.model)
        return float(all([all(suffix1_probs_prefix2[i] > eps) for i in range(M)]))

    def distinction_trial(self, pair) -> tuple[float, float]:
        """``get_distinction_precision`` and ``get_distinction_recall`` of distinction_test.py."""
        (c1, d1), (c2, d2) = pair.state1, pair.state2
        p1, p2 = list(pair.prefix1), list(pair.prefix2)
        return (float(self.ns["get_distinction_precision"](p1, p2, c1, d1, c2, d2)),
                float(self.ns["get_distinction_recall"](p1, p2, c1, d1, c2, d2)))


# ---------------------------------------------------------------------------
# Othello
# ---------------------------------------------------------------------------


class OthelloCode:
    """Their Othello functions (othello_world/test_world_model.py), bound to our checkpoint."""

    FUNCTIONS = ["is_suffix_valid", "sample_model_suffixes_from_prefix", "get_conditional_probability_of_suffixes",
                 "get_mn_boundary_from_samples", "get_distinction_precision", "get_distinction_recall"]

    def __init__(self, root: Path, model, world, settings):
        _stub_missing()
        root = check_checkout(root)
        if getattr(world, "size", 8) != 8 or len(world.tokens) != 60:
            raise WorldModelError(f"--authors-code: their Othello code plays 8x8 games (60 moves), not {world.name}")
        ow = root / "othello_world"
        sample = _load_module("authors_mingpt_utils", ow / "mingpt" / "utils.py", ow).sample
        board = sys.modules["data.othello"].OthelloBoardState
        outils = _load_module("authors_othello_utils", ow / "utils.py", ow)
        vocab = model.vocab
        self.square = {t: int(world.square_index(t)) for t in world.tokens}
        itos = {i: -1000 - i for i in range(vocab.size)}  # ids that are no square: distinct non-moves
        itos.update({int(vocab.stoi[t]): sq for t, sq in self.square.items()})
        itos[int(vocab.pad_id)] = -100
        stoi = {v: k for k, v in itos.items()}
        self.dataset = SimpleNamespace(stoi=stoi, itos=itos, block_size=model.max_positions - 1 - int(vocab.has_bos))
        self.model = MinGPTInterface(model.model, vocab.bos_id, model.max_positions)
        self.s = settings
        self.ns = _functions(ow / "test_world_model.py", self.FUNCTIONS, {
            "dataset": self.dataset, "device": model.device, "sample": sample, "OthelloBoardState": board,
            "utils": outils, "np": np, "torch": torch, "model": self.model, "num_suffix_samples": settings.M,
            "epsilon": float(settings.acceptance.epsilon)})

    def reset(self) -> None:
        pass

    def _moves(self, prefix) -> list[int]:
        return [self.square[t] for t in prefix]

    def compression_trial(self, pair) -> float:
        """``perform_single_compression_test`` after its pair is drawn."""
        prefix1, prefix2 = self._moves(pair.prefix1), self._moves(pair.prefix2)
        M, eps, ns = self.s.M, float(self.s.acceptance.epsilon), self.ns
        suffixes1 = ns["sample_model_suffixes_from_prefix"](prefix1, self.model, M, eps, ns["device"])
        suffix1_probs_prefix2 = ns["get_conditional_probability_of_suffixes"](prefix2, suffixes1, self.model)
        return float(all([all(suffix1_probs_prefix2[i] > eps) for i in range(M)]))

    def distinction_trial(self, pair) -> tuple[float, float]:
        p1, p2 = self._moves(pair.prefix1), self._moves(pair.prefix2)
        return float(self.ns["get_distinction_precision"](p1, p2)), float(self.ns["get_distinction_recall"](p1, p2))


def authors_code(root: Path, world, model, settings):
    """Their code for this world (navigation or Othello), or a one-line error."""
    from worldmodel.worlds.navigation.world import NavigationWorld
    from worldmodel.worlds.othello.world import OthelloWorld

    if not hasattr(settings.acceptance, "epsilon"):
        raise WorldModelError("--authors-code: their code uses an epsilon rule, not " + str(settings.acceptance))
    if isinstance(world, NavigationWorld):
        return NavigationCode(root, model, world, settings)
    if isinstance(world, OthelloWorld):
        return OthelloCode(root, model, world, settings)
    raise WorldModelError(f"--authors-code: their code covers navigation and Othello, not {world.name}")
