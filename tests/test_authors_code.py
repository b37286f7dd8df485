"""scripts/authors_code.py: our checkpoint behind the authors' model interfaces; only their functions run.

The fast tests need no checkout of the authors' repository: the adapters must present
exactly the model the engine scores (their ids without our BOS), and only the named
function definitions of a script are compiled. The slow test runs
``bench_metrics.py --authors-code`` on a real checkout named by
``$WORLDMODEL_AUTHORS_CODE`` (``git clone https://github.com/keyonvafa/world-model-evaluation``)
and is skipped without one.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import authors_code as ac  # noqa: E402
from worldmodel.errors import WorldModelError  # noqa: E402
from worldmodel.models import HFModel, Vocabulary  # noqa: E402
from worldmodel.tasks import load_task  # noqa: E402


@pytest.fixture(scope="module")
def nav_model():
    task = load_task("nav-grid-tiny")
    world = task.world
    model = HFModel.untrained(Vocabulary(world.tokens, world.name), task.section("model"), seed=5)
    return world, model


def _ids(model, seqs):
    return torch.tensor([model.vocab.encode(s, bos=False) for s in seqs])


def test_bos_model_is_the_model_the_engine_scores(nav_model):
    world, model = nav_model
    nodes = world.map.nodes
    a = nodes[0]
    b = next(n for n in nodes if n != a)
    seqs = [[a, b] + list(world.map.neighbours(a))[:1], [b, a] + list(world.map.neighbours(b))[:1]]
    wrapped = ac.BosModel(model.model, model.vocab.bos_id, model.max_positions)
    with torch.no_grad():
        logits = wrapped(_ids(model, seqs), attention_mask=torch.ones(2, 3, dtype=torch.long)).logits
    assert logits.shape[:2] == (2, 3)  # their positions only: no BOS position
    ours = model.prefix_probs(seqs)  # row j: the engine's m(. | seq[:j]), BOS read first
    for r in range(2):
        theirs = torch.softmax(logits[r].float(), -1)[:, torch.as_tensor(model.vocab.token_ids)].numpy()
        np.testing.assert_allclose(theirs, ours[r][1:], rtol=1e-4, atol=1e-6)  # after x[:1], x[:2], x[:3]
    mingpt = ac.MinGPTInterface(model.model, model.vocab.bos_id, model.max_positions)
    out, loss = mingpt(_ids(model, seqs))
    assert loss is None and torch.allclose(out, logits, atol=1e-6)
    assert mingpt.get_block_size() == model.max_positions - 1


def test_bos_model_generate_returns_their_ids_within_the_context(nav_model):
    world, model = nav_model
    a, b = world.map.nodes[:2]
    ids = _ids(model, [[a, b]])
    wrapped = ac.BosModel(model.model, model.vocab.bos_id, model.max_positions)
    torch.manual_seed(0)
    out = wrapped.generate(ids, max_length=128, do_sample=False, pad_token_id=model.vocab.pad_id,
                           eos_token_id=model.vocab.stoi["end"])
    assert torch.equal(out[0, :2], ids[0])
    assert out.shape[1] <= model.max_positions - 1  # their 128 + our BOS, capped at the context
    with torch.no_grad():
        first = wrapped(ids).logits[0, -1].argmax()
    assert int(out[0, 2]) == int(first)  # greedy: the first token is the top of the wrapped model


def test_only_the_named_functions_of_a_script_are_compiled(tmp_path):
    script = tmp_path / "their_script.py"
    script.write_text("raise SystemExit('the top level ran')\n\ndef f(x):\n    return g(x) + 1\n\n"
                      "def unused():\n    return 0\n")
    ns = ac._functions(script, ["f"], {"g": lambda x: 41})
    assert ns["f"](0) == 42 and "unused" not in ns
    with pytest.raises(WorldModelError, match="no function 'h'"):
        ac._functions(script, ["f", "h"], {})


def test_a_folder_that_is_not_their_checkout_is_one_line_exit_2(tmp_path, nav_model):
    world, model = nav_model
    with pytest.raises(WorldModelError, match="utils.py"):
        ac.check_checkout(tmp_path)
    ck = tmp_path / "ck"
    model.save_pretrained(ck)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "scripts/bench_metrics.py", "--checkpoint", str(ck), "--task",
                           "nav-grid-tiny", "--authors-code", str(tmp_path), "--trials", "2"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()]
    assert proc.stderr.startswith("bench_metrics: error: --authors-code")


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("WORLDMODEL_AUTHORS_CODE"),
                    reason="set WORLDMODEL_AUTHORS_CODE to a checkout of keyonvafa/world-model-evaluation")
@pytest.mark.parametrize("task_name", ["nav-grid-tiny", "othello-synthetic"])
def test_their_code_runs_on_the_engines_pairs_and_agrees(tmp_path, task_name):
    task = load_task(task_name)
    ck = tmp_path / "ck"
    HFModel.untrained(Vocabulary(task.world.tokens, task.world.name), task.section("model"), seed=2).save_pretrained(ck)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "scripts/bench_metrics.py", "--checkpoint", str(ck), "--task", task_name,
                           "--authors-code", os.environ["WORLDMODEL_AUTHORS_CODE"], "--trials", "4", "--M", "4",
                           "--skip-naive", "--forward-seconds", "0.2"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    for metric in ("compression_precision", "distinction_precision", "distinction_recall"):
        row = next(line for line in lines if line.strip().startswith(metric))
        assert "authors' code" in row and " agree " in row
    rates = {line.split()[0]: line.split() for line in lines if line.startswith(("compression ", "distinction "))}
    assert all(float(r[2]) > 0 for r in rates.values())  # their trials/s
