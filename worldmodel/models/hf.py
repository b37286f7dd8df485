"""Any Hugging Face causal LM over a :class:`~worldmodel.models.vocab.Vocabulary`.

:class:`HFModel` runs a prefix once; its key/value cache is reused for every suffix
scored or sampled after it, in batches, with prefixes left-padded and positions set
so that padding never changes the numbers. While sampling after one prefix and
checking after another, both run in lock step in one batch, with one row per
distinct sampled history (a trie); a sample stops at its first refused token.
For GPT-2-shaped models these run on the lean forward of :mod:`.lean` (each
prefix's keys and values shared by its rows, a preallocated buffer for the rest);
for recurrent ones (LSTM, GRU, Mamba) on one recurrent state per row
(:mod:`.recurrent`: the state is the cache); any other model through transformers
and its own cache.
:meth:`HFModel.untrained` builds a randomly initialised network of a checkpoint's
(or a task's) architecture.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from ..dfa import World
from ..errors import WorldModelError
from .base import Prefix, SampleGroup, Scored, SequenceModel, sampling_mask
from .families import build_network, gpt2_config, load_network, quiet_transformers  # noqa: F401 (re-exported)
from .loading import LOAD_ERRORS, check_model_folder, load_pretrained  # noqa: F401 (re-exported)
from .lean import HFState, LeanGPT2, LeanState
from .recurrent import RecurrentState, recurrent_engine
from .vocab import Vocabulary


def cache_keyword(model) -> str:
    """The keyword under which ``model.forward`` takes (and its output returns) the key/value cache.

    transformers 5.0–5.23 call it ``past_key_values``; 5.24 renamed it ``cache``
    (accepting the old name, with a deprecation warning, until 5.40). Read from the
    forward signature once, so one code path serves the whole declared range.
    """
    import inspect

    params = inspect.signature(model.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


class HFModel(SequenceModel):
    """A Hugging Face causal LM over a :class:`Vocabulary`.

    Probabilities are the softmax over the whole vocabulary, restricted to the
    domain-token columns (mass on special tokens is simply not a domain token).
    """

    def __init__(self, model, vocab: Vocabulary, name: str = "hf", device: str | torch.device = "cpu",
                 batch_rows: int = 512, lean: bool = True):
        self.model = model.to(device).eval()
        #: the lean GPT-2 forward (:mod:`.lean`) the engine decodes with, or None: through transformers
        self.lean = LeanGPT2.wrap(self.model) if lean else None
        #: the recurrent engine (:mod:`.recurrent`) of an LSTM, GRU or Mamba network, or None
        self.recurrent = recurrent_engine(self.model) if lean else None
        self.vocab = vocab
        self.tokens = vocab.tokens
        self.name = name
        self.device = torch.device(device)
        self.batch_rows = int(batch_rows)
        #: suffixes up to this long are scored over their trie (one pass per depth);
        #: longer ones as one padded batch after the cached prefix
        self.trie_max_len = 16
        #: prefixes (trials) run together in one scoring or decoding wave, at most; raise it on a GPU
        self.wave_prefixes = 64
        #: bytes a decoding wave's key/value cache may take (the lean forward's buffer and the
        #: space it gathers live rows through, both kept for the next wave): fewer prefixes run
        #: together when their rows would need more (a quarter of the GPU's memory; 1 GiB on a CPU)
        self.wave_bytes = (torch.cuda.get_device_properties(self.device).total_memory // 4
                           if self.device.type == "cuda" else 1 << 30)
        self._cache_kw = cache_keyword(self.model)
        #: model id of each domain column, and column of each model id (-1: not a world token)
        self._col_ids = torch.as_tensor(vocab.token_ids, dtype=torch.long, device=self.device)
        self._id_col = torch.full((max(vocab.size, 1),), -1, dtype=torch.long, device=self.device)
        self._id_col[self._col_ids] = torch.arange(len(vocab.tokens), device=self.device)
        self.max_positions = int(getattr(model.config, "n_positions", 0) or getattr(model.config, "max_position_embeddings", 1 << 30))

    # -- construction ----------------------------------------------------------
    @classmethod
    def from_pretrained(cls, folder: str | Path, world: World | None = None, device="cpu", name=None,
                        missing: str = "error") -> "HFModel":
        quiet_transformers()
        folder = Path(folder)
        if not folder.is_dir():
            raise WorldModelError(f"checkpoint {folder} does not exist or is not a folder")
        vocab = Vocabulary.load(folder)
        if world is not None:
            vocab.check_world(world, str(folder), missing)
        config = check_model_folder(folder)
        declared = config.get("vocab_size")
        if declared is not None and declared != len(vocab):
            raise WorldModelError(
                f"checkpoint {folder}: config.json declares {declared} token ids but vocab.json has {len(vocab)}")
        model = load_network(folder)
        if model.config.vocab_size != len(vocab):
            raise WorldModelError(
                f"checkpoint {folder}: model has {model.config.vocab_size} token ids but vocab.json has {len(vocab)}"
            )
        return cls(model, vocab, name=name or folder.name, device=device)

    @classmethod
    def untrained(cls, vocab: Vocabulary, model_cfg: dict, seed: int = 0, device="cpu") -> "HFModel":
        """A randomly initialised network of the given ``[model]`` (its ``family``; the paper's baseline)."""
        quiet_transformers()
        torch.manual_seed(seed)
        return cls(build_network(vocab, model_cfg), vocab, name="untrained", device=device)

    def save_pretrained(self, folder: str | Path) -> None:
        quiet_transformers()
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(folder)
        self.vocab.save(folder)

    # -- low level -------------------------------------------------------------
    def _forward(self, cache=None, **kwargs):
        """One forward pass with the key/value cache; returns (output, cache).

        The cache travels under the keyword this transformers release uses
        (:func:`cache_keyword`), so the same code runs on every release declared.
        """
        if cache is not None:
            kwargs[self._cache_kw] = cache
        out = self.model(use_cache=True, **kwargs)
        return out, out[self._cache_kw]

    @property
    def context_tokens(self) -> int:
        """Leading tokens read as context only: 1 for a model without BOS (its first token is never predicted)."""
        return 0 if self.vocab.has_bos else 1

    def _ids(self, seq: Prefix) -> list[int]:
        if not self.vocab.has_bos and len(seq) == 0:
            raise WorldModelError(
                f"the {self.name} model has no BOS token: it reads the first token as context and cannot "
                "predict after an empty prefix")
        return self.vocab.encode(seq)

    def _check_len(self, n: int) -> None:
        if n > self.max_positions:
            raise WorldModelError(
                f"sequence of {n} positions is longer than the model's context ({self.max_positions})"
            )

    @torch.no_grad()
    def _start(self, prefixes: Sequence[Prefix]):
        """Left-padded forward pass over prefixes (BOS prepended).

        Returns (a decoding state with one row per prefix, last-position log-probs
        [B, V_all], real lengths [B]). The state is a :class:`~.lean.LeanState`
        where the lean forward applies, else a :class:`~.lean.HFState`; both offer
        ``rows(idx)`` (continue rows ``idx``) and ``feed(tokens)`` (logits after them).
        """
        ids = [self._ids(p) for p in prefixes]
        lens = torch.tensor([len(x) for x in ids], device=self.device)
        P = int(lens.max())
        self._check_len(P)
        if self.recurrent is not None:
            state, logits = RecurrentState.start(self.recurrent, ids, self.vocab.pad_id, self.device)
            return state, torch.log_softmax(logits.float(), dim=-1), lens
        if self.lean is not None:
            state, logits = LeanState.start(self.lean, ids, self.vocab.pad_id, self.max_positions, self.device)
            return state, torch.log_softmax(logits.float(), dim=-1), lens
        batch = torch.full((len(ids), P), self.vocab.pad_id, dtype=torch.long, device=self.device)
        mask = torch.zeros((len(ids), P), dtype=torch.long, device=self.device)
        for i, x in enumerate(ids):
            batch[i, P - len(x):] = torch.tensor(x, device=self.device)
            mask[i, P - len(x):] = 1
        state, logits = HFState.start(self._forward, batch, mask, lens, self.max_positions)
        return state, torch.log_softmax(logits.float(), dim=-1), lens

    def _domain(self, logp_all: torch.Tensor) -> torch.Tensor:
        """Probabilities restricted to domain-token columns."""
        off = self.vocab.offset
        if off is not None:
            return logp_all[..., off:off + len(self.tokens)].exp()
        return logp_all.index_select(-1, self._col_ids).exp()

    @property
    def wave_trials(self) -> int:
        """Trials the metrics hand to one call (:func:`worldmodel.metrics.compression`): :attr:`wave_prefixes`."""
        return self.wave_prefixes

    def _kv_bytes_per_token(self) -> int:
        """Bytes of keys and values one row keeps per token it has read (every layer)."""
        cfg = self.model.config
        layers = int(getattr(cfg, "n_layer", 0) or getattr(cfg, "num_hidden_layers", 0) or 1)
        width = int(getattr(cfg, "n_embd", 0) or getattr(cfg, "hidden_size", 0) or 1)
        return 2 * layers * width * next(self.model.parameters()).element_size()

    def _decode_chunk(self, prefixes, uniforms: list[np.ndarray], check: bool) -> int:
        """Prefixes per decoding wave: :attr:`wave_prefixes`, fewer where the cache would pass :attr:`wave_bytes`.

        ``uniforms``: one 2-d array (samples × steps) per prefix.
        """
        n = len(prefixes)
        if n == 0:
            return 1
        rows = max(u.shape[0] for u in uniforms) * (2 if check else 1)
        if self.recurrent is not None:  # a row keeps its state only, whatever its length
            per_prefix = max(1, 2 * rows * self.recurrent.state_bytes())
            return max(1, min(n, self.wave_prefixes, self.wave_bytes // per_prefix))
        steps = max(u.shape[1] for u in uniforms)
        # the lean cache keeps a row's own tokens (and gathers them through as much again);
        # transformers' keeps the prefix too
        width = 2 * (steps + 1) if self.lean is not None else steps + max(len(p) for p in prefixes) + 1
        per_prefix = max(1, rows * width * self._kv_bytes_per_token())
        return max(1, min(n, self.wave_prefixes, self.wave_bytes // per_prefix))

    # -- SequenceModel -----------------------------------------------------------
    @torch.no_grad()
    def next_token_probs(self, prefixes):
        out = []
        for i in range(0, len(prefixes), self.batch_rows):
            _, logp, _ = self._start(prefixes[i:i + self.batch_rows])
            out.append(self._domain(logp).cpu().numpy())
        return np.concatenate(out) if out else np.zeros((0, len(self.tokens)))

    @torch.no_grad()
    def score(self, prefixes, suffixes, acceptance):
        results: list[list[Scored | None]] = [[None] * len(g) for g in suffixes]
        # process prefixes in chunks; within a chunk, all their suffixes in row batches
        chunk = max(1, min(len(prefixes), self.wave_prefixes))
        for c0 in range(0, len(prefixes), chunk):
            pidx = list(range(c0, min(len(prefixes), c0 + chunk)))
            live = [i for i in pidx if any(len(s) for s in suffixes[i])]
            for i in pidx:
                for j, s in enumerate(suffixes[i]):
                    if len(s) == 0:
                        results[i][j] = Scored(np.zeros(0), np.zeros(0, dtype=bool))
            if not live:
                continue
            state0, logp0, lens = self._start([prefixes[i] for i in live])
            probs0 = self._domain(logp0)
            jobs = [(k, i, j) for k, i in enumerate(live) for j, s in enumerate(suffixes[i]) if len(s)]
            if max(len(suffixes[i][j]) for _, i, j in jobs) <= self.trie_max_len:
                self._score_trie(state0, probs0, lens, live, suffixes, jobs, acceptance, results)
                continue
            for b0 in range(0, len(jobs), self.batch_rows):
                batch = jobs[b0:b0 + self.batch_rows]
                sufs = [list(suffixes[i][j]) for _, i, j in batch]
                S = max(len(s) for s in sufs)
                self._check_len(max(int(lens[k]) + len(s) - 1 for (k, _, _), s in zip(batch, sufs)))
                ids = torch.full((len(batch), S), self.vocab.pad_id, dtype=torch.long, device=self.device)
                tmask = torch.zeros((len(batch), S), dtype=torch.long, device=self.device)
                for r, s in enumerate(sufs):
                    ids[r, :len(s)] = torch.tensor(self.vocab.encode(s, bos=False), device=self.device)
                    tmask[r, :len(s)] = 1
                rows = torch.tensor([k for k, _, _ in batch], device=self.device)
                if S > 1:
                    last = b0 + self.batch_rows >= len(jobs)  # the last batch may consume the cache
                    state = state0.rows(rows, keep=not last)
                    logp = torch.log_softmax(state.feed(ids[:, :-1], tmask[:, :-1]).float(), dim=-1)
                    dist = torch.cat([probs0[rows, None, :], self._domain(logp)], dim=1)
                else:
                    dist = probs0[rows, None, :]
                acc = acceptance.mask(dist)
                dom = self._id_col[ids].clamp(min=0)
                p = torch.gather(dist, -1, dom[..., None])[..., 0].cpu().numpy()
                a = torch.gather(acc, -1, dom[..., None])[..., 0].cpu().numpy()
                for r, (_, i, j) in enumerate(batch):
                    L = len(sufs[r])
                    results[i][j] = Scored(p[r, :L].astype(np.float64), a[r, :L].astype(bool))
        return results  # type: ignore[return-value]

    def _score_trie(self, state, probs0, lens, live, suffixes, jobs, acceptance, results) -> None:
        """Score short suffixes level by level over their trie.

        Suffixes of one prefix share their beginnings (a true boundary is a set of
        minimal extensions of common interior paths), so each distinct beginning is
        run once: depth ``d`` feeds one token to every distinct length-``d``
        beginning that some longer suffix continues, selecting its parent's cache
        row. Costs one forward pass per depth, with no padding (and, with the lean
        forward, no copy of the prefix's keys and values at all).
        """
        levels = [probs0]  # levels[d][node] = next-token distribution after that node
        index: list[dict] = [{(k, ()): k for k in range(len(live))}]
        depth = 1
        while True:
            want = sorted({(k, tuple(suffixes[i][j][:depth])) for k, i, j in jobs if len(suffixes[i][j]) > depth})
            if not want:
                break
            parents = torch.tensor([index[-1][(k, path[:-1])] for k, path in want], dtype=torch.long, device=self.device)
            feed = torch.tensor([self.vocab.stoi[path[-1]] for _, path in want], dtype=torch.long, device=self.device)
            self._check_len(int(lens[[k for k, _ in want]].max()) + depth)
            state = state.rows(parents)
            logits = state.feed(feed[:, None])
            levels.append(self._domain(torch.log_softmax(logits[:, -1].float(), dim=-1)))
            index.append({key: n for n, key in enumerate(want)})
            depth += 1
        accepted = [acceptance.mask(p) for p in levels]
        tok_col = self.token_index()
        for k, i, j in jobs:
            suf = suffixes[i][j]
            rows = [index[d][(k, tuple(suf[:d]))] for d in range(len(suf))]
            cols = [tok_col[t] for t in suf]
            results[i][j] = Scored(
                np.array([float(levels[d][r, c]) for d, (r, c) in enumerate(zip(rows, cols))]),
                np.array([bool(accepted[d][r, c]) for d, (r, c) in enumerate(zip(rows, cols))]),
            )

    def sample(self, prefixes, uniforms, acceptance, stop_tokens=frozenset(), keep_top=True):
        return [SampleGroup((toks for toks, _ in group), group.kept_top)
                for group in self._decode(prefixes, None, uniforms, acceptance, stop_tokens, keep_top=keep_top)]

    def sample_contrast(self, prefixes, check_prefixes, uniforms, acceptance, stop_tokens=frozenset(),
                        halt_on_reject=False, keep_top=True):
        return self._decode(prefixes, check_prefixes, uniforms, acceptance, stop_tokens, halt_on_reject, keep_top)

    @torch.no_grad()
    def _decode(self, prefixes, check_prefixes, uniforms, acceptance, stop_tokens=frozenset(), halt_on_reject=False,
                keep_top=True):
        """Lock-step decoding over a trie of sampled histories.

        Samples of one prefix that have drawn the same tokens so far have the same
        next-token distribution, so the batch holds one row per distinct history (a
        trie node), not one per sample: a peaked model's 30 samples often share a
        handful of histories, and the prefix's key/value cache is never copied 30
        times. Each sample keeps its own uniforms, so its tokens are exactly those
        of independent sampling.

        With ``check_prefixes``, every node also has a twin row after the other
        prefix, fed the same tokens, so each sampled token is checked there in the
        same forward pass that samples the next one. A sample stops at its first
        rejected token (or, with ``halt_on_reject``, when any sample of its group is
        rejected), after a stop token, at its length limit, or where nothing is
        allowed; nodes with no live sample leave the batch and its cache.
        """
        check = check_prefixes is not None
        out: list[SampleGroup] = [SampleGroup() for _ in prefixes]
        stop_ids = torch.tensor(sorted(self.token_index()[t] for t in stop_tokens if t in self.vocab.stoi),
                                dtype=torch.long, device=self.device)
        dev = self.device
        V = len(self.tokens)
        uniforms = [np.atleast_2d(np.asarray(u, dtype=np.float64)) for u in uniforms]
        chunk = self._decode_chunk(prefixes, uniforms, check)
        for c0 in range(0, len(prefixes), chunk):
            pidx = list(range(c0, min(len(prefixes), c0 + chunk)))
            C = len(pidx)
            us = [uniforms[i] for i in pidx]
            group = torch.tensor([k for k, u in enumerate(us) for _ in range(u.shape[0])], dtype=torch.long, device=dev)
            R = len(group)
            if R == 0:
                continue
            T = max(u.shape[1] for u in us)
            U = torch.ones((R, max(T, 1)), dtype=torch.float64, device=dev)
            r = 0
            for u in us:
                U[r:r + u.shape[0], :u.shape[1]] = torch.as_tensor(u, device=dev)
                r += u.shape[0]
            max_len = torch.tensor([u.shape[1] for u in us for _ in range(u.shape[0])], device=dev)
            batch_prefixes = [prefixes[i] for i in pidx] + ([check_prefixes[i] for i in pidx] if check else [])
            state, logp0, lens = self._start(batch_prefixes)
            if isinstance(state, LeanState):  # one buffer for the whole wave: every token, every sample's row
                state.reserve, state.reserve_rows = T, R * (2 if check else 1)
            longest = torch.zeros(len(batch_prefixes), dtype=torch.long, device=dev)
            longest[:C] = torch.zeros(C, dtype=torch.long, device=dev).scatter_reduce(0, group, max_len, "amax")
            if check:
                longest[C:] = longest[:C]
            self._check_len(int((lens + longest).max()) - 1)
            probs = self._domain(logp0)
            toks = torch.full((R, max(T, 1)), -1, dtype=torch.long, device=dev)
            rejected_at = torch.full((R,), -1, dtype=torch.long, device=dev)
            halted = torch.zeros(C, dtype=torch.bool, device=dev)
            alive = torch.ones(R, dtype=torch.bool, device=dev)
            kept = torch.zeros(R, dtype=torch.bool, device=dev)  # drew a token no rule allowed (keep_top)
            node = group.clone()  # each sample's trie node = its row in the first half of the batch
            n_nodes = C
            for t in range(T):
                # the sampling distribution once per node, then each sample's inverse CDF at its uniform
                pn = probs[:n_nodes]
                allowed, used_n = sampling_mask(pn, acceptance.mask(pn), keep_top)
                w = torch.where(allowed, pn, torch.zeros_like(pn)).double()
                total_n = w.sum(-1)
                cdf = w.cumsum_(-1).div_(total_n.clamp(min=1e-300)[:, None])
                total, used = total_n[node], used_n[node]
                ok = alive & (total > 0) & (t < max_len)
                if check and halt_on_reject:
                    ok &= ~halted[group]
                kept |= used & ok
                # the number of CDF entries <= u (the CDF never decreases)
                choice = torch.searchsorted(cdf.index_select(0, node), U[:, t:t + 1].contiguous(),
                                            right=True)[:, 0].clamp_(max=V - 1)
                toks[:, t] = torch.where(ok, choice, torch.full_like(choice, -1))
                if check:
                    acc_b = acceptance.mask(probs[n_nodes:])[node, choice]
                    rej = ok & ~acc_b
                    rejected_at[rej] = t
                    ok &= ~rej
                    if halt_on_reject and bool(rej.any()):
                        halted[group[rej]] = True
                        ok &= ~halted[group]
                if len(stop_ids):
                    ok &= ~torch.isin(choice, stop_ids)
                alive = ok
                if t == T - 1 or not bool(alive.any()):
                    break
                # children: one per distinct (node, token) among live samples
                live = alive.nonzero()[:, 0]
                keys, inverse = torch.unique(node[live] * V + choice[live], return_inverse=True)
                parents, feed = keys // V, keys % V
                node = torch.zeros(R, dtype=torch.long, device=dev)
                node[live] = inverse
                rows = torch.cat([parents, parents + n_nodes]) if check else parents
                n_nodes = len(keys)
                state = state.rows(rows)
                inp = self._col_ids[torch.cat([feed, feed]) if check else feed]
                probs = self._domain(torch.log_softmax(state.feed(inp[:, None])[:, -1].float(), dim=-1))
            toks_np, rej_np, kept_np = toks.cpu().numpy(), rejected_at.cpu().numpy(), kept.cpu().numpy()
            r = 0
            for k, u in zip(pidx, us):
                for _ in range(u.shape[0]):
                    row = toks_np[r]
                    m = int((row >= 0).cumprod().sum())
                    j = int(rej_np[r])
                    out[k].append((tuple(self.tokens[x] for x in row[:m]), j if j >= 0 else None))
                    out[k].kept_top += int(kept_np[r])
                    r += 1
        return out

    @torch.no_grad()
    def _full_forward(self, sequences, hidden: bool):
        """Whole sequences, right-padded; yields (ids, output) per batch.

        Row ``j`` of a sequence's output is the state after reading ``seq[:j]``: with
        BOS, position ``j`` holds it; without, position ``j - 1`` does (and ``j = 0``
        has none).
        """
        step = max(1, self.batch_rows // 4)
        for i in range(0, len(sequences), step):
            group = sequences[i:i + step]
            ids = [self.vocab.encode(s) for s in group]
            L = max(len(x) for x in ids)
            self._check_len(L)
            if L == 0:
                yield ids, None
                continue
            batch = torch.full((len(ids), L), self.vocab.pad_id, dtype=torch.long, device=self.device)
            mask = torch.zeros_like(batch)
            for r, x in enumerate(ids):
                batch[r, :len(x)] = torch.tensor(x, device=self.device)
                mask[r, :len(x)] = 1
            out = self.model(input_ids=batch, attention_mask=mask, output_hidden_states=hidden)
            yield ids, out

    def _rows(self, per_position: np.ndarray | None, n: int, width: int) -> np.ndarray:
        """Rows ``j = 0..len`` from a sequence's ``n`` output positions (NaN where no position reads it)."""
        rows = per_position[:n] if per_position is not None else np.zeros((0, width), dtype=np.float32)
        if not self.vocab.has_bos:
            rows = np.concatenate([np.full((1, width), np.nan, dtype=rows.dtype), rows])
        return rows

    def prefix_probs(self, sequences):
        """``m(· | seq[:j])`` for ``j = 0..len``; for a model without BOS row 0 is NaN (never predicted)."""
        res = []
        V = len(self.tokens)
        for ids, out in self._full_forward(sequences, hidden=False):
            p = None if out is None else self._domain(torch.log_softmax(out.logits.float(), dim=-1)).cpu().numpy()
            res.extend(self._rows(None if p is None else p[r], len(x), V) for r, x in enumerate(ids))
        return res

    @property
    def has_hidden_states(self) -> bool:
        return True

    def feature_net(self):
        """The network as a trainable feature extractor (:class:`~.features.FeatureNet`): fine-tuning metrics."""
        from .features import FeatureNet

        return FeatureNet(self.model, self.vocab, self.device)

    def hidden_states(self, sequences):
        res = []
        width = int(getattr(self.model.config, "n_embd", 0) or getattr(self.model.config, "hidden_size", 0))
        for ids, out in self._full_forward(sequences, hidden=True):
            h = None if out is None else out.hidden_states[-1].float().cpu().numpy()
            res.extend(self._rows(None if h is None else h[r], len(x), width) for r, x in enumerate(ids))
        return res
