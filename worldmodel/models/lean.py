"""A lean forward pass for GPT-2-shaped checkpoints, and the decoding states the engine uses.

The metric engine runs a few prefixes, then feeds many short continuations after
each of them (a trie of sampled histories, a true boundary). Through
``transformers`` every continuation row carries its own copy of its prefix's
keys and values: the cache grows by a ``torch.cat`` of every layer at every step
and is copied again whenever the rows change, and attention reads the prefix once
per row. For a small model that memory traffic, not the arithmetic, is the cost.

:class:`LeanGPT2` computes GPT-2's forward pass over the *same weight tensors* as
the Hugging Face module (embeddings, pre-LayerNorm blocks with fused query/key/
value ``Conv1D`` weights, the block's own activation module, final LayerNorm, the
output head), and :class:`LeanState` keeps the cache in two parts:

* each **prefix**'s keys and values once (``[G, H, P, D]`` per layer, left-padded);
* each **row**'s keys and values of the tokens fed after its prefix, in a buffer
  allocated once and written in place (rows are gathered by index only when they
  change, and then only the tokens fed so far).

Attention of a row is one softmax over its prefix's keys and its own; the prefix
part is a batched matrix product per prefix over all of that prefix's rows.
:class:`HFState` offers the same two operations (:meth:`~HFState.rows`,
:meth:`~HFState.feed`) over a Hugging Face cache, for every other model.

:meth:`LeanGPT2.wrap` accepts only what it implements (``GPT2LMHeadModel`` without
cross-attention, query/key scaling by ``1/sqrt(head dim)`` only, no reordered
upcast attention, no output bias) and returns ``None`` otherwise, so the caller
falls back on ``transformers``. Its logits agree with ``transformers``' own to
about 1e-6 (a different order of floating-point sums); ``tests/test_models.py``
checks 1e-5, with and without a cache, on padded batches.
"""

from __future__ import annotations

import copy
import math

import torch
import torch.nn.functional as F


class LeanGPT2:
    """GPT-2's forward pass over a Hugging Face ``GPT2LMHeadModel``'s own parameters (no copies)."""

    def __init__(self, model):
        tr = model.transformer
        self.wte, self.wpe = tr.wte.weight, tr.wpe.weight
        self.n_head = int(model.config.n_head)
        self.blocks = [
            (b.ln_1, b.attn.c_attn.weight, b.attn.c_attn.bias, b.attn.c_proj.weight, b.attn.c_proj.bias,
             b.ln_2, b.mlp.c_fc.weight, b.mlp.c_fc.bias, b.mlp.act, b.mlp.c_proj.weight, b.mlp.c_proj.bias)
            for b in tr.h
        ]
        self.ln_f = tr.ln_f
        self.head = model.lm_head.weight
        self.n_embd = int(self.wte.shape[1])
        self.head_dim = self.n_embd // self.n_head
        self.scale = 1.0 / math.sqrt(self.head_dim)
        #: the prefixes of the last :meth:`LeanState.start` and their keys/values, kept for the next call
        self.memo: dict | None = None
        self._params = [p for p in model.parameters()]
        #: memory kept from one decoding wave to the next (see :meth:`scratch`)
        self._scratch: dict[str, torch.Tensor] = {}

    def scratch(self, name: str, shape: tuple[int, ...]) -> torch.Tensor:
        """An uninitialised contiguous tensor of ``shape`` in memory this object keeps between calls.

        Fresh memory costs a page fault per page on first touch, which for a
        decoding wave's cache of many megabytes was a tenth of the wave's time;
        reusing it costs nothing. Each ``name`` is one region, so a caller may hold
        one tensor per name at a time: the decoder's wave buffer (``"wave"``) and the
        temporary it gathers live rows through (``"gather"``).
        """
        n = math.prod(shape)
        buf = self._scratch.get(name)
        if buf is None or buf.numel() < n or buf.device != self.wte.device or buf.dtype != self.wte.dtype:
            buf = self._scratch[name] = self.wte.new_empty(n)
        return buf[:n].view(shape)

    def version(self) -> tuple:
        """Changes whenever a weight is replaced or written in place (training, loading): the memo is then stale."""
        return tuple((p.data_ptr(), p._version) for p in self._params)

    @classmethod
    def wrap(cls, model) -> "LeanGPT2 | None":
        """A lean forward for ``model``, or ``None`` where it would not compute the same function."""
        try:
            from transformers import GPT2LMHeadModel
            from transformers.pytorch_utils import Conv1D
        except ImportError:  # pragma: no cover - transformers is a dependency
            return None
        if type(model) is not GPT2LMHeadModel:
            return None
        cfg = model.config
        if (getattr(cfg, "add_cross_attention", False) or not getattr(cfg, "scale_attn_weights", True)
                or getattr(cfg, "scale_attn_by_inverse_layer_idx", False)
                or getattr(cfg, "reorder_and_upcast_attn", False)):
            return None
        if getattr(model.lm_head, "bias", None) is not None:
            return None
        n_embd, n_head = int(cfg.n_embd), int(cfg.n_head)
        if n_embd % n_head:
            return None
        for b in model.transformer.h:
            convs = (b.attn.c_attn, b.attn.c_proj, b.mlp.c_fc, b.mlp.c_proj)
            if not all(type(c) is Conv1D for c in convs) or tuple(b.attn.c_attn.weight.shape) != (n_embd, 3 * n_embd):
                return None
            if not (isinstance(b.ln_1, torch.nn.LayerNorm) and isinstance(b.ln_2, torch.nn.LayerNorm)):
                return None
        if not isinstance(model.transformer.ln_f, torch.nn.LayerNorm):
            return None
        return cls(model)

    @staticmethod
    def _ln(x, ln):
        return F.layer_norm(x, ln.normalized_shape, ln.weight, ln.bias, ln.eps)

    def forward(self, ids: torch.Tensor, pos: torch.Tensor, attend) -> torch.Tensor:
        """Final hidden states ``[B, S, E]`` of tokens ``ids`` at positions ``pos`` (both ``[B, S]``).

        ``attend(layer, q, k, v)`` gets the new tokens' queries, keys and values
        (``[B, H, S, D]``) and returns their attention output in the same shape.
        """
        B, S = ids.shape
        E, H, D = self.n_embd, self.n_head, self.head_dim
        h = F.embedding(ids, self.wte) + F.embedding(pos, self.wpe)
        for i, (ln1, wa, ba, wp, bp, ln2, wf, bf, act, wm, bm) in enumerate(self.blocks):
            x = self._ln(h, ln1).view(-1, E)
            q, k, v = torch.addmm(ba, x, wa).view(B, S, 3 * E).split(E, dim=2)
            q, k, v = (t.reshape(B, S, H, D).transpose(1, 2) for t in (q, k, v))
            a = attend(i, q, k, v).transpose(1, 2).reshape(B * S, E)
            h = h + torch.addmm(bp, a, wp).view(B, S, E)
            x = self._ln(h, ln2).view(-1, wf.shape[0])
            h = h + torch.addmm(bm, act(torch.addmm(bf, x, wf)), wm).view(B, S, E)
        return self._ln(h, self.ln_f)

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return F.linear(hidden, self.head)

    def full(self, ids: torch.Tensor, mask: torch.Tensor, pos: torch.Tensor | None = None, last_only: bool = False):
        """Whole (padded) sequences: returns (logits ``[B, S, V]``, per-layer ``(k, v)`` ``[B, H, S, D]``).

        With ``last_only`` the logits are those of the last position only (``[B, 1, V]``).

        ``mask`` marks real tokens (left or right padding). A query attends to the
        real keys at or before it; a padding query attends to itself only, so no
        row is empty (its output is never read).
        """
        B, S = ids.shape
        if pos is None:
            pos = (mask.cumsum(-1) - 1).clamp(min=0)
        eye = torch.eye(S, dtype=torch.bool, device=ids.device)
        allowed = (torch.ones(S, S, dtype=torch.bool, device=ids.device).tril() & mask.bool()[:, None, :]) | eye
        allowed = allowed[:, None]
        kv = []

        def attend(i, q, k, v):
            kv.append((k.contiguous(), v.contiguous()))
            return F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, scale=self.scale)

        hidden = self.forward(ids, pos, attend)
        return self.logits(hidden[:, -1:] if last_only else hidden), kv


class LeanState:
    """Rows of continuations after ``G`` shared prefixes, for :class:`LeanGPT2`.

    Every row has been fed the same number ``t`` of tokens after its prefix (lock
    step). Their keys and values live in *slots* of one buffer ``buf``
    ``[L, 2, N, H, 1 + cap, D]``, the first ``N`` slots of one allocation made once
    per wave (``reserve`` tokens and ``reserve_rows`` slots when the caller knows
    them, else grown by doubling) and written in place: position ``1 + j`` holds
    fed token ``j``, position 0 a summary of the prefix (see :meth:`feed`).
    ``slot_group[n]`` is the prefix of slot ``n`` and ``row_slot[r]`` the slot of
    row ``r``. When rows change, a row keeps its parent's slot where it can; a
    parent's second and later children take the slots of rows that ended and get a
    copy of the parent's tokens so far. Ended rows stay in the batch (fed padding,
    never read) until more than a quarter of it has ended, or a parent has more
    children than there are free slots; then the live rows are gathered into the
    first slots of the same allocation (a new one only when they do not fit, or
    when the old state must stay usable).
    """

    #: gather the live slots when fewer than this share of the batch is live
    compact_below = 0.75

    def __init__(self, lean: LeanGPT2, prefix_kv, prefix_ok, lens, slot_group, row_slot, buf, t, max_positions,
                 reserve: int = 0, reserve_rows: int = 0, store=None):
        self.lean, self.prefix_kv, self.prefix_ok, self.lens = lean, prefix_kv, prefix_ok, lens
        self.slot_group, self.row_slot, self.buf, self.t = slot_group, row_slot, buf, t
        self.max_positions = max_positions
        #: tokens and slots the first buffer holds (a decoder that knows its length and its
        #: most rows sets them: the buffer is then allocated once, never regrown or copied whole)
        self.reserve, self.reserve_rows = int(reserve), int(reserve_rows)
        #: the allocation ``buf`` is the first ``N`` slots of (rows are gathered into it in place)
        self.store = store if store is not None else buf
        n = len(slot_group)
        self.identity = len(row_slot) == n and bool((row_slot == torch.arange(n, device=row_slot.device)).all())

    @classmethod
    def start(cls, lean: LeanGPT2, seqs: list[list[int]], pad_id: int, max_positions: int, device):
        """Run the prefixes ``seqs`` (token ids); returns (a state with one row per prefix, last logits ``[B, V]``).

        Each distinct prefix runs once. Prefixes run in buckets of similar length
        (each bucket left-padded to its longest, at most a quarter padding), and
        their keys and values are laid out left-padded to the longest of all.
        Prefixes the previous call ran, with unchanged weights, are not run again
        (distinction scores the true boundary after the prefixes it has just sampled
        after).
        """
        keys = [tuple(x) for x in seqs]
        uniq = list(dict.fromkeys(keys))
        where = {k: g for g, k in enumerate(uniq)}
        group = torch.tensor([where[k] for k in keys], dtype=torch.long, device=device)
        G, P = len(uniq), max(len(k) for k in uniq)
        lens = torch.tensor([len(k) for k in uniq], dtype=torch.long, device=device)
        ok = torch.arange(P, device=device)[None, :] >= (P - lens)[:, None]
        H, D = lean.n_head, lean.head_dim
        kv = [(lean.wte.new_zeros((G, H, P, D)), lean.wte.new_zeros((G, H, P, D))) for _ in lean.blocks]
        last = lean.wte.new_empty((G, lean.head.shape[0]))
        memo = lean.memo if lean.memo is not None and lean.memo["version"] == lean.version() else None
        old = [(g, memo["rows"][k]) for g, k in enumerate(uniq) if memo is not None and k in memo["rows"]]
        if old:
            dst = torch.tensor([g for g, _ in old], dtype=torch.long, device=device)
            src = torch.tensor([r for _, r in old], dtype=torch.long, device=device)
            w = min(P, memo["P"])
            for (k, v), (mk, mv) in zip(kv, memo["kv"]):
                k[dst, :, P - w:] = mk.index_select(0, src)[:, :, -w:]
                v[dst, :, P - w:] = mv.index_select(0, src)[:, :, -w:]
            last[dst] = memo["last"].index_select(0, src)
        done = {g for g, _ in old}
        todo = sorted((g for g in range(G) if g not in done), key=lambda g: -len(uniq[g]))
        while todo:
            width = len(uniq[todo[0]])
            bucket = [g for g in todo if 4 * len(uniq[g]) > 3 * width]
            todo = todo[len(bucket):]
            ids = torch.full((len(bucket), width), pad_id, dtype=torch.long, device=device)
            mask = torch.zeros((len(bucket), width), dtype=torch.long, device=device)
            for r, g in enumerate(bucket):
                n = len(uniq[g])
                ids[r, width - n:] = torch.tensor(uniq[g], dtype=torch.long, device=device)
                mask[r, width - n:] = 1
            logits, bkv = lean.full(ids, mask, last_only=True)
            dst = torch.tensor(bucket, dtype=torch.long, device=device)
            for (k, v), (bk, bv) in zip(kv, bkv):
                k[dst, :, P - width:] = bk
                v[dst, :, P - width:] = bv
            last[dst] = logits[:, -1]
        if len(old) < G:  # a call that ran nothing new keeps the memo whole (scoring in several waves)
            lean.memo = {"version": lean.version(), "rows": where, "kv": kv, "P": P, "last": last}
        state = cls(lean, kv, ok, lens, group, torch.arange(len(group), device=device), None, 0, max_positions)
        return state, last.index_select(0, group)

    def rows(self, idx: torch.Tensor, keep: bool = False) -> "LeanState":
        """A state whose row ``j`` continues this state's row ``idx[j]`` (rows may repeat or go).

        The prefixes are shared, never copied. This state's buffer is reused (the
        state is spent) unless ``keep``; with ``keep`` or nothing fed yet, nothing is
        shared that a later ``feed`` could overwrite.
        """
        parent = self.row_slot[idx]
        dev, R2, N = idx.device, len(idx), len(self.slot_group)
        ar = torch.arange(R2, device=dev)
        if self.t == 0 or self.buf is None:
            return self._compacted(self.slot_group[parent], ar, None)
        if keep:
            return self._compacted(self.slot_group[parent], ar, self._gather(parent, in_place=False))
        first = torch.full((N,), R2, dtype=torch.long, device=dev).scatter_reduce(0, parent, ar, "amin")
        is_first = first[parent] == ar
        extra = (~is_first).nonzero()[:, 0]
        if R2 > N or R2 < self.compact_below * N:
            return self._compacted(self.slot_group[parent], ar, self._gather(parent, in_place=True))
        row_slot = parent.clone()
        slot_group = self.slot_group
        if len(extra):
            used = torch.zeros(N, dtype=torch.bool, device=dev)
            used[parent[is_first]] = True
            free = (~used).nonzero()[:, 0][:len(extra)]
            src = parent[extra]
            filled = self.buf[:, :, :, :, :1 + self.t]
            filled.index_copy_(2, free, filled.index_select(2, src))
            row_slot[extra] = free
            slot_group = slot_group.clone()
            slot_group[free] = slot_group[src]
        return LeanState(self.lean, self.prefix_kv, self.prefix_ok, self.lens, slot_group, row_slot, self.buf,
                         self.t, self.max_positions, self.reserve, self.reserve_rows, self.store)

    def _gather(self, slots: torch.Tensor, in_place: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """``(buffer, its allocation)`` holding ``slots`` of this buffer, in that order (the tokens fed so far).

        ``in_place`` (this state is spent): written into the first slots of this
        state's own allocation when they fit, so that no new memory is touched.
        """
        k, filled = len(slots), self.buf[:, :, :, :, :1 + self.t]
        if in_place and k <= self.store.shape[2]:
            store = self.store
            shape = filled.shape[:2] + (k,) + filled.shape[3:]
            picked = torch.index_select(filled, 2, slots,
                                        out=self.lean.scratch("gather", shape) if self.reserve_rows else None)
        else:
            picked = filled.index_select(2, slots)
            shape = self.store.shape[:2] + (max(k, self.reserve_rows),) + self.store.shape[3:]
            store = self.store.new_empty(shape)
        store[:, :, :k, :, :1 + self.t] = picked
        return store[:, :, :k], store

    def _compacted(self, group: torch.Tensor, row_slot: torch.Tensor, gathered) -> "LeanState":
        """A state over slots ``group`` (one per row), on ``gathered`` ((buffer, allocation) or None).

        Keeps only the prefixes still used when few are.
        """
        buf, store = gathered if gathered is not None else (None, None)
        prefix_kv, prefix_ok, lens = self.prefix_kv, self.prefix_ok, self.lens
        G = len(lens)
        if G > 8 and len(group):
            used = torch.zeros(G, dtype=torch.bool, device=group.device)
            used[group] = True
            if 2 * int(used.sum()) < G:
                keep = used.nonzero()[:, 0]
                group = (torch.cumsum(used, 0) - 1)[group]
                prefix_kv = [(k.index_select(0, keep), v.index_select(0, keep)) for k, v in prefix_kv]
                prefix_ok, lens = prefix_ok[keep], lens[keep]
        return LeanState(self.lean, prefix_kv, prefix_ok, lens, group, row_slot, buf, self.t, self.max_positions,
                         self.reserve, self.reserve_rows, store)

    def feed(self, tokens: torch.Tensor, tok_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Feed ``tokens`` ``[R, S]`` to every row (right padding allowed); returns logits ``[R, S, V]``.

        Token ``j`` of a row sits at position ``len(prefix) + t + j`` and attends to
        its prefix's real tokens, the tokens fed to its row before, and the new ones
        up to itself. ``tok_mask`` is accepted for the interface's sake: right
        padding is never seen by a real token (it comes after it). Slots whose row
        has ended are fed a padding token; their outputs are never read.

        Attention is one softmax over the prefix's keys and the row's own. The
        prefix part is one matrix product per prefix for all its rows (side by
        side, padded to the prefix with the most rows). Decoding one token (``S =
        1``), the prefix then enters the softmax as a single summary key (key 0,
        additive bias the log-sum-exp of the prefix scores, value the prefix's own
        attention output), so the rest is one ``scaled_dot_product_attention`` call
        over each row's buffer: the same weights, up to rounding.
        """
        lean, dev = self.lean, tokens.device
        R, S = tokens.shape
        N = len(self.slot_group)
        L, H, D = len(lean.blocks), lean.n_head, lean.head_dim
        t0, t1 = self.t, self.t + S
        if self.buf is None or self.buf.shape[4] < 1 + t1:
            cap = max(t1, 16, self.reserve, 2 * (self.buf.shape[4] if self.buf is not None else t1))
            cap = min(cap, max(t1, self.max_positions))
            shape = (L, 2, max(N, self.reserve_rows), H, 1 + cap, D)
            # a decoder's wave (reserve_rows set) runs alone: its buffer is the model's kept memory
            first = self.buf is None
            store = lean.scratch("wave", shape) if self.reserve_rows and first else lean.wte.new_empty(shape)
            store[:, 0, :N, :, 0] = 0  # the summary key (see attend); later slots get it with their tokens
            if t0 and self.buf is not None:
                store[:, :, :N, :, :1 + t0] = self.buf[:, :, :, :, :1 + t0]
            self.store, self.buf = store, store[:, :, :N]
        if not self.identity:
            phys = torch.zeros((N, S), dtype=tokens.dtype, device=dev)
            phys[self.row_slot] = tokens
            tokens = phys
        group = self.slot_group
        pos = (self.lens[group, None] + t0 + torch.arange(S, device=dev)[None, :]).clamp(max=self.max_positions - 1)
        G = len(self.lens)
        # slots of one prefix side by side (rank within its prefix), for one matrix product per prefix
        counts = torch.bincount(group, minlength=G)
        n_max = int(counts.max())
        order = torch.argsort(group, stable=True)
        rank = torch.empty_like(group)
        rank[order] = torch.arange(N, device=dev) - (torch.cumsum(counts, 0) - counts)[group[order]]
        slot = group * n_max + rank
        pad = ~self.prefix_ok[group][:, None, None, :]  # [N, 1, 1, P]
        causal = torch.ones(S, t1, dtype=torch.bool, device=dev).tril(t0)  # new token j sees fed tokens 0..t0+j
        P = self.prefix_ok.shape[1]
        buf = self.buf

        def prefix_part(i, q):
            """Scaled scores of every query against its prefix's keys, ``[N, H, S, P]`` (padding: -inf)."""
            qg = q.new_zeros((G * n_max, H, S, D))
            qg[slot] = q
            qg = qg.view(G, n_max, H, S, D).transpose(1, 2).reshape(G, H, n_max * S, D)
            sp = torch.matmul(qg, self.prefix_kv[i][0].transpose(-1, -2)).view(G, H, n_max, S, P).transpose(1, 2)
            return (sp.reshape(G * n_max, H, S, P)[slot] * lean.scale).masked_fill(pad, float("-inf"))

        def prefix_out(i, wp):
            """Attention weights on the prefix's keys times its values, ``[N, H, S, D]``."""
            wg = wp.new_zeros((G * n_max, H, S, P))
            wg[slot] = wp
            wg = wg.view(G, n_max, H, S, P).transpose(1, 2).reshape(G, H, n_max * S, P)
            out = torch.matmul(wg, self.prefix_kv[i][1]).view(G, H, n_max, S, D).transpose(1, 2)
            return out.reshape(G * n_max, H, S, D)[slot]

        def attend(i, q, k, v):
            buf[i, 0, :, :, 1 + t0:1 + t1] = k
            buf[i, 1, :, :, 1 + t0:1 + t1] = v
            sp = prefix_part(i, q)
            if S == 1:
                # the prefix as one summary key: key 0 (score 0) with bias log-sum-exp of the prefix
                # scores and value the prefix's own attention output, so one softmax over
                # [summary, fed tokens] gives the prefix its share exp(lse) / total
                lse = torch.logsumexp(sp, dim=-1, keepdim=True)
                buf[i, 1, :, :, 0] = prefix_out(i, (sp - lse).exp())[:, :, 0]
                bias = torch.zeros((N, H, 1, 1 + t1), dtype=q.dtype, device=dev)
                bias[..., :1] = lse
                return F.scaled_dot_product_attention(q, buf[i, 0, :, :, :1 + t1], buf[i, 1, :, :, :1 + t1],
                                                      attn_mask=bias, scale=lean.scale)
            ks, vs = buf[i, 0, :, :, 1:1 + t1], buf[i, 1, :, :, 1:1 + t1]
            ss = (torch.matmul(q, ks.transpose(-1, -2)) * lean.scale).masked_fill(~causal, float("-inf"))
            w = torch.softmax(torch.cat([sp, ss], dim=-1), dim=-1)
            return prefix_out(i, w[..., :P]) + torch.matmul(w[..., P:], vs)

        hidden = lean.forward(tokens, pos, attend)
        self.t = t1
        if not self.identity:
            hidden = hidden.index_select(0, self.row_slot)
        return lean.logits(hidden)


class HFState:
    """The same two operations over a ``transformers`` model and its own key/value cache (any architecture)."""

    def __init__(self, forward, cache, mask, pos, max_positions):
        self._forward, self.cache, self.mask, self.pos, self.max_positions = forward, cache, mask, pos, max_positions

    @classmethod
    def start(cls, forward, ids, mask, lens, max_positions):
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        out, cache = forward(input_ids=ids, attention_mask=mask, position_ids=pos)
        return cls(forward, cache, mask, lens - 1, max_positions), out.logits[:, -1]

    def rows(self, idx: torch.Tensor, keep: bool = False) -> "HFState":
        """Rows ``idx`` of this state; with ``keep`` this state stays usable (its cache is copied first).

        Nothing is copied when ``idx`` is every row in order (once sampled histories
        have diverged, each node usually has exactly one live child).
        """
        n = len(self.mask)
        cache = self.cache
        if not (len(idx) == n and bool((idx == torch.arange(n, device=idx.device)).all())):
            if keep:
                cache = copy.deepcopy(cache)
            cache.batch_select_indices(idx)
        return HFState(self._forward, cache, self.mask[idx], self.pos[idx], self.max_positions)

    def feed(self, tokens: torch.Tensor, tok_mask: torch.Tensor | None = None) -> torch.Tensor:
        S = tokens.shape[1]
        if tok_mask is None:
            tok_mask = torch.ones_like(tokens, dtype=self.mask.dtype)
        mask = torch.cat([self.mask, tok_mask.to(self.mask.dtype)], dim=1)
        pos = (self.pos[:, None] + torch.arange(1, S + 1, device=tokens.device)[None, :]).clamp(
            max=self.max_positions - 1)  # only padding can reach past the context; it is masked
        out, self.cache = self._forward(self.cache, input_ids=tokens, attention_mask=mask, position_ids=pos)
        self.mask, self.pos = mask, pos[:, -1]
        return out.logits
