"""`reconstruct` (navigation's) and the generic `detours` on a navigation task, through the real parser, on nav-grid-tiny."""

from __future__ import annotations

import json

import pytest

from worldmodel.errors import WorldModelError

from worldmodel.cli import build_parser
from worldmodel.worlds.navigation.navigator import decode_unchecked

TASK = "nav-grid-tiny"


def parser():
    return build_parser()


def run(*argv) -> int:
    args = parser().parse_args([str(a) for a in argv])
    return args.func(args)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("navdata")


def test_reconstruct_true_sequences_adds_nothing(tmp_path, data_dir, capsys):
    out = tmp_path / "rec"
    assert run("reconstruct", TASK, "--model", "true", "--n-sequences", 30, "--data-dir", data_dir,
               "--out", out, "--no-progress") == 0
    stats = json.loads((out / "stats.json").read_text())
    assert stats["sequences"] == 30 and stats["failed"] == 0 and stats["new_edges"] == 0
    graph = json.loads((out / "graph.json").read_text())
    assert {e["type"] for e in graph["edges"]} <= {"true-used", "true-unused"}
    assert (out / "reconstruction.png").stat().st_size > 10_000
    assert "true edges used" in capsys.readouterr().out


def test_reconstruct_corruption_control_and_html(tmp_path, data_dir):
    out = tmp_path / "ctl"
    # 30 of the split's 35 test sequences, drawn without replacement
    assert run("reconstruct", TASK, "--model", "true", "--n-sequences", 30, "--corrupt", 0.5,
               "--color-by", "direction", "--html", "--data-dir", data_dir, "--out", out, "--no-progress") == 0
    stats = json.loads((out / "stats.json").read_text())
    assert stats["corrupted"] == 15 and stats["algorithm"] == "paper"
    assert stats["valid_on_true_map"] == 15 and stats["valid_share"] == 0.5
    graph = json.loads((out / "graph.json").read_text())
    new = [e for e in graph["edges"] if e["type"] == "new"]
    assert len(new) == stats["new_edges"] > 0
    assert all(e["length_m"] <= 0.5 * 1609.344 for e in new)
    html = (out / "reconstruction.html").read_text()
    assert "L.tileLayer(" not in html  # no tile server (the inline Leaflet library defines tileLayer itself)
    assert html.count("L.polyline(") == len(graph["edges"])


def test_reconstruct_strict_algorithm_on_the_same_sequences(tmp_path, data_dir):
    outs = {}
    for algo in ("paper", "strict"):
        outs[algo] = tmp_path / algo
        assert run("reconstruct", TASK, "--model", "true", "--n-sequences", 30, "--corrupt", 0.5,
                   "--algorithm", algo, "--data-dir", data_dir, "--out", outs[algo], "--no-progress") == 0
    paper, strict = (json.loads((outs[a] / "stats.json").read_text()) for a in ("paper", "strict"))
    assert paper["algorithm"] == "paper" and strict["algorithm"] == "strict"
    assert paper["valid_on_true_map"] == strict["valid_on_true_map"] == 15
    # strict rolls failures back: the sequences its kept edges came from are consistent, invalid ones
    graph = json.loads((outs["strict"] / "graph.json").read_text())
    kept = {e["added_by"] for e in graph["edges"] if e["type"] == "new"}
    assert 0 < len(kept) <= strict["used"] - strict["valid_on_true_map"]
    with pytest.raises(WorldModelError, match="invalid choice"):
        run("reconstruct", TASK, "--model", "true", "--n-sequences", 4, "--algorithm", "fast", "--out", tmp_path / "x")


def test_reconstruct_sequence_file_counts_malformed(tmp_path, data_dir):
    from worldmodel.tasks import load_task

    task = load_task(TASK)
    good = task.domain.sequences("test", "shortest-paths", data_dir)[:5]
    f = tmp_path / "seqs.txt"
    f.write_text("\n".join([" ".join(s) for s in good] + ["a0s0 a1s1 N", "zz a0s0 N end", ""]))
    out = tmp_path / "file"
    assert run("reconstruct", TASK, "--sequences", f, "--out", out, "--no-progress") == 0
    stats = json.loads((out / "stats.json").read_text())
    assert stats["sequences"] == 7 and stats["malformed"] == 2 and stats["used"] == 5


def test_reconstruct_from_a_checkpoint(tmp_path, data_dir):
    from worldmodel.models import HFModel, Vocabulary
    from worldmodel.tasks import load_task

    task = load_task(TASK)
    world = task.domain.world
    ckpt = tmp_path / "ckpt"
    HFModel.untrained(Vocabulary(world.tokens, world.name), task.section("model"), seed=0).save_pretrained(ckpt)
    out = tmp_path / "model"
    assert run("reconstruct", TASK, "--checkpoint", ckpt, "--n-sequences", 12, "--dataset", "shortest-paths",
               "--data-dir", data_dir, "--out", out, "--no-progress") == 0
    stats = json.loads((out / "stats.json").read_text())
    assert stats["sequences"] == 12
    assert stats["used"] + stats["failed"] + stats["malformed"] == 12


def test_detours_true_model_always_arrives(tmp_path, data_dir, capsys):
    out = tmp_path / "det.json"
    assert run("detours", TASK, "--model", "true", "--kind", "random,adversarial", "--p", "0,0.5,0.75",
               "--trials", 15, "--data-dir", data_dir, "--out", out, "--no-progress") == 0
    data = json.loads(out.read_text())
    assert len(data["results"]) == 6
    assert all(r["share"] == 1.0 and r["n"] == 15 for r in data["results"])
    assert {t["kind"] for t in data["trials"]} == {"random", "adversarial"}
    assert "| adversarial | 0.75 |" in capsys.readouterr().out


@pytest.mark.parametrize("argv,match", [
    (["reconstruct", TASK, "--model", "true", "--sequences", "x.txt", "--out", "o"], "exactly one"),
    (["reconstruct", TASK, "--model", "true", "--n-sequences", "0", "--out", "o"], "n-sequences"),
    (["reconstruct", TASK, "--sequences", "/nonexistent/x.txt", "--out", "o"], "does not exist"),
    (["reconstruct", TASK, "--model", "true", "--n-sequences", "3", "--corrupt", "2", "--out", "o"], "corrupt"),
    (["reconstruct", TASK, "--model", "true", "--n-sequences", "3", "--max-degree", "0", "--out", "o"], "max-degree"),
    (["detours", TASK, "--model", "true", "--kind", "sideways", "--out", "o"], "kind"),
    (["detours", TASK, "--model", "true", "--p", "0.5,3", "--out", "o"], "not in"),
    (["detours", TASK, "--out", "o"], "exactly one"),
    (["detours", "toy-dfa", "--model", "true", "--out", "o"], "navigation task"),
])
def test_bad_input_is_one_line_error(argv, match, tmp_path, data_dir):
    with pytest.raises(WorldModelError, match=match):
        run(*argv, "--data-dir", data_dir)


def test_decode_unchecked_keeps_going_after_an_invalid_move():
    import numpy as np

    from worldmodel.models import SequenceModel
    from worldmodel.tasks import load_task

    world = load_task(TASK).domain.world
    node = next(n for n in world.map.nodes if (n, "NE") not in world.map.edges)

    class AlwaysNE(SequenceModel):
        tokens = world.tokens
        name = "ne"

        def next_token_probs(self, prefixes):
            out = np.zeros((len(prefixes), len(self.tokens)))
            for i, p in enumerate(prefixes):
                out[i, self.tokens.index("end" if len(p) >= 6 else "NE")] = 1.0
            return out

        def score(self, *a, **k):  # pragma: no cover
            raise NotImplementedError

        def sample(self, *a, **k):  # pragma: no cover
            raise NotImplementedError

    seqs = decode_unchecked(AlwaysNE(), [(node, node)], max_tokens=40, batch=1)
    assert seqs == [[node, node, "NE", "NE", "NE", "NE", "end"]]
    seqs = decode_unchecked(AlwaysNE(), [(node, node)] * 3, max_tokens=4)
    assert seqs == [[node, node, "NE", "NE"]] * 3
