"""Group word-problem worlds: the groups, the DFA, data and sampler lengths, the true model's 1.0."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from worldmodel import evaluator
from worldmodel.dfa import REJECT, exact_boundary, is_valid, run
from worldmodel.errors import WorldModelError
from worldmodel.models import TrueWorldModel
from worldmodel.tasks import load_task
from worldmodel.worlds.groups.domain import accuracy_by_length
from worldmodel.worlds.groups.group import compose, named_group, sign
from worldmodel.worlds.groups.world import GroupWorld

ORDERS = {"parity": 2, "Z5": 5, "S3": 6, "A4": 12, "A5": 60, "S5": 120}


@pytest.mark.parametrize("spec", list(ORDERS))
def test_groups_have_their_order_and_are_closed(spec):
    g = named_group(spec)
    assert g.order == ORDERS[spec]
    assert g.elements[0] == tuple(range(len(g.elements[0])))
    idx = {p: i for i, p in enumerate(g.elements)}
    for a, b in itertools.product(range(g.order), repeat=2):
        assert compose(g.elements[a], g.elements[b]) in idx  # closed under composition
    assert g.solvable == (spec in ("parity", "Z5", "S3", "A4"))
    if spec.startswith("A"):
        assert all(sign(p) == 1 for p in g.elements)
    if spec == "S5":
        assert sum(sign(p) == 1 for p in g.elements) == 60


def test_generator_sets_and_errors():
    assert named_group("S5").generator_names == ("s1", "s2", "s3", "s4", "c12345")
    assert named_group("A5").generator_names == ("c123", "c124", "c125")
    assert named_group("Z5").generator_names == ("+0", "+1", "+2", "+3", "+4")
    assert len(named_group("S3", "all").generator_names) == 6
    for bad in ("Q8", "S9", "A2", "Z1"):
        with pytest.raises(WorldModelError):
            named_group(bad)
    with pytest.raises(WorldModelError, match="generators"):
        named_group("S3", "some")


@pytest.mark.parametrize("spec", ["parity", "Z5", "A4", "S5"])
def test_the_word_problem_dfa_is_minimal_and_tracks_the_product(spec):
    w = GroupWorld(named_group(spec))
    G = w.group.order
    assert w.n_states == 2 * G + 1 and w.is_minimal()
    rng = np.random.default_rng(0)
    for _ in range(50):
        word = [w.generators[i] for i in rng.integers(len(w.generators), size=int(rng.integers(0, 20)))]
        prod = tuple(range(len(w.group.elements[0])))
        for t in word:
            prod = compose(prod, w.group.elements[w.group.generators[w.generators.index(t)]])
        assert w.group.elements[w.product(word)] == prod
        seq = w.sequence(word)
        assert is_valid(w, seq) and run(w, seq) == w.answered
        wrong = [a for a in w.answers if a != seq[-1]][0]
        assert run(w, seq[:-1] + [wrong]) is REJECT
        assert w.next_token_positions(seq) == [len(seq) - 1]
    # two elements are told apart by "= [g]"
    assert (("=", w.answers[1]) in exact_boundary(w, 1, 0, 2))
    assert w.probe_targets(w.answered) is None and w.state_key(G + 1) == "queried:" + w.group.element_names[1]


def test_data_and_sampler_keep_to_their_lengths(tmp_path):
    task = load_task("group-a4")
    w = task.world
    seqs = task.domain.generate("default")
    for split in ("train", "val", "test"):
        lens = {len(s) - 2 for s in seqs[split]}
        assert min(lens) >= 1 and max(lens) <= 12
        assert all(is_valid(w, s) for s in seqs[split])
    rng = np.random.default_rng(1)
    sampler = task.domain.sampler()
    for _ in range(30):
        c, d = sampler.compression_pair(rng), sampler.distinction_pair(rng)
        assert c.state1 == c.state2 and c.prefix1 != c.prefix2 and d.state1 != d.state2
        assert all(1 <= len(p) <= 6 and w.is_word_state(s) for p, s in
                   ((c.prefix1, c.state1), (d.prefix1, d.state1), (d.prefix2, d.state2)))
    long = load_task("group-a4-long")
    assert long.config["data"]["max_len"] == 12 and long.domain.lengths("test") == (13, 48)
    test_lens = {len(s) - 2 for s in long.domain.generate("default")["test"]}
    assert min(test_lens) >= 13 and max(test_lens) <= 48


@pytest.mark.parametrize("name", ["group-parity", "group-s5", "group-a5-long"])
def test_the_true_world_model_scores_one(tmp_path, name):
    task = load_task(name)
    model = evaluator.build_model(task, model="true")
    s = evaluator.settings_for(task, trials=12, M=10)
    out = evaluator.evaluate(task, model, ["compression", "distinction", "next-token"], s, data_dir=tmp_path,
                             progress=False)
    got = {k: v["mean"] for k, v in out["metrics"].items()}
    assert got == {"compression_precision": 1.0, "distinction_precision": 1.0, "distinction_recall": 1.0,
                   "next_token": 1.0}
    assert all(v["n"] == 12 for v in out["metrics"].values())
    acc = accuracy_by_length(task.world, model, [1, 12, 30], n_per_length=20)
    assert [acc[n].mean for n in (1, 12, 30)] == [1.0, 1.0, 1.0]


def test_accuracy_by_length_scores_a_model_that_only_knows_short_words():
    """A model that answers with the product of the first 3 generators is right on short words only."""
    w = GroupWorld(named_group("S3"))

    class FirstThree(TrueWorldModel):
        def next_token_probs(self, prefixes):
            out = np.zeros((len(prefixes), len(self.tokens)))
            for r, p in enumerate(prefixes):
                out[r, self.token_index()[w.answers[w.product(list(p[:-1])[:3])]]] = 1.0
            return out

    acc = accuracy_by_length(w, FirstThree(w), [1, 3, 12], n_per_length=200)
    assert acc[1].mean == 1.0 and acc[3].mean == 1.0 and acc[12].mean < 0.4


def test_same_seed_same_data_and_pairs():
    task = load_task("group-tiny")
    assert task.domain.generate("default") == load_task("group-tiny").domain.generate("default")
    pairs = [[(p.prefix1, p.prefix2) for p in (s.compression_pair(np.random.default_rng(i)),
                                                s.distinction_pair(np.random.default_rng(i)))]
             for s in (task.domain.sampler(), load_task("group-tiny").domain.sampler()) for i in range(5)]
    assert pairs[:5] == pairs[5:]


def test_bad_task_input_is_one_line(tmp_path):
    text = load_task("group-tiny").path.read_text()
    for bad, match in ((text.replace('group = "S3"', 'grup = "S3"'), "grup"),
                       (text.replace('group = "S3"', 'group = "S9x"'), "S9x"),
                       (text.replace("max_len = 6", "max_len = 0"), "min_len <= max_len")):
        (tmp_path / "t.toml").write_text(bad)
        with pytest.raises(WorldModelError, match=match) as exc:
            t = load_task(str(tmp_path / "t.toml"))
            t.domain.generate("default")
        assert "\n" not in str(exc.value)


def test_tiny_task_data_train_evaluate(tmp_path):
    from worldmodel.training import train

    task = load_task("group-tiny")
    train(task, tmp_path / "ck", data_dir=tmp_path / "d", progress=False)
    model = evaluator.build_model(task, checkpoint=tmp_path / "ck")
    out = evaluator.evaluate(task, model, ["compression", "distinction", "next-token"], evaluator.settings_for(task),
                             data_dir=tmp_path / "d", progress=False)
    assert all(0.0 <= v["mean"] <= 1.0 and v["n"] > 0 for v in out["metrics"].values())
