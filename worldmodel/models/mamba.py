"""Mamba (a selective state-space model) through ``transformers``, and the engine's recurrent form of it.

The network is Hugging Face's ``MambaForCausalLM`` (:func:`mamba_config` builds its
configuration from a task's ``[model]`` keys); on a CPU, without the CUDA kernels,
transformers runs its pure-PyTorch path (a sequential scan), which is what training
uses here.

For decoding, :class:`LeanMamba` computes the same function over the *same weight
tensors* in recurrent form, so that the metric engine carries one state per row
(the recurrent state is the cache; see :mod:`.recurrent`): per layer, the last
``conv_kernel - 1`` inputs of the causal convolution (``[R, D_inner, K-1]``) and the
SSM state (``[R, D_inner, N]``). A step is, per layer: RMSNorm; the input
projection split into ``x`` and the gate ``z``; the depthwise causal convolution
over the kept inputs and ``x``, SiLU; ``x``'s projection to the time step ``Δ``
(through ``dt_proj`` and softplus), ``B`` and ``C``; ``h ← exp(Δ·A) ⊙ h + Δ·B·x``;
``y = h·C + D·x``, times ``SiLU(z)``; the output projection and the residual. The
final RMSNorm and the (tied) head give the logits. Prefixes run right-padded,
each row's state taken after its own last token.

:meth:`LeanMamba.wrap` accepts only a ``MambaForCausalLM`` with SiLU activation
(the only one the recurrent form implements) and returns ``None`` otherwise, so
the adapter falls back on transformers and its own cache. Its logits agree with
transformers' full forward pass to about 1e-6; ``tests/test_families.py`` checks
1e-5.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..errors import WorldModelError

#: ``[model]`` keys of the mamba family and their MambaConfig names
MAMBA_KEYS = {"n_layer": "num_hidden_layers", "n_embd": "hidden_size", "d_state": "state_size",
              "d_conv": "conv_kernel", "expand": "expand"}


def mamba_config(vocab, n_layer: int = 2, n_embd: int = 64, d_state: int = 16, d_conv: int = 4, expand: int = 2):
    """A ``MambaConfig`` for a vocabulary (the ``[model]`` keys of a ``family = "mamba"`` task).

    The output head is tied to the embeddings (as in the Mamba language models);
    no bias in the projections, bias in the convolution (transformers' defaults).
    """
    from transformers import MambaConfig

    return MambaConfig(vocab_size=len(vocab), hidden_size=int(n_embd), num_hidden_layers=int(n_layer),
                       state_size=int(d_state), conv_kernel=int(d_conv), expand=int(expand),
                       bos_token_id=vocab.bos_id, eos_token_id=vocab.bos_id, pad_token_id=vocab.pad_id,
                       use_cache=False)


def mamba_param_count(vocab_size: int, n_layer: int, n_embd: int, d_state: int = 16, d_conv: int = 4,
                      expand: int = 2) -> int:
    """Parameters of such a model (tied head), without building it."""
    di = expand * n_embd
    rank = -(-n_embd // 16)
    per_layer = (n_embd                      # norm
                 + n_embd * 2 * di           # in_proj
                 + di * d_conv + di          # conv1d weight, bias
                 + di * (rank + 2 * d_state)  # x_proj
                 + rank * di + di            # dt_proj weight, bias
                 + di * d_state + di         # A_log, D
                 + di * n_embd)              # out_proj
    return vocab_size * n_embd + n_layer * per_layer + n_embd


def _rms(x, w, eps):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def mamba_forward(model, input_ids: torch.Tensor, output_hidden_states: bool = False):
    """``MambaForCausalLM``'s full-sequence function (no cache), written for training on a CPU.

    The same computation as transformers' pure-PyTorch path (RMSNorm, input
    projection, causal depthwise convolution, selective scan, gate, output
    projection, residual; final norm; tied head), with the scan's per-step inputs
    taken by ``unbind``: transformers indexes one time step at a time, and each
    index's backward writes a zero tensor the size of the whole sequence, which
    made a training step 10-40 times slower than an LSTM's of the same size.
    Returns (logits ``[B, T, V]``, the hidden states after each layer and after the
    final norm, or None). Weights are read from the module on every call.
    """
    bb = model.backbone
    h = bb.embeddings(input_ids)
    hidden = [] if output_hidden_states else None
    T = input_ids.shape[1]
    for blk in bb.layers:
        m = blk.mixer
        K, Di, N = int(m.conv_kernel_size), int(m.intermediate_size), int(m.ssm_state_size)
        x = blk.norm(h)
        xs, z = m.in_proj(x).chunk(2, dim=-1)
        xc = F.silu(F.conv1d(F.pad(xs.transpose(1, 2), (K - 1, 0)), m.conv1d.weight, m.conv1d.bias,
                             groups=Di).transpose(1, 2))                          # [B, T, Di]
        dt, Bm, Cm = torch.split(m.x_proj(xc), [int(m.time_step_rank), N, N], dim=-1)
        dt = F.softplus(m.dt_proj(dt))                                            # [B, T, Di]
        A = -torch.exp(m.A_log.float())                                           # [Di, N]
        # per step, from [B, Di] and [B, N] slices: the [B, Di, N] products stay in cache (materialising
        # them for the whole sequence first, as transformers does, is memory-bound on a CPU)
        dts = dt.transpose(0, 1).contiguous().unbind(0)                           # T x [B, Di]
        dxs = (dt * xc).transpose(0, 1).contiguous()[..., None].unbind(0)         # T x [B, Di, 1]
        Bs = Bm.transpose(0, 1).contiguous()[:, :, None, :].unbind(0)             # T x [B, 1, N]
        Cs = Cm.transpose(0, 1).contiguous()[..., None].unbind(0)                 # T x [B, N, 1]
        s = h.new_zeros((h.shape[0], Di, N))
        ys = []
        for t in range(T):
            s = torch.exp(dts[t][..., None] * A) * s + torch.bmm(dxs[t], Bs[t])
            ys.append(torch.bmm(s, Cs[t])[..., 0])
        y = (torch.stack(ys, dim=1) + xc * m.D) * F.silu(z)
        h = h + m.out_proj(y)
        if hidden is not None:
            hidden.append(h)
    h = bb.norm_f(h)
    if hidden is not None:
        hidden.append(h)
    return model.lm_head(h).float(), (tuple(hidden) if hidden is not None else None)


def mamba_lm_class():
    """:class:`MambaLM`, defined on first use (transformers is imported only then)."""
    global MambaLM
    if MambaLM is not None:
        return MambaLM
    from transformers import MambaForCausalLM
    from transformers.models.mamba.modeling_mamba import MambaCausalLMOutput

    class _MambaLM(MambaForCausalLM):
        """``MambaForCausalLM`` whose forward without a cache runs :func:`mamba_forward` (same function).

        Training and whole-sequence scoring take that path; with a cache (transformers'
        own decoding) it is transformers' forward. Saved and loaded as a plain
        ``MambaForCausalLM`` folder (``model_type`` mamba).
        """

        def forward(self, input_ids=None, attention_mask=None, output_hidden_states=None, use_cache=None,
                    labels=None, **kwargs):
            if (input_ids is None or use_cache or labels is not None
                    or any(kwargs.get(k) is not None for k in ("cache", "cache_params", "past_key_values",
                                                                  "inputs_embeds"))):
                return super().forward(input_ids=input_ids, attention_mask=attention_mask,
                                       output_hidden_states=output_hidden_states, use_cache=use_cache,
                                       labels=labels, **kwargs)
            logits, hidden = mamba_forward(self, input_ids, bool(output_hidden_states))
            return MambaCausalLMOutput(logits=logits, hidden_states=hidden)

    _MambaLM.__name__ = _MambaLM.__qualname__ = "MambaLM"
    MambaLM = _MambaLM
    return MambaLM


MambaLM = None


class LeanMamba:
    """``MambaForCausalLM``'s function in recurrent form, over the module's own parameters (no copies)."""

    def __init__(self, model):
        bb = model.backbone
        self.model = model
        self.emb = bb.embeddings.weight
        self.layers = []
        for blk in bb.layers:
            m = blk.mixer
            self.layers.append({
                "norm": blk.norm.weight, "eps": float(blk.norm.variance_epsilon),
                "in_w": m.in_proj.weight, "in_b": m.in_proj.bias,
                "conv_w": m.conv1d.weight[:, 0, :], "conv_b": m.conv1d.bias,
                "x_w": m.x_proj.weight, "dt_w": m.dt_proj.weight, "dt_b": m.dt_proj.bias,
                "A_log": m.A_log, "D": m.D, "out_w": m.out_proj.weight, "out_b": m.out_proj.bias,
                "rank": int(m.time_step_rank), "N": int(m.ssm_state_size), "K": int(m.conv_kernel_size),
                "Di": int(m.intermediate_size),
            })
        self.norm_f, self.eps_f = bb.norm_f.weight, float(bb.norm_f.variance_epsilon)
        self.head = model.lm_head.weight

    @classmethod
    def wrap(cls, model) -> "LeanMamba | None":
        try:
            from transformers import MambaForCausalLM
        except ImportError:  # pragma: no cover - transformers is a dependency
            return None
        if type(model) not in (MambaForCausalLM, mamba_lm_class()) or getattr(model.config, "hidden_act", "silu") != "silu":
            return None
        return cls(model)

    # -- one layer's pieces ---------------------------------------------------------------
    @staticmethod
    def _ssm_inputs(L, xc):
        """``Δ [.., Di]``, ``B``, ``C [.., N]`` from the convolved input ``xc [.., Di]``."""
        proj = F.linear(xc, L["x_w"])
        dt, B, C = torch.split(proj, [L["rank"], L["N"], L["N"]], dim=-1)
        dt = F.softplus(F.linear(dt, L["dt_w"], L["dt_b"]))
        return dt, B, C

    def _layer_step(self, L, h, conv, ssm):
        """One token through one layer: ``h [R, E]``; returns (new h, conv window, ssm state)."""
        x = _rms(h, L["norm"], L["eps"])
        xz = F.linear(x, L["in_w"], L["in_b"])
        xs, z = xz.chunk(2, dim=-1)
        window = torch.cat([conv, xs[:, :, None]], dim=-1)             # [R, Di, K]
        xc = (window * L["conv_w"]).sum(-1)
        if L["conv_b"] is not None:
            xc = xc + L["conv_b"]
        xc = F.silu(xc)
        dt, B, C = self._ssm_inputs(L, xc)
        A = -torch.exp(L["A_log"].float())
        ssm = torch.exp(dt[:, :, None] * A) * ssm + (dt[:, :, None] * B[:, None, :]) * xc[:, :, None]
        y = (ssm * C[:, None, :]).sum(-1) + xc * L["D"]
        y = y * F.silu(z)
        return h + F.linear(y, L["out_w"], L["out_b"]), window[:, :, 1:], ssm

    def _logits(self, h):
        return F.linear(_rms(h, self.norm_f, self.eps_f), self.head)

    # -- the recurrent engine ---------------------------------------------------------------
    @torch.no_grad()
    def prefill(self, ids: torch.Tensor, lens: torch.Tensor):
        """Right-padded prefixes: each row's state after its own last token, and the logits there.

        The convolution runs over the whole padded sequence at once (it is causal, so
        right padding never reaches a real position); the scan runs position by
        position, and a row's SSM state is kept from its last real position.
        """
        Bn, P = ids.shape
        lens = lens.to(ids.device)
        last = lens - 1
        rows = torch.arange(Bn, device=ids.device)
        h = F.embedding(ids, self.emb)                                   # [B, P, E]
        state = []
        for L in self.layers:
            K, Di, N = L["K"], L["Di"], L["N"]
            x = _rms(h, L["norm"], L["eps"])
            xs, z = F.linear(x, L["in_w"], L["in_b"]).chunk(2, dim=-1)   # [B, P, Di]
            xt = F.pad(xs.transpose(1, 2), (K - 1, 0))                   # [B, Di, K-1+P]
            xc = F.conv1d(xt, L["conv_w"][:, None, :], L["conv_b"], groups=Di).transpose(1, 2)
            xc = F.silu(xc)                                              # [B, P, Di]
            # the conv window after each row's last token: its last K-1 inputs (padded positions < 0 are 0)
            idx = last[:, None] + torch.arange(1, K, device=ids.device)[None, :]   # positions in xt
            conv = xt[rows[:, None], :, idx].transpose(1, 2) if K > 1 else xt.new_zeros((Bn, Di, 0))
            dt, Bm, Cm = self._ssm_inputs(L, xc)
            A = -torch.exp(L["A_log"].float())
            s = h.new_zeros((Bn, Di, N))
            kept = h.new_zeros((Bn, Di, N))
            ys = []
            for t in range(P):
                s = torch.exp(dt[:, t, :, None] * A) * s + (dt[:, t, :, None] * Bm[:, t, None, :]) * xc[:, t, :, None]
                ys.append((s * Cm[:, t, None, :]).sum(-1))
                at = last == t
                if bool(at.any()):
                    kept[at] = s[at]
            y = (torch.stack(ys, dim=1) + xc * L["D"]) * F.silu(z)
            h = h + F.linear(y, L["out_w"], L["out_b"])
            state.append((conv.contiguous(), kept))
        logits = self._logits(h[rows, last])
        return self._pack(state), logits

    @torch.no_grad()
    def step(self, state: tuple, ids: torch.Tensor):
        layers = self._unpack(state)
        out = []
        for t in range(ids.shape[1]):
            h = F.embedding(ids[:, t], self.emb)
            new = []
            for L, (conv, ssm) in zip(self.layers, layers):
                h, conv, ssm = self._layer_step(L, h, conv, ssm)
                new.append((conv, ssm))
            layers = new
            out.append(self._logits(h))
        return torch.stack(out, dim=1), self._pack(layers)

    @staticmethod
    def select(state: tuple, idx: torch.Tensor) -> tuple:
        return tuple(s.index_select(0, idx) for s in state)

    def state_bytes(self) -> int:
        n = sum(L["Di"] * (L["K"] - 1 + L["N"]) for L in self.layers)
        return n * self.emb.element_size()

    @staticmethod
    def _pack(layers) -> tuple:
        return tuple(t for pair in layers for t in pair)

    @staticmethod
    def _unpack(state: tuple) -> list:
        if len(state) % 2:
            raise WorldModelError("a Mamba decoding state holds (conv, ssm) pairs")
        return [(state[i], state[i + 1]) for i in range(0, len(state), 2)]
