"""Hugging Face causal LMs with their own tokenizer: a world token may be several pieces.

A world token ``t`` is the piece sequence ``tokenizer(separator + t)`` (default
separator a space, so a sequence reads as text ``" o d N E end"``); the model's
probability of ``t`` after a prefix is the chain rule over its pieces,

    m(t | s) = Π_j p(piece_j | pieces(s), piece_1 .. piece_{j-1}),

restricted, as for every adapter, to the world's tokens (mass on other text is not a
world token). The piece sequences must be prefix-free (no token's pieces begin
another's), or a token's probability would include the other's; an import that
breaks this stops naming the two tokens.

**Text layouts.** A character-level model (nanoGPT's ``stoi``, Karvonen's chess
strings ``;1.e4 e5 2.Nf3 …``) reads the tokens inside a text with separators and move
numbers. With a :class:`~.template.Template` the vocabulary spells each token as its
characters followed by the template's terminator (``"e4 "``), feeds the template's
start (``";1."``) before the first token and the rest of each separator (``"2."``) after
each token, as context that is never scored. The chain rule then runs over the
characters and the terminator, by the same trie.

**Pruning (``floor``).** A world-token probability is at most that of each of its
beginnings, so a trie node whose path probability is at most ``floor`` cannot lead to a
token above ``floor``. With ``floor > 0`` such nodes are not expanded and the tokens
beneath them get probability 0 (their true probability is ``<= floor``); every other
token is exact. Under ε-acceptance with ``ε >= floor`` this changes nothing the metrics
see: those tokens are refused either way and never sampled. It is what makes a
42,018-move chess alphabet affordable (47,000 trie nodes, of which a trained model's
distribution leaves a few dozen above 0.01). The adapter refuses an ε below the
floor and the top-k / top-p rules (they rank tokens below it). ``floor = 0`` (the
default) expands every node.

Acceptance and sampling work on these world-token distributions, exactly as for a
one-piece model. :class:`PieceModel` keeps the KV-cache discipline of
:class:`~worldmodel.models.HFModel`: every prefix runs once, left-padded, and each
later step extends the cache. **Cost.** One world-token distribution after ``R``
cached states takes one forward pass per level of the piece trie below its root
(``depth - 1`` passes, the first level comes with the state), each over ``R × n_d``
rows, ``n_d`` the trie nodes at level ``d`` that continue (in the pass, every node
reuses its parent's cache row, as :meth:`HFModel._score_trie` does for suffixes);
feeding the chosen token costs one more pass of up to ``depth`` positions. A model
whose world tokens are all one piece costs what :class:`HFModel` does per step; a
vocabulary of 4,600 node names split in two pieces under ~50 distinct first pieces
multiplies the rows of each step by about 50; with a floor, only the nodes above it, per
row. Samples are one batch row each (no sharing of identical histories, unlike
:class:`HFModel`).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from ...acceptance import Epsilon
from ...dfa import Token, World
from ...errors import WorldModelError
from ...safety import atomic_json, read_json_object
from ..base import SampleGroup, Scored, SequenceModel, sampling_mask
from .template import Template

PIECES_FILE = "vocab.json"


class PieceVocabulary:
    """World token -> its piece ids in a foreign tokenizer; what is fed before and between tokens.

    ``start`` are the ids before the first token (a BOS id, or a template's start text);
    with a ``template`` (and ``text_ids``, the piece id of each character it writes)
    the rest of each separator is fed after each token. ``floor`` is the pruning
    floor of the model's distributions (see the module docstring).
    """

    def __init__(self, pieces: dict[Token, Sequence[int]], size: int, bos_id: int | None, pad_id: int | None,
                 separator: str = " ", world_name: str = "", template: Template | None = None,
                 text_ids: dict[str, int] | None = None, floor: float = 0.0):
        from ...safety import MAX_VOCAB_IDS

        if isinstance(size, bool) or not isinstance(size, int) or not 0 < size <= MAX_VOCAB_IDS:
            raise WorldModelError(f"vocabulary size {size!r} is outside 1..{MAX_VOCAB_IDS:,}")
        self.tokens = tuple(pieces)
        self.pieces = {t: tuple(int(i) for i in p) for t, p in pieces.items()}
        bad = next((i for p in self.pieces.values() for i in p if not 0 <= i < size), None)
        if bad is not None:
            raise WorldModelError(f"piece id {bad} is outside the model's {size} ids")
        self.size, self.separator, self.world_name = int(size), separator, world_name
        self.template = template
        self.text_ids = {str(c): int(i) for c, i in (text_ids or {}).items()}
        self.floor = float(floor)
        if not 0 <= self.floor < 1:
            raise WorldModelError(f"the pruning floor must be in [0, 1), got {floor}")
        if template is not None:
            self.start = self._text(template.start)
            self.bos_id = None
        else:
            self.bos_id = None if bos_id is None else int(bos_id)
            self.start = () if self.bos_id is None else (self.bos_id,)
        self.pad_id = int(pad_id) if pad_id is not None else (self.bos_id or 0)
        self._context: dict[int, tuple[int, ...]] = {}
        empty = [t for t, p in self.pieces.items() if not p]
        if empty:
            raise WorldModelError(f"the tokenizer gives no piece for world token(s) {empty[:5]}")
        by_seq = {}
        for t, p in self.pieces.items():
            if p in by_seq:
                raise WorldModelError(f"world tokens {by_seq[p]!r} and {t!r} are the same pieces {list(p)}")
            by_seq[p] = t
        for t, p in self.pieces.items():
            for k in range(1, len(p)):
                if p[:k] in by_seq:
                    raise WorldModelError(f"the pieces of {by_seq[p[:k]]!r} begin those of {t!r}: a word-level "
                                          "probability would be ambiguous (choose another separator or template)")

    def _text(self, text: str) -> tuple[int, ...]:
        try:
            return tuple(self.text_ids[c] for c in text)
        except KeyError as exc:
            raise WorldModelError(f"the template writes {exc.args[0]!r}, which the model's vocabulary lacks") from None

    def context(self, i: int) -> tuple[int, ...]:
        """Ids fed after token ``i`` (0-based) and its terminator: the rest of the template's separator."""
        if self.template is None:
            return ()
        got = self._context.get(i)
        if got is None:
            got = self._context[i] = self._text(self.template.context_after(i))
        return got

    @property
    def has_bos(self) -> bool:
        return bool(self.start)

    @property
    def depth(self) -> int:
        return max(len(p) for p in self.pieces.values())

    def encode(self, seq: Sequence[Token], bos: bool = True) -> list[int]:
        """Ids of ``seq``: the start (with ``bos``), then each token's pieces and the context after it."""
        ids = list(self.start) if bos else []
        try:
            for i, t in enumerate(seq):
                ids += self.pieces[t]
                ids += self.context(i)
        except KeyError as exc:
            raise WorldModelError(f"token {exc.args[0]!r} is not in the model's vocabulary") from None
        return ids

    def ends(self, seq: Sequence[Token]) -> list[int]:
        """For ``j = 0..len``: how many ids :meth:`encode` gives for ``seq[:j]`` (start included)."""
        out = [len(self.start)]
        for i, t in enumerate(seq):
            out.append(out[-1] + len(self.pieces[t]) + len(self.context(i)))
        return out

    def save(self, folder: Path) -> None:
        data = {"format": 2, "kind": "pieces", "world": self.world_name, "size": self.size, "bos_id": self.bos_id,
                "pad_id": self.pad_id, "separator": self.separator, "floor": self.floor,
                "pieces": {t: list(p) for t, p in self.pieces.items()}}
        if self.template is not None:
            data["template"] = self.template.to_dict()
            data["text_ids"] = self.text_ids
        atomic_json(Path(folder) / PIECES_FILE, data, "vocabulary", indent=1)

    @staticmethod
    def is_pieces_folder(folder: Path) -> bool:
        """Whether ``folder``'s ``vocab.json`` is a pieces vocabulary (a file that cannot be read is left to
        :meth:`Vocabulary.load <worldmodel.models.vocab.Vocabulary.load>`, which says why)."""
        try:
            return read_json_object(Path(folder) / PIECES_FILE, "json", "checkpoint file").get("kind") == "pieces"
        except WorldModelError:
            return False

    @classmethod
    def load(cls, folder: Path) -> "PieceVocabulary":
        d = read_json_object(Path(folder) / PIECES_FILE, "json", "checkpoint file")
        try:
            template = Template.from_dict(d["template"]) if d.get("template") else None
            return cls({str(t): list(p) for t, p in d["pieces"].items()}, d["size"], d.get("bos_id"), d.get("pad_id"),
                       d.get("separator", " "), d.get("world", ""), template, d.get("text_ids"), d.get("floor", 0.0))
        except (KeyError, TypeError, ValueError, AttributeError, WorldModelError) as exc:
            raise WorldModelError(f"checkpoint {folder}: {PIECES_FILE} is malformed ({exc})") from None

    def check_world(self, world: World, where: str, missing: str = "error") -> None:
        """The vocabulary's tokens must be the world's (``missing="zero"``: a subset of them)."""
        unknown = sorted(set(self.tokens) - set(world.tokens))[:5]
        lacking = sorted(set(world.tokens) - set(self.tokens))
        if unknown or (lacking and missing != "zero"):
            raise WorldModelError(f"checkpoint {where}: vocabulary does not match the {world.name} world "
                                  f"(lacks {len(lacking)} of its tokens, e.g. {lacking[:5]}; unknown e.g. {unknown})"
                                  + ("; give --missing-tokens zero to score it with those at probability 0"
                                     if lacking and not unknown else ""))


class _State:
    """Cached model states, one per row: the cache, attention mask, next position, last log-probs,
    and how many world tokens each row has read (which separator follows its next token)."""

    def __init__(self, cache, mask, pos, logp, ntok):
        self.cache, self.mask, self.pos, self.logp, self.ntok = cache, mask, pos, logp, ntok


class PieceModel(SequenceModel):
    """A causal LM over world tokens made of one or more tokenizer pieces (chain rule)."""

    def __init__(self, model, vocab: PieceVocabulary, name: str = "hf", device="cpu"):
        from ..hf import cache_keyword

        self.model = model.to(device).eval()
        self.vocab = vocab
        self.tokens = vocab.tokens
        self.name = name
        self.device = torch.device(device)
        self.floor = vocab.floor
        self._kw = cache_keyword(self.model)
        cfg = model.config
        #: the model's context in *pieces* (characters for a character-level model), not world tokens
        self.max_positions = int(getattr(cfg, "n_positions", 0) or getattr(cfg, "max_position_embeddings", 1 << 30))
        self._trie()

    @property
    def context_tokens(self) -> int:
        return 0 if self.vocab.has_bos else 1

    # -- construction ------------------------------------------------------------
    @classmethod
    def from_pretrained(cls, folder: str | Path, world: World | None = None, device="cpu", name=None,
                        missing: str = "error"):
        from transformers import AutoModelForCausalLM

        from ..hf import check_model_folder, load_pretrained, quiet_transformers

        quiet_transformers()
        folder = Path(folder)
        vocab = PieceVocabulary.load(folder)
        if world is not None:
            vocab.check_world(world, str(folder), missing)
        check_model_folder(folder)
        model = load_pretrained(AutoModelForCausalLM, folder, local_files_only=True)
        return cls(model, vocab, name=name or folder.name, device=device)

    def _trie(self) -> None:
        """The piece trie: per internal node (a proper beginning of some token's pieces), its internal
        children (last piece ids, paths) and its leaves (token columns, last piece ids)."""
        kids: dict[tuple[int, ...], list[tuple[int, ...]]] = {}
        leaves: dict[tuple[int, ...], list[tuple[int, int]]] = {}
        for col, t in enumerate(self.tokens):
            p = self.vocab.pieces[t]
            for d in range(1, len(p)):
                kids.setdefault(p[:d - 1], [])
                kids.setdefault(p[:d], [])
            leaves.setdefault(p[:-1], []).append((col, p[-1]))
        for node in list(kids):
            if node:
                kids[node[:-1]].append(node)
        # plain lists here; tensors made the first time a node is expanded (a 42,018-move alphabet
        # has 47,000 nodes, of which a pruned distribution touches few)
        self._kid_lists = {n: sorted(set(ks)) for n, ks in kids.items() if ks}
        self._leaf_lists = leaves
        self._kids: dict = {}
        self._leaves: dict = {}

    def _node(self, node):
        """(leaves, kids) of a trie node as tensors: leaves (columns, last pieces) and internal
        children (last pieces, paths); either None."""
        if node not in self._kids:
            dev = self.device
            ks = self._kid_lists.get(node)
            self._kids[node] = (torch.tensor([c[-1] for c in ks], device=dev), ks) if ks else None
            ls = self._leaf_lists.get(node)
            self._leaves[node] = (torch.tensor([c for c, _ in ls], device=dev),
                                  torch.tensor([q for _, q in ls], device=dev)) if ls else None
        return self._leaves[node], self._kids[node]

    def _check_rule(self, acceptance) -> None:
        """A pruned model serves ε-acceptance with ε at least its floor, and nothing else."""
        if self.floor <= 0:
            return
        if not isinstance(acceptance, Epsilon):
            raise WorldModelError(f"the {self.name} model prunes its distributions below {self.floor:g} (it has "
                                  f"{len(self.tokens):,} world tokens): use epsilon acceptance, not {acceptance.spec()}")
        if acceptance.epsilon < self.floor:
            raise WorldModelError(f"the {self.name} model prunes its distributions below {self.floor:g}: evaluate "
                                  f"with epsilon >= {self.floor:g} (or re-import it with a lower --floor)")

    # -- low level ----------------------------------------------------------------
    def _check_len(self, n: int) -> None:
        if n > self.max_positions:
            raise WorldModelError(f"sequence of {n} positions is longer than the model's context ({self.max_positions})")

    def _forward(self, cache, **kw):
        if cache is not None:
            kw[self._kw] = cache
        out = self.model(use_cache=True, **kw)
        return out, out[self._kw]

    @torch.no_grad()
    def _start(self, prefixes) -> _State:
        for p in prefixes:
            if not self.vocab.has_bos and len(p) == 0:
                raise WorldModelError(f"the {self.name} model has no BOS token: it reads the first token as context "
                                      "and cannot predict after an empty prefix")
        ids = [self.vocab.encode(p) for p in prefixes]
        P = max(len(x) for x in ids)
        self._check_len(P)
        batch = torch.full((len(ids), P), self.vocab.pad_id, dtype=torch.long, device=self.device)
        mask = torch.zeros_like(batch)
        for i, x in enumerate(ids):
            batch[i, P - len(x):] = torch.tensor(x, device=self.device)
            mask[i, P - len(x):] = 1
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        out, cache = self._forward(None, input_ids=batch, attention_mask=mask, position_ids=pos)
        ntok = torch.tensor([len(p) for p in prefixes], device=self.device)
        return _State(cache, mask, mask.sum(-1), torch.log_softmax(out.logits[:, -1].float(), -1), ntok)

    def _select(self, st: _State, rows: torch.Tensor, copy_cache: bool) -> _State:
        c = copy.deepcopy(st.cache) if copy_cache else st.cache
        c.batch_select_indices(rows)
        return _State(c, st.mask[rows], st.pos[rows], st.logp[rows], st.ntok[rows])

    @torch.no_grad()
    def _dist(self, st: _State) -> torch.Tensor:
        """World-token probabilities ``[R, V]`` after each state: the chain rule over the piece trie.

        Level by level, each expanded node (a beginning of some tokens' pieces) is held for
        the rows that reached it, with its path log-probability, the model's next-piece
        log-probabilities there and its row in the level's cache. Its leaves are read off
        at once; its internal children are expanded, all of a level in one forward pass
        (each (row, child) reads its parent's cache row and feeds the child's last piece),
        except, with a floor, where the path probability is at most the floor.
        """
        R = st.logp.shape[0]
        dev = self.device
        out = torch.zeros(R, len(self.tokens), device=dev)
        floor_lp = float(np.log(self.floor)) if self.floor > 0 else -float("inf")
        # expanded nodes: path -> (rows, path log-prob, next-piece log-probs, cache row)
        level = {(): (torch.arange(R, device=dev), torch.zeros(R, device=dev), st.logp, torch.arange(R, device=dev))}
        cache, mask, pos = None, st.mask, st.pos
        while level:
            children = []
            for node, (rows, lp, logp, crow) in level.items():
                leaf, kid = self._node(node)
                if leaf is not None:
                    cols, last = leaf
                    out[rows[:, None], cols[None, :]] = (lp[:, None] + logp[:, last]).exp()
                if kid is None:
                    continue
                piece_ids, paths = kid
                clp = lp[:, None] + logp[:, piece_ids]  # [rows, kids]
                keep = clp > floor_lp if self.floor > 0 else torch.ones_like(clp, dtype=torch.bool)
                for j in keep.any(0).nonzero()[:, 0].tolist():
                    r = keep[:, j].nonzero()[:, 0]
                    children.append((paths[j], rows[r], clp[r, j], crow[r]))
            if not children:
                break
            parent = torch.cat([c[3] for c in children])
            feed = torch.cat([torch.full((len(c[1]),), c[0][-1], dtype=torch.long, device=dev) for c in children])
            if cache is None:
                cache = copy.deepcopy(st.cache)
            cache.batch_select_indices(parent)
            mask = torch.cat([mask[parent], torch.ones((len(parent), 1), dtype=mask.dtype, device=dev)], 1)
            p = pos[parent]
            self._check_len(int(p.max()) + 1)
            o, cache = self._forward(cache, input_ids=feed[:, None], attention_mask=mask, position_ids=p[:, None])
            logp_all = torch.log_softmax(o.logits[:, -1].float(), -1)
            pos = p + 1
            level, k = {}, 0
            for path, rows, lp, _ in children:
                n = len(rows)
                level[path] = (rows, lp, logp_all[k:k + n], torch.arange(k, k + n, device=dev))
                k += n
        return out

    @torch.no_grad()
    def _advance(self, st: _State, cols: torch.Tensor) -> _State:
        """Feed world token ``self.tokens[cols[r]]`` to each row: its pieces, then the context after it
        (right-padded within the step)."""
        ntok = st.ntok.tolist()
        pieces = [self.vocab.pieces[self.tokens[int(c)]] + self.vocab.context(n) for c, n in zip(cols, ntok)]
        L = max(len(p) for p in pieces)
        feed = torch.full((len(pieces), L), self.vocab.pad_id, dtype=torch.long, device=self.device)
        fmask = torch.zeros_like(feed)
        for r, p in enumerate(pieces):
            feed[r, :len(p)] = torch.tensor(p, device=self.device)
            fmask[r, :len(p)] = 1
        pos = st.pos[:, None] + (fmask.cumsum(-1) - 1).clamp(min=0)
        self._check_len(int(pos.max()) + 1)
        mask = torch.cat([st.mask, fmask.to(st.mask.dtype)], 1)
        out, cache = self._forward(st.cache, input_ids=feed, attention_mask=mask, position_ids=pos)
        last = fmask.sum(-1) - 1
        logits = out.logits[torch.arange(len(pieces), device=self.device), last]
        return _State(cache, mask, st.pos + fmask.sum(-1), torch.log_softmax(logits.float(), -1), st.ntok + 1)

    # -- SequenceModel ------------------------------------------------------------
    @torch.no_grad()
    def next_token_probs(self, prefixes):
        if not prefixes:
            return np.zeros((0, len(self.tokens)))
        return self._dist(self._start(prefixes)).cpu().numpy()

    def prefix_probs(self, sequences):
        out = []
        for s in sequences:
            first = 0 if self.vocab.has_bos else 1
            rows = self.next_token_probs([tuple(s[:j]) for j in range(first, len(s) + 1)])
            if first:
                rows = np.concatenate([np.full((1, len(self.tokens)), np.nan), rows])
            out.append(rows)
        return out

    @torch.no_grad()
    def score(self, prefixes, suffixes, acceptance):
        self._check_rule(acceptance)
        results = [[Scored(np.zeros(0), np.zeros(0, dtype=bool)) for _ in g] for g in suffixes]
        jobs = [(i, j) for i, g in enumerate(suffixes) for j, s in enumerate(g) if len(s)]
        live_prefixes = sorted({i for i, _ in jobs})
        if not jobs:
            return results
        st = self._start([prefixes[i] for i in live_prefixes])
        where = {i: k for k, i in enumerate(live_prefixes)}
        st = self._select(st, torch.tensor([where[i] for i, _ in jobs], device=self.device), copy_cache=False)
        sufs = [list(suffixes[i][j]) for i, j in jobs]
        idx = self.token_index()
        probs = [[] for _ in jobs]
        acc = [[] for _ in jobs]
        alive = list(range(len(jobs)))
        for d in range(max(len(s) for s in sufs)):
            dist = self._dist(st)
            mask = acceptance.mask(dist)
            cols = torch.tensor([idx[sufs[r][d]] for r in alive], device=self.device)
            ar = torch.arange(len(alive), device=self.device)
            for k, r in enumerate(alive):
                probs[r].append(float(dist[ar[k], cols[k]]))
                acc[r].append(bool(mask[ar[k], cols[k]]))
            keep = [k for k, r in enumerate(alive) if len(sufs[r]) > d + 1]
            if not keep:
                break
            st = self._select(st, torch.tensor(keep, device=self.device), copy_cache=False)
            alive = [alive[k] for k in keep]
            st = self._advance(st, cols[keep])
        for r, (i, j) in enumerate(jobs):
            results[i][j] = Scored(np.array(probs[r]), np.array(acc[r], dtype=bool))
        return results

    def sample(self, prefixes, uniforms, acceptance, stop_tokens=frozenset(), keep_top=True):
        self._check_rule(acceptance)
        return [SampleGroup((t for t, _ in g), g.kept_top)
                for g in self._decode(prefixes, None, uniforms, acceptance, stop_tokens, False, keep_top)]

    def sample_contrast(self, prefixes, check_prefixes, uniforms, acceptance, stop_tokens=frozenset(),
                        halt_on_reject=False, keep_top=True):
        self._check_rule(acceptance)
        return self._decode(prefixes, check_prefixes, uniforms, acceptance, stop_tokens, halt_on_reject, keep_top)

    @torch.no_grad()
    def _decode(self, prefixes, check_prefixes, uniforms, acceptance, stop_tokens, halt_on_reject, keep_top):
        """One row per sample (and a twin row after the check prefix): sample, check, feed, repeat."""
        check = check_prefixes is not None
        us = [np.atleast_2d(np.asarray(u, dtype=np.float64)) for u in uniforms]
        out = [SampleGroup() for _ in prefixes]
        owner = [i for i, u in enumerate(us) for _ in range(u.shape[0])]
        if not owner:
            return out
        U = [u[r] for u in us for r in range(u.shape[0])]
        groups = [prefixes[i] for i in range(len(prefixes))] + ([check_prefixes[i] for i in range(len(prefixes))]
                                                                  if check else [])
        st = self._start(groups)
        n = len(owner)
        rows = [owner[s] for s in range(n)] + ([len(prefixes) + owner[s] for s in range(n)] if check else [])
        st = self._select(st, torch.tensor(rows, device=self.device), copy_cache=False)
        toks: list[list[int]] = [[] for _ in range(n)]
        rejected: list[int | None] = [None] * n
        kept = [False] * n
        halted = set()
        stop = {self.token_index()[t] for t in stop_tokens if t in self.vocab.pieces}
        alive = list(range(n))  # samples with a row in the batch (rows 0..len-1, twins after)
        for t in range(max(len(u) for u in U)):
            dist = self._dist(st)
            m = len(alive)
            pa = dist[:m]
            allowed, used = sampling_mask(pa, acceptance.mask(pa), keep_top)
            w = torch.where(allowed, pa, torch.zeros_like(pa)).double()
            total = w.sum(-1)
            chosen, nxt = [], []
            twin_ok = acceptance.mask(dist[m:]) if check else None
            for k, s in enumerate(alive):
                if t >= len(U[s]) or float(total[k]) <= 0 or (halt_on_reject and owner[s] in halted):
                    continue
                cdf = (w[k].cumsum(-1) / total[k]).cpu().numpy()
                c = int(min(np.searchsorted(cdf, U[s][t], side="right"), len(cdf) - 1))
                toks[s].append(c)
                kept[s] |= bool(used[k])
                if check and not bool(twin_ok[k, c]):
                    rejected[s] = t
                    halted.add(owner[s])
                    continue
                if c in stop:
                    continue
                chosen.append(k)
                nxt.append(c)
            if halt_on_reject:
                keep_k = [k for k in chosen if owner[alive[k]] not in halted]
                nxt = [c for k, c in zip(chosen, nxt) if owner[alive[k]] not in halted]
                chosen = keep_k
            if not chosen or t == max(len(u) for u in U) - 1:
                break
            sel = chosen + ([m + k for k in chosen] if check else [])
            st = self._select(st, torch.tensor(sel, device=self.device), copy_cache=False)
            st = self._advance(st, torch.tensor(nxt + (nxt if check else []), device=self.device))
            alive = [alive[k] for k in chosen]
        for s in range(n):
            out[owner[s]].append((tuple(self.tokens[c] for c in toks[s]), rejected[s]))
            out[owner[s]].kept_top += int(kept[s])
        return out

    @property
    def has_hidden_states(self) -> bool:
        return True

    @torch.no_grad()
    def hidden_states(self, sequences):
        """Last layer at the last id of each prefix (row ``j``: after reading ``seq[:j]`` and the
        context after it; no row 0 without a start)."""
        res = []
        width = int(getattr(self.model.config, "n_embd", 0) or getattr(self.model.config, "hidden_size", 0))
        for s in sequences:
            ids = self.vocab.encode(s)
            ends = self.vocab.ends(s)
            rows = []
            h = None
            if ids:
                self._check_len(len(ids))
                h = self.model(input_ids=torch.tensor([ids], device=self.device),
                               output_hidden_states=True).hidden_states[-1][0].float().cpu().numpy()
            for e in ends:
                rows.append(h[e - 1] if e > 0 else np.full(width, np.nan, dtype=np.float32))
            res.append(np.stack(rows) if rows else np.zeros((0, width), dtype=np.float32))
        return res


def import_hf(source: Path, world: World, tokenizer: Path | None = None, bos: str | None = None,
              separator: str = " ", missing: str = "error", floor: float = 0.0):
    """A local Hugging Face causal LM folder (and its tokenizer) for ``world``."""
    from transformers import AutoTokenizer

    from ..families import load_network
    from ..hf import check_model_folder, load_pretrained, quiet_transformers
    from ..recurrent import recurrent_engine
    from .common import Imported, _provenance

    quiet_transformers()
    if not source.is_dir():
        raise WorldModelError(f"{source}: an hf checkpoint is a model folder (local files only)")
    check_model_folder(source, "Hugging Face model")
    if tokenizer is not None and Path(tokenizer).is_dir():
        check_model_folder_files(Path(tokenizer))
    tok = load_pretrained(AutoTokenizer, tokenizer or source, "Hugging Face tokenizer", local_files_only=True)
    model = load_network(source).eval()     # a recurrent folder (lstm/gru) or any causal LM, one-line errors
    pieces = {t: tok.encode(separator + t, add_special_tokens=False) for t in world.tokens}
    if recurrent_engine(model) is not None:
        return _recurrent_import(source, world, tok, model, pieces, bos, separator, tokenizer, missing)
    if bos is not None:
        bos_id = tok.convert_tokens_to_ids(bos)
        if bos_id is None or bos_id == tok.unk_token_id:
            raise WorldModelError(f"{source}: the BOS token {bos!r} is not in the tokenizer")
    else:
        bos_id = tok.bos_token_id
    from .common import check_missing, with_missing

    unk = tok.unk_token_id
    notes = check_missing([t for t, p in pieces.items() if unk is not None and unk in p], world, str(source), missing)
    pieces = {t: p for t, p in pieces.items() if unk is None or unk not in p}
    vocab = PieceVocabulary(pieces, model.config.vocab_size, bos_id, tok.pad_token_id, separator, world.name,
                            floor=floor)
    multi = sum(len(p) > 1 for p in vocab.pieces.values())
    if multi:
        notes.append(f"{multi} of {len(pieces)} world tokens are several pieces (up to {vocab.depth}); "
                     "probabilities by the chain rule")
    prov = _provenance("hf", source, tokenizer, {"separator": separator, "floor": floor})
    return with_missing(Imported(model, vocab, prov, notes, tokenizer=tok), world, missing)


#: files a Hugging Face tokenizer is saved as (one of them marks a model folder with its own tokenizer)
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "merges.txt", "tokenizer.model",
                   "spiece.model", "sentencepiece.bpe.model")


def check_model_folder_files(folder: Path) -> None:
    """Every file of a tokenizer folder is a regular file (no symlink to a device)."""
    from ...safety import regular_file

    for f in sorted(Path(folder).iterdir()):
        if not f.is_dir():
            regular_file(f, "tokenizer file")


def is_hf(source: Path, data) -> bool:
    """A Hugging Face model folder: ``config.json`` and a tokenizer of its own (no ``vocab.json``: that is ours)."""
    return (data is None and (source / "config.json").exists()
            and any((source / name).exists() for name in TOKENIZER_FILES))


def load_hf(source: Path, world: World, options, data=None):
    """Format ``hf`` (the registry's loader)."""
    return import_hf(source, world, options.tokenizer, options.bos, missing=options.missing,
                     floor=options.floor or 0.0)


def _recurrent_import(source, world, tok, model, pieces, bos, separator, tokenizer, missing="error"):
    """A recurrent network (LSTM, GRU, Mamba) from an hf folder: world tokens must be single pieces.

    It then gets a plain :class:`~..vocab.Vocabulary` and decodes on its recurrent
    state (:mod:`..recurrent`), like a checkpoint trained here.
    """
    from ..vocab import Vocabulary
    from .common import Imported, _provenance, check_missing, with_missing

    unk = tok.unk_token_id
    notes = check_missing([t for t, p in pieces.items() if unk is not None and unk in p], world, str(source), missing)
    pieces = {t: p for t, p in pieces.items() if unk is None or unk not in p}
    multi = sorted(t for t, p in pieces.items() if len(p) != 1)
    if multi:
        raise WorldModelError(f"{source}: {len(multi)} world token(s) are several tokenizer pieces (e.g. "
                              f"{multi[:4]}); a recurrent model is imported only when every world token is one piece")
    ids = {t: p[0] for t, p in pieces.items()}
    if len(set(ids.values())) != len(ids):
        raise WorldModelError(f"{source}: two world tokens map to one tokenizer id")
    bos_id = tok.convert_tokens_to_ids(bos) if bos is not None else tok.bos_token_id
    if bos is not None and (bos_id is None or bos_id == tok.unk_token_id):
        raise WorldModelError(f"{source}: the BOS token {bos!r} is not in the tokenizer")
    if bos_id in ids.values():
        bos_id = None  # a tokenizer whose BOS is also a world token: read the first token as context
    pad = tok.pad_token_id if tok.pad_token_id is not None and tok.pad_token_id not in ids.values() else None
    names = {i: n for i, n in ((bos_id, "<bos>"), (pad, "<pad>")) if i is not None}
    vocab = Vocabulary.from_ids(ids, model.config.vocab_size, bos_id=bos_id, pad_id=pad, world_name=world.name,
                                names=names)
    prov = _provenance("hf", source, tokenizer, {"separator": separator, "recurrent": True})
    return with_missing(Imported(model, vocab, prov, notes, tokenizer=tok), world, missing)
