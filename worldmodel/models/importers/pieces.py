"""Hugging Face causal LMs with their own tokenizer: a world token may be several pieces.

A world token ``t`` is the piece sequence ``tokenizer(separator + t)`` (default
separator a space, so a sequence reads as text ``" o d N E end"``); the model's
probability of ``t`` after a prefix is the chain rule over its pieces,

    m(t | s) = Π_j p(piece_j | pieces(s), piece_1 .. piece_{j-1}),

restricted, as for every adapter, to the world's tokens (mass on other text is not a
world token). The piece sequences must be prefix-free (no token's pieces begin
another's), or a token's probability would include the other's; an import that
breaks this stops naming the two tokens.

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
multiplies the rows of each step by about 50. Samples are one batch row each (no
sharing of identical histories, unlike :class:`HFModel`).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from ...dfa import Token, World
from ...errors import WorldModelError
from ..base import SampleGroup, Scored, SequenceModel, sampling_mask

PIECES_FILE = "vocab.json"


class PieceVocabulary:
    """World token -> its piece ids in a foreign tokenizer; optional BOS id."""

    def __init__(self, pieces: dict[Token, Sequence[int]], size: int, bos_id: int | None, pad_id: int | None,
                 separator: str = " ", world_name: str = ""):
        self.tokens = tuple(pieces)
        self.pieces = {t: tuple(int(i) for i in p) for t, p in pieces.items()}
        self.size, self.separator, self.world_name = int(size), separator, world_name
        self.bos_id = None if bos_id is None else int(bos_id)
        self.pad_id = int(pad_id) if pad_id is not None else (self.bos_id or 0)
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
                                          "probability would be ambiguous (choose another separator)")

    @property
    def has_bos(self) -> bool:
        return self.bos_id is not None

    @property
    def depth(self) -> int:
        return max(len(p) for p in self.pieces.values())

    def encode(self, seq: Sequence[Token], bos: bool = True) -> list[int]:
        try:
            ids = [i for t in seq for i in self.pieces[t]]
        except KeyError as exc:
            raise WorldModelError(f"token {exc.args[0]!r} is not in the model's vocabulary") from None
        return [self.bos_id] + ids if bos and self.bos_id is not None else ids

    def save(self, folder: Path) -> None:
        data = {"format": 2, "kind": "pieces", "world": self.world_name, "size": self.size, "bos_id": self.bos_id,
                "pad_id": self.pad_id, "separator": self.separator, "pieces": {t: list(p) for t, p in self.pieces.items()}}
        (Path(folder) / PIECES_FILE).write_text(json.dumps(data, indent=1))

    @staticmethod
    def is_pieces_folder(folder: Path) -> bool:
        try:
            return json.loads((Path(folder) / PIECES_FILE).read_text()).get("kind") == "pieces"
        except (OSError, json.JSONDecodeError, AttributeError):
            return False

    @classmethod
    def load(cls, folder: Path) -> "PieceVocabulary":
        try:
            d = json.loads((Path(folder) / PIECES_FILE).read_text())
            return cls({str(t): list(p) for t, p in d["pieces"].items()}, d["size"], d.get("bos_id"), d.get("pad_id"),
                       d.get("separator", " "), d.get("world", ""))
        except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise WorldModelError(f"checkpoint {folder}: {PIECES_FILE} is malformed ({exc})") from None

    def check_world(self, world: World, where: str) -> None:
        if set(self.tokens) != set(world.tokens):
            missing = sorted(set(world.tokens) - set(self.tokens))[:5]
            raise WorldModelError(f"checkpoint {where}: vocabulary does not match the {world.name} world "
                                  f"(missing e.g. {missing})")


class _State:
    """Cached model states, one per row: the cache, attention mask, next position, last log-probs."""

    def __init__(self, cache, mask, pos, logp):
        self.cache, self.mask, self.pos, self.logp = cache, mask, pos, logp


class PieceModel(SequenceModel):
    """A causal LM over world tokens made of one or more tokenizer pieces (chain rule)."""

    def __init__(self, model, vocab: PieceVocabulary, name: str = "hf", device="cpu"):
        from ..hf import cache_keyword

        self.model = model.to(device).eval()
        self.vocab = vocab
        self.tokens = vocab.tokens
        self.name = name
        self.device = torch.device(device)
        self._kw = cache_keyword(self.model)
        cfg = model.config
        self.max_positions = int(getattr(cfg, "n_positions", 0) or getattr(cfg, "max_position_embeddings", 1 << 30))
        self._trie()

    @property
    def context_tokens(self) -> int:
        return 0 if self.vocab.has_bos else 1

    # -- construction ------------------------------------------------------------
    @classmethod
    def from_pretrained(cls, folder: str | Path, world: World | None = None, device="cpu", name=None):
        from transformers import AutoModelForCausalLM

        from ..hf import quiet_transformers

        quiet_transformers()
        folder = Path(folder)
        vocab = PieceVocabulary.load(folder)
        if world is not None:
            vocab.check_world(world, str(folder))
        try:
            model = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True)
        except (OSError, ValueError, RuntimeError) as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise WorldModelError(f"checkpoint {folder} is incomplete or corrupt: {first}") from None
        return cls(model, vocab, name=name or folder.name, device=device)

    def _trie(self) -> None:
        """Levels of the piece trie: per level d >= 1, the internal nodes (paths of length d continued)."""
        paths = sorted({p[:d] for p in self.vocab.pieces.values() for d in range(1, len(p))})
        self._levels: list[list[tuple[int, ...]]] = []
        for d in range(1, self.vocab.depth):
            self._levels.append([p for p in paths if len(p) == d])

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
        return _State(cache, mask, mask.sum(-1), torch.log_softmax(out.logits[:, -1].float(), -1))

    def _select(self, st: _State, rows: torch.Tensor, copy_cache: bool) -> _State:
        c = copy.deepcopy(st.cache) if copy_cache else st.cache
        c.batch_select_indices(rows)
        return _State(c, st.mask[rows], st.pos[rows], st.logp[rows])

    @torch.no_grad()
    def _dist(self, st: _State) -> torch.Tensor:
        """World-token probabilities ``[R, V]`` after each state (chain rule over the piece trie)."""
        R = st.logp.shape[0]
        # log-prob of every trie path, per row: level 0 from the state itself
        path_lp = {(): torch.zeros(R, device=self.device)}
        node_logp = {(): st.logp}
        if self._levels:
            cache = copy.deepcopy(st.cache)
            mask, pos, parent_rows = st.mask, st.pos, {(): torch.arange(R, device=self.device)}
            for nodes in self._levels:
                for n in nodes:
                    path_lp[n] = path_lp[n[:-1]] + node_logp[n[:-1]][:, n[-1]]
                # one pass: every (row, node) reads its parent's cache row and feeds the node's last piece
                rows = torch.cat([parent_rows[n[:-1]] for n in nodes])
                feed = torch.tensor([n[-1] for n in nodes], device=self.device).repeat_interleave(R)
                cache.batch_select_indices(rows)
                mask = torch.cat([mask[rows], torch.ones((len(rows), 1), dtype=mask.dtype, device=self.device)], 1)
                p = pos[rows]
                self._check_len(int(p.max()) + 1)
                out, cache = self._forward(cache, input_ids=feed[:, None], attention_mask=mask, position_ids=p[:, None])
                lp = torch.log_softmax(out.logits[:, -1].float(), -1)
                pos = p + 1
                parent_rows = {}
                for k, n in enumerate(nodes):
                    parent_rows[n] = torch.arange(k * R, (k + 1) * R, device=self.device)
                    node_logp[n] = lp[k * R:(k + 1) * R]
        cols = []
        for t in self.tokens:
            p = self.vocab.pieces[t]
            cols.append(path_lp[p[:-1]] + node_logp[p[:-1]][:, p[-1]])
        return torch.stack(cols, -1).exp()

    @torch.no_grad()
    def _advance(self, st: _State, cols: torch.Tensor) -> _State:
        """Feed world token ``self.tokens[cols[r]]`` to each row (its pieces, right-padded within the step)."""
        pieces = [self.vocab.pieces[self.tokens[int(c)]] for c in cols]
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
        return _State(cache, mask, st.pos + fmask.sum(-1), torch.log_softmax(logits.float(), -1))

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
        return [SampleGroup((t for t, _ in g), g.kept_top)
                for g in self._decode(prefixes, None, uniforms, acceptance, stop_tokens, False, keep_top)]

    def sample_contrast(self, prefixes, check_prefixes, uniforms, acceptance, stop_tokens=frozenset(),
                        halt_on_reject=False, keep_top=True):
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
        """Last layer after the last piece of each token (row ``j``: after reading ``seq[:j]``)."""
        res = []
        for s in sequences:
            ids = self.vocab.encode(s)
            width = int(getattr(self.model.config, "n_embd", 0) or getattr(self.model.config, "hidden_size", 0))
            rows = [np.full(width, np.nan, dtype=np.float32)] if not self.vocab.has_bos else []
            if ids:
                self._check_len(len(ids))
                h = self.model(input_ids=torch.tensor([ids], device=self.device),
                               output_hidden_states=True).hidden_states[-1][0].float().cpu().numpy()
                end = 1 if self.vocab.has_bos else 0
                if self.vocab.has_bos:
                    rows.append(h[0])
                for t in s:
                    end += len(self.vocab.pieces[t])
                    rows.append(h[end - 1])
            res.append(np.stack(rows) if rows else np.zeros((0, width), dtype=np.float32))
        return res


def import_hf(source: Path, world: World, tokenizer: Path | None = None, bos: str | None = None,
              separator: str = " "):
    """A local Hugging Face causal LM folder (and its tokenizer) for ``world``."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ..hf import quiet_transformers
    from .common import Imported, _provenance

    quiet_transformers()
    if not source.is_dir():
        raise WorldModelError(f"{source}: an hf checkpoint is a model folder (local files only)")
    try:
        tok = AutoTokenizer.from_pretrained(tokenizer or source, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(source, local_files_only=True).eval()
    except (OSError, ValueError, RuntimeError, KeyError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise WorldModelError(f"{source}: not a loadable Hugging Face model and tokenizer ({first})") from None
    pieces = {t: tok.encode(separator + t, add_special_tokens=False) for t in world.tokens}
    if bos is not None:
        bos_id = tok.convert_tokens_to_ids(bos)
        if bos_id is None or bos_id == tok.unk_token_id:
            raise WorldModelError(f"{source}: the BOS token {bos!r} is not in the tokenizer")
    else:
        bos_id = tok.bos_token_id
    vocab = PieceVocabulary(pieces, model.config.vocab_size, bos_id, tok.pad_token_id, separator, world.name)
    multi = sum(len(p) > 1 for p in vocab.pieces.values())
    notes = [f"{multi} of {len(pieces)} world tokens are several pieces (up to {vocab.depth}); "
             "probabilities by the chain rule"] if multi else []
    imp = Imported(model, vocab, _provenance("hf", source, tokenizer, {"separator": separator}), notes, tokenizer=tok)
    return imp


def is_hf(source: Path, data) -> bool:
    """A folder with a Hugging Face ``config.json`` (and no ``vocab.json``: that is ours)."""
    return data is None and (source / "config.json").exists()


def load_hf(source: Path, world: World, options, data=None):
    """Format ``hf`` (the registry's loader)."""
    return import_hf(source, world, options.tokenizer, options.bos)
