"""--missing-tokens: a checkpoint lacking a world token is refused by default, and with ``zero``
the metrics treat the token exactly as one the model gives probability 0."""

import json

import pytest
import torch

from foreign import NanoGPT, write_nanogpt
from worldmodel.cli import main
from worldmodel.errors import WorldModelError
from worldmodel.models.importers import load_checkpoint
from worldmodel.tasks import load_task

ARGS = ["--metrics", "compression,distinction,next-token", "--trials", "24", "--M", "4", "--no-progress"]


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """Two nanoGPT checkpoints of one network: ``full`` names every world token, and token ``t``'s
    logit is -10^4 everywhere (an untied head row of -10^4 against a final LayerNorm whose bias
    sums to 1), so the model never allows it; ``lacking`` is the same file with ``t`` left out of stoi."""
    world = load_task("toy-dfa").world
    t = world.tokens[1]
    stoi = {";": 0, **{tok: i + 1 for i, tok in enumerate(world.tokens)}}
    torch.manual_seed(5)
    src = NanoGPT(len(stoi), block=64, layers=1, d=16, heads=2, bias=True).eval()
    with torch.no_grad():
        src.lm_head.weight = torch.nn.Parameter(src.transformer.wte.weight.clone())
        src.lm_head.weight[stoi[t]] = -1e4
        src.transformer.ln_f.bias.fill_(1 / 16)
    root = tmp_path_factory.mktemp("missing")
    full = write_nanogpt(root / "full", src, stoi)
    lacking = write_nanogpt(root / "lacking", src, {k: v for k, v in stoi.items() if k != t})
    return world, t, full, lacking


def records(path):
    return {r["trial"]: r for r in map(json.loads, path.read_text().splitlines()[1:])}


def test_missing_token_is_refused_by_default_and_zero_when_asked(pair, tmp_path, capsys):
    world, t, full, lacking = pair
    assert main(["import", "toy-dfa", str(lacking), "--bos", ";", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert f"lacks 1 of the {world.name} world's tokens" in err and repr(t) in err and "--missing-tokens zero" in err
    assert not (tmp_path / "x").exists()
    assert main(["evaluate", "toy-dfa", "--checkpoint", str(lacking), *ARGS]) == 2   # --checkpoint too
    capsys.readouterr()
    out = tmp_path / "imp"
    assert main(["import", "toy-dfa", str(lacking), "--bos", ";", "--missing-tokens", "zero", "--out", str(out)]) == 0
    assert f"lacks 1 of the {world.name} world's tokens" in capsys.readouterr().out
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["missing_tokens"] == [t] and prov["missing_tokens_policy"] == "zero"
    with pytest.raises(WorldModelError, match="--missing-tokens zero"):
        load_checkpoint(out, world)
    # scored: the same trials as the network that names the token but never allows it
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert main(["evaluate", "toy-dfa", "--checkpoint", str(out), "--missing-tokens", "zero", "--out", str(a),
                 *ARGS]) == 0
    assert f"lacks 1 of the {world.name} world's tokens, scored at probability 0: [{t!r}]" in capsys.readouterr().out
    assert main(["import", "toy-dfa", str(full), "--bos", ";", "--out", str(tmp_path / "full")]) == 0
    assert main(["evaluate", "toy-dfa", "--checkpoint", str(tmp_path / "full"), "--out", str(b), *ARGS]) == 0
    assert json.loads(a.read_text())["missing_tokens"] == [t] and "missing_tokens" not in json.loads(b.read_text())
    compared = skipped = 0
    for metric in ("compression", "distinction", "next-token"):
        la, lb = (p.with_name(p.stem + f".{metric}.trials.jsonl") for p in (a, b))
        assert json.loads(la.read_text().splitlines()[0])["settings"]["missing_tokens"] == [t]   # every trial log's header
        ra, rb = records(la), records(lb)
        for i, rec in ra.items():
            if rec["status"] == "skipped":  # a prefix holds the token: the lacking model cannot read it
                assert repr(t) in rec["reason"] and t in rb[i]["prefix1"] + rb[i]["prefix2"]
                skipped += 1
                continue
            other = rb[i]
            if metric == "next-token" and t in world.tokens and rec["n_prefixes"] != other["n_prefixes"]:
                continue  # a held-out sequence holding the token: scored only up to it
            for key in ("score", "scores", "kept_top", "model_boundary_size", "true_boundary_size", "n_correct",
                        "example"):
                assert rec.get(key) == other.get(key), (metric, i, key)
            compared += 1
    assert compared >= 2 and skipped >= 1   # in a 4-token world most prefixes hold the token
