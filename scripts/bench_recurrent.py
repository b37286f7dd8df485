"""Benchmark: the metric engine on a recurrent model against naive per-token decoding, same trials, same numbers.

    OMP_NUM_THREADS=1 python scripts/bench_recurrent.py --checkpoint DIR [--task TASK] [--trials 32] [--rounds 2]

Two engines score the same compression and distinction trials (same seeds, same
prefix pairs, same uniforms, so the same samples):

* **engine** — :func:`worldmodel.metrics.compression` / :func:`~worldmodel.metrics.distinction`
  on :class:`~worldmodel.models.HFModel`: a wave of trials per call, each prefix run
  once (packed), its recurrent state branched by index to one row per distinct
  sampled history, every row advanced one token per batched step, the check after
  the other prefix in the same step (:mod:`worldmodel.models.recurrent`);
* **naive** — what one writes with the network alone: one trial, one sample at a
  time; the prefix run, then the sample decoded token by token carrying its own
  state (batch of one), then the sample scored after the other prefix the same way;
  the true boundary one suffix at a time.

Both use the model's own prefill and step (:class:`RecurrentEngine`), the same
float32 probabilities and the same inverse-CDF draw, and the script asserts that
every trial's scores agree. It also prints the largest logit difference between
the engine's recurrent state and a full forward pass (torch's own ``nn.LSTM`` /
``nn.GRU`` over the whole sequence; transformers' own ``MambaForCausalLM.forward``)
on 20 random token sequences. It prints trials per second and the ratio (wall clock
and this process's CPU time: the machine may be shared), alternating the engines
``--rounds`` times.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from worldmodel.metrics import compression, distinction
from worldmodel.models import SequenceModel
from worldmodel.models.base import SampleGroup, Scored, inverse_cdf, sampling_mask
from worldmodel.models.importers import load_checkpoint
from worldmodel.models.families import network_family
from worldmodel.evaluator import settings_for
from worldmodel.tasks import load_task


class NaiveRecurrent(SequenceModel):
    """One sample, one token at a time, over a model's recurrent engine (the reference loop)."""

    def __init__(self, model):
        self.m = model
        self.tokens = model.tokens
        self.name = "naive"
        self.max_positions = model.max_positions
        self.context_tokens = model.context_tokens
        self.cols = torch.as_tensor(model.vocab.token_ids)

    def _start(self, prefix):
        ids = torch.tensor([self.m._ids(prefix)])
        state, logits = self.m.recurrent.prefill(ids, torch.tensor([ids.shape[1]]))
        return state, logits[0]

    def _step(self, state, col: int):
        logits, state = self.m.recurrent.step(state, self.cols[col].view(1, 1))
        return state, logits[0, -1]

    def _probs(self, logits) -> torch.Tensor:
        return torch.log_softmax(logits.float(), -1).index_select(-1, self.cols).exp()

    @torch.no_grad()
    def next_token_probs(self, prefixes):
        return np.stack([self._probs(self._start(p)[1]).numpy() for p in prefixes])

    @torch.no_grad()
    def score(self, prefixes, suffixes, acceptance):
        idx = self.token_index()
        out = []
        for p, group in zip(prefixes, suffixes):
            row = []
            for suf in group:
                state, logits = self._start(p)
                probs, acc = [], []
                for j, t in enumerate(suf):
                    pr = self._probs(logits)
                    probs.append(float(pr[idx[t]]))
                    acc.append(bool(acceptance.mask(pr[None])[0, idx[t]]))
                    if j + 1 < len(suf):
                        state, logits = self._step(state, idx[t])
                row.append(Scored(np.array(probs), np.array(acc, dtype=bool)))
            out.append(row)
        return out

    @torch.no_grad()
    def sample(self, prefixes, uniforms, acceptance, stop_tokens=frozenset(), keep_top=True):
        out = []
        for p, us in zip(prefixes, uniforms):
            group = SampleGroup()
            for u in np.atleast_2d(us):
                state, logits = self._start(p)
                toks, kept = [], False
                for t, ut in enumerate(u):
                    pr = self._probs(logits)
                    allowed, used = sampling_mask(pr[None], acceptance.mask(pr[None]), keep_top)
                    j = inverse_cdf(pr.double().numpy(), allowed[0].numpy(), float(ut))
                    if j < 0:
                        break
                    kept |= bool(used[0])
                    toks.append(self.tokens[j])
                    if self.tokens[j] in stop_tokens or t == len(u) - 1:
                        break
                    state, logits = self._step(state, j)
                group.append(tuple(toks))
                group.kept_top += kept
            out.append(group)
        return out


@torch.no_grad()
def agreement(model, world, n: int = 20, extra: int = 10, seed: int = 0) -> float:
    """Largest |logit difference| between the engine's recurrent state (prefixes packed, then ``extra``
    tokens fed one at a time) and the reference full forward pass, on ``n`` random token sequences: torch's own ``nn.LSTM``/``nn.GRU`` over
    the whole sequence, or transformers' own ``MambaForCausalLM.forward``."""
    from worldmodel.models.recurrent import RecurrentLM, RecurrentState

    rng = np.random.default_rng(seed)
    toks = list(world.tokens)
    walks = [[toks[i] for i in rng.integers(len(toks), size=int(rng.integers(2, 30)) + extra)] for _ in range(n)]
    seqs = [model.vocab.encode(w[:-extra]) for w in walks]
    conts = [model.vocab.encode(w[-extra:], bos=False) for w in walks]
    net = model.model
    if isinstance(net, RecurrentLM):
        full = net.forward
    else:
        from transformers import MambaForCausalLM

        def full(input_ids):
            return MambaForCausalLM.forward(net, input_ids=input_ids, use_cache=False)
    state, last = RecurrentState.start(model.recurrent, seqs, model.vocab.pad_id, "cpu")
    refs = [full(input_ids=torch.tensor([s + c])).logits[0].float() for s, c in zip(seqs, conts)]
    worst = max(float((last[r] - refs[r][len(s) - 1]).abs().max()) for r, s in enumerate(seqs))
    for k in range(extra):
        lg = state.feed(torch.tensor([[c[k]] for c in conts]))
        worst = max(worst, max(float((lg[r, 0] - refs[r][len(s) + k]).abs().max()) for r, s in enumerate(seqs)))
    return worst


def scores(result):
    return [(t["trial"], t.get("score"), t.get("scores")) for t in result]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--task", help="default: the checkpoint's own task.toml")
    ap.add_argument("--trials", type=int, default=32)
    ap.add_argument("--M", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--max-sample-len", type=int, help="cap on sampled continuations (default: the task's)")
    args = ap.parse_args(argv)
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    ck = Path(args.checkpoint)
    task = load_task(args.task or str(ck / "task.toml"))
    world = task.world
    engine = load_checkpoint(ck, world)
    if engine.recurrent is None:
        raise SystemExit(f"{ck} is not a recurrent model ({network_family(engine.model)})")
    naive = NaiveRecurrent(engine)
    s = settings_for(task, trials=args.trials, M=args.M)
    if args.max_sample_len:
        s.max_sample_len = args.max_sample_len
    times = {(m, n): [0.0, 0.0] for m in ("compression", "distinction") for n in ("engine", "naive")}
    for _ in range(args.rounds):
        for name, model in (("engine", engine), ("naive", naive)):
            for metric, fn in (("compression", compression), ("distinction", distinction)):
                w0, c0 = time.perf_counter(), time.process_time()
                fn(world, model, task.domain.sampler(), s, None, False)
                times[(metric, name)][0] += time.perf_counter() - w0
                times[(metric, name)][1] += time.process_time() - c0
    # the same numbers: rerun with logs to compare trial by trial
    from worldmodel.results import TrialLog

    same = {}
    for metric, fn in (("compression", compression), ("distinction", distinction)):
        recs = {}
        for name, model in (("engine", engine), ("naive", naive)):
            with tempfile.TemporaryDirectory() as d:
                log = TrialLog(Path(d) / "t.jsonl", {"m": metric})
                fn(world, model, task.domain.sampler(), s, log, False)
                recs[name] = scores(log.trials(args.trials))
        same[metric] = sum(a != b for a, b in zip(recs["engine"], recs["naive"]))
    fam = network_family(engine.model)
    n_params = sum(p.numel() for p in engine.model.parameters())
    print(f"{task.name}: {fam}, {n_params:,} parameters, {args.trials} trials x {args.rounds} rounds, M = {args.M}, "
          f"one thread (load average {os.getloadavg()[0]:.1f})")
    print(f"max |logit difference|, engine (packed prefixes, then 10 tokens fed one by one) vs a full forward "
          f"pass ({'torch' if fam in ('lstm', 'gru') else 'transformers'}): {agreement(engine, world):.1e}")
    print("| metric | engine trials/s | naive trials/s | engine / naive (wall) | (CPU) | trials that differ |")
    print("|---|---|---|---|---|---|")
    for metric in ("compression", "distinction"):
        (ew, ec), (nw, nc) = times[(metric, "engine")], times[(metric, "naive")]
        n = args.trials * args.rounds
        print(f"| {metric} | {n / ew:.1f} | {n / nw:.2f} | {nw / ew:.1f}x | {nc / ec:.1f}x | {same[metric]} |")
    if any(same.values()):
        raise SystemExit("the engines disagree on some trials")


if __name__ == "__main__":
    main()
