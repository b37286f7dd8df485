"""Where the metric engine's time goes: phases, arithmetic, operator calls (one process, CPU time).

    OMP_NUM_THREADS=1 python scripts/profile_metrics.py --checkpoint DIR [--metric compression] [--trials 64]
                                                        [--repeats 3] [--top 15]

Runs :func:`worldmodel.metrics.compression` or :func:`~worldmodel.metrics.distinction`
on a checkpoint (a warm-up of two trials first, the lean forward's prefix memo emptied
before every repeat) and reports, from the fastest of ``--repeats`` runs, this
process's CPU time split into phases:

* **prefix forward** — the prefixes' own forward pass (``LeanGPT2.full``): its
  tokens (with bucket padding) and floating-point operations, and the rate it
  reaches, beside the rate of the same forward on full-context batches of 64
  (what large matrix products reach on this machine, in CPU time);
* **decoding steps** — ``LeanState.feed``: how many calls, rows fed, their
  arithmetic and rate, the CPU time per call, and the bytes of prefix keys and
  values the steps read (attention to the prefixes: every live prefix, every layer,
  every step);
* **row bookkeeping** — ``LeanState.rows`` (selecting, copying and gathering rows);
* **sampling and checking** — the rest of ``HFModel._decode`` (per-node sampling
  distributions, inverse CDFs, the trie of histories);
* **scoring** — ``HFModel.score`` outside its prefix forward (distinction's true boundary);
* **world** — the sampler's prefix pairs and the true boundary.

Then a ``torch.profiler`` table of one more run (operators by self CPU time, with
their number of calls), and the operator calls per decoding step. Arithmetic is
counted as ``2 · (12 · layers · width² + width · vocabulary)`` operations per token
plus ``4 · width · context`` per token and layer for attention.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_metrics import forget_prefixes, load_checkpoint_task  # noqa: E402
from worldmodel import metrics as engine_metrics  # noqa: E402
from worldmodel.metrics import Settings, compression, distinction  # noqa: E402
from worldmodel.models import HFModel  # noqa: E402
from worldmodel.models import lean as lean_mod  # noqa: E402
from worldmodel.results import TrialLog  # noqa: E402


class Meter:
    """CPU seconds and counts per phase, by wrapping methods (restored by :meth:`close`)."""

    def __init__(self):
        self.cpu: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self.tokens: dict[str, int] = {}
        self.bytes: dict[str, int] = {}
        self._undo = []
        self.active = True

    def wrap(self, owner, name, key, count=None, extra=None):
        raw = owner.__dict__[name]
        fn = raw.__func__ if isinstance(raw, (classmethod, staticmethod)) else raw
        meter = self

        def timed(*a, **k):
            if not meter.active:
                return fn(*a, **k)
            c0 = time.process_time()
            try:
                return fn(*a, **k)
            finally:
                meter.cpu[key] = meter.cpu.get(key, 0.0) + time.process_time() - c0
                meter.calls[key] = meter.calls.get(key, 0) + 1
                if count is not None:
                    meter.tokens[key] = meter.tokens.get(key, 0) + count(*a, **k)
                if extra is not None:
                    meter.bytes[key] = meter.bytes.get(key, 0) + extra(*a, **k)

        setattr(owner, name, classmethod(timed) if isinstance(raw, classmethod) else timed)
        self._undo.append((owner, name, raw))

    def reset(self):
        self.bytes.clear()
        self.cpu.clear()
        self.calls.clear()
        self.tokens.clear()

    def close(self):
        for owner, name, raw in reversed(self._undo):
            setattr(owner, name, raw)


def flops_per_token(model: HFModel, context: float) -> float:
    cfg = model.model.config
    L, E, V = int(cfg.n_layer), int(cfg.n_embd), int(cfg.vocab_size)
    return 2.0 * (12 * L * E * E + E * V) + 4.0 * L * E * context


def forward_rate(model: HFModel, batch: int, length: int, seconds: float = 2.0) -> float:
    """Tokens per CPU second of the lean forward on full-context batches (large matrix products)."""
    ids = torch.as_tensor(model.vocab.token_ids)[torch.randint(len(model.tokens), (batch, length))]
    mask = torch.ones_like(ids)
    model.lean.full(ids, mask, last_only=True)
    n, c0 = 0, time.process_time()
    while time.process_time() - c0 < seconds:
        model.lean.full(ids, mask, last_only=True)
        n += 1
    return n * batch * length / (time.process_time() - c0)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--task")
    ap.add_argument("--metric", default="compression", choices=("compression", "distinction"))
    ap.add_argument("--trials", type=int, default=64)
    ap.add_argument("--M", type=int, default=30)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--top", type=int, default=15)
    args = ap.parse_args(argv)

    task = load_checkpoint_task(args.task, Path(args.checkpoint))
    world, sampler = task.world, task.domain.sampler()
    model = HFModel.from_pretrained(args.checkpoint, world)
    if model.lean is None:
        raise SystemExit("profile_metrics: error: the checkpoint does not run on the lean forward")
    cfg = dict(task.section("evaluate"))
    cfg.update(trials=args.trials, M=args.M)
    s = Settings.from_dict(cfg)
    if getattr(task.domain, "boundary", None) and "boundary" not in cfg:
        s.boundary = task.domain.boundary
    torch.set_grad_enabled(False)
    fn = compression if args.metric == "compression" else distinction

    def run(settings):
        forget_prefixes(model)
        fn(world, model, sampler, settings, log=TrialLog(None, {}), progress=False)

    m = Meter()
    m.wrap(lean_mod.LeanGPT2, "full", "prefix forward", count=lambda self, ids, *a, **k: ids.numel())
    def prefix_kv_bytes(state, tokens, *a, **k):
        """Bytes of prefix keys and values one decoding step reads (every layer, every live prefix)."""
        return sum(kk.numel() + vv.numel() for kk, vv in state.prefix_kv) * state.prefix_kv[0][0].element_size()

    m.wrap(lean_mod.LeanState, "feed", "decoding steps", count=lambda self, tokens, *a, **k: tokens.numel(),
           extra=prefix_kv_bytes)
    m.wrap(lean_mod.LeanState, "rows", "row bookkeeping")
    m.wrap(HFModel, "_decode", "decode (all)")
    m.wrap(HFModel, "score", "score (all)")
    m.wrap(type(sampler), "compression_pair", "world")
    m.wrap(type(sampler), "distinction_pair", "world")
    m.wrap(engine_metrics, "exact_boundary", "world")
    m.wrap(engine_metrics, "sampled_boundary", "world")
    run(dataclasses.replace(s, trials=min(2, s.trials)))
    best = None
    for _ in range(args.repeats):
        m.reset()
        c0 = time.process_time()
        run(s)
        total = time.process_time() - c0
        if best is None or total < best[0]:
            best = (total, dict(m.cpu), dict(m.calls), dict(m.tokens), dict(m.bytes))
    total, cpu, calls, tokens, nbytes = best
    m.active = False

    cfg_m = model.model.config
    ctx = 60.0  # a typical context length for the attention term (the prefix and the tokens fed)
    fpt = flops_per_token(model, ctx)
    fwd_ctx = min(model.max_positions, 512)
    fwd = forward_rate(model, 64, fwd_ctx)  # tokens per CPU second, full-context batches
    fwd_gflops = fwd * flops_per_token(model, fwd_ctx / 2) / 1e9
    decode = cpu.get("decode (all)", 0.0)
    feed, rows, prefix = cpu.get("decoding steps", 0.0), cpu.get("row bookkeeping", 0.0), cpu.get("prefix forward", 0.0)
    score = cpu.get("score (all)", 0.0)
    world_s = cpu.get("world", 0.0)
    sampling = max(0.0, decode - feed - rows - (prefix if args.metric == "compression" else 0.0))
    print(f"task {task.name}, checkpoint {args.checkpoint} ({sum(p.numel() for p in model.model.parameters()) / 1e6:.2f}M "
          f"parameters: {cfg_m.n_layer} layers, width {cfg_m.n_embd}, {cfg_m.vocab_size} ids), {args.metric}, "
          f"{s.trials} trials, M={s.M}, {torch.get_num_threads()} thread(s)")
    print(f"CPU time (fastest of {args.repeats}): {total:.3f} s = {1e3 * total / s.trials:.2f} ms per trial "
          f"({s.trials / total:.1f} trials/s)")
    print(f"plain lean forward, batches of 64 x {fwd_ctx} tokens: {fwd:,.0f} tokens per CPU second = "
          f"{fwd_gflops:.1f} GFLOP/s")
    rows_out = []
    p_tok = tokens.get("prefix forward", 0)
    rows_out.append(("prefix forward", prefix, calls.get("prefix forward", 0), p_tok, p_tok * fpt))
    f_tok = tokens.get("decoding steps", 0)
    rows_out.append(("decoding steps", feed, calls.get("decoding steps", 0), f_tok, f_tok * fpt))
    rows_out.append(("row bookkeeping", rows, calls.get("row bookkeeping", 0), 0, 0.0))
    if args.metric == "compression":
        rows_out.append(("sampling and checking", sampling, 0, 0, 0.0))
    else:
        rows_out.append(("sampling, checking, scoring", max(0.0, total - prefix - feed - rows - world_s), 0, 0, 0.0))
    rows_out.append(("world", world_s, calls.get("world", 0), 0, 0.0))
    print(f"{'phase':<28} {'CPU s':>7} {'share':>6} {'calls':>6} {'tokens':>8} {'GFLOP':>7} {'GFLOP/s':>8} {'ms/call':>8}")
    for name, sec, n, tok, fl in rows_out:
        rate = f"{fl / 1e9 / sec:.1f}" if fl and sec else "-"
        per = f"{1e3 * sec / n:.2f}" if n else "-"
        print(f"{name:<28} {sec:7.3f} {100 * sec / total:5.0f}% {n or '-':>6} {tok or '-':>8} "
              f"{fl / 1e9 if fl else 0:7.2f} {rate:>8} {per:>8}")
    kvb = nbytes.get("decoding steps", 0)
    if kvb and feed:
        print(f"  decoding steps read {kvb / 1e9:.2f} GB of prefix keys/values ({kvb / 1e9 / feed:.1f} GB/s of their "
              f"CPU time), {1e3 * feed / max(1, calls.get('decoding steps', 1)) / int(cfg_m.n_layer):.2f} ms per step "
              f"and layer, {f_tok / max(1, calls.get('decoding steps', 1)):.0f} rows per step")
    if args.metric == "distinction":
        print(f"  (scoring the true boundary, its prefix forward included: {score:.3f} s)")
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        run(s)
    ka = sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)
    total_self = sum(e.self_cpu_time_total for e in ka) or 1
    n_feeds = max(1, calls.get("decoding steps", 1))
    ops = sum(e.count for e in ka if e.key.startswith("aten::"))
    print(f"torch.profiler (one more run, operators by self time; profiler overhead included): {ops} aten calls, "
          f"about {ops / n_feeds:.0f} per decoding step")
    for e in ka[:args.top]:
        print(f"  {e.key:<55} {100 * e.self_cpu_time_total / total_self:5.1f}%  {e.count:>7} calls  "
              f"{e.self_cpu_time_total / max(e.count, 1):8.1f} us/call")
    m.close()


if __name__ == "__main__":
    main()
