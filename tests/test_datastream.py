"""Packed sequence arrays and the seeded training streams (Othello games, navigation rides)."""

from __future__ import annotations

import numpy as np
import pytest

from worldmodel.datastream import PackedSequences, token_lut
from worldmodel.dfa import is_valid
from worldmodel.errors import WorldModelError
from worldmodel.models import Vocabulary
from worldmodel.tasks import load_task


def test_packed_roundtrip_and_padding():
    seqs = [[3, 1, 2], [], [5], [4, 4, 4, 4]]
    p = PackedSequences.from_lists(seqs)
    assert len(p) == 4 and p.to_lists() == seqs
    assert p.lengths.tolist() == [3, 0, 1, 4] and p.max_len() == 4
    rows = p.padded(np.array([3, 0, 1, 0]), pad=-1)
    assert rows.tolist() == [[4, 4, 4, 4], [3, 1, 2, -1], [-1, -1, -1, -1], [3, 1, 2, -1]]
    assert p.padded(np.array([2]), pad=9, width=3).tolist() == [[5, 9, 9]]
    with pytest.raises(ValueError):
        p.padded(np.array([3]), width=2)            # never cut silently
    assert PackedSequences.from_padded(rows, pad=-1).to_lists() == [[4, 4, 4, 4], [3, 1, 2], [], [3, 1, 2]]
    assert p.take(np.array([3, 2])).to_lists() == [[4, 4, 4, 4], [5]]


def test_read_file_names_the_bad_line(tmp_path):
    f = tmp_path / "train.txt"
    f.write_text("a b\n\nb a a\n")
    p = PackedSequences.read(f, ("a", "b"))
    assert p.to_lists() == [[0, 1], [1, 0, 0]]
    f.write_text("a b\nb zz\n")
    with pytest.raises(WorldModelError, match=r"train.txt:2: unknown token 'zz'"):
        PackedSequences.read(f, ("a", "b"))
    with pytest.raises(WorldModelError, match="does not exist"):
        PackedSequences.read(tmp_path / "missing.txt", ("a",))


def test_token_lut_maps_indices_to_vocabulary_ids():
    vocab = Vocabulary(("x", "y", "z"))
    lut = token_lut(("z", "x"), vocab)
    assert lut.tolist() == [vocab.stoi["z"], vocab.stoi["x"]]


def test_othello_stream_is_seeded_fresh_and_legal():
    task = load_task("othello-6x6-tiny")
    world = task.world
    stream = task.domain.stream("synthetic")
    a, b = stream.block(3, 40), stream.block(3, 40)
    assert np.array_equal(a.tokens, b.tokens) and np.array_equal(a.offsets, b.offsets)   # pure in (seed, index)
    other = stream.block(4, 40)
    assert a.to_lists() != other.to_lists()
    games = [[world.tokens[i] for i in g] for g in a.to_lists()]
    assert all(is_valid(world, g) for g in games)
    # every game is played to the end (no legal move remains), as in the data files
    for g in games:
        state = world.initial_state()
        for t in g:
            state = world.step(state, t)
        assert world.valid_tokens(state) == []
    assert a.max_len() <= stream.max_len == 32
    # the stream does not replay the files' games
    files = task.domain.generate("synthetic")
    assert not set(map(tuple, games)) & set(map(tuple, files["train"][:40]))


def test_navigation_stream_keeps_training_pairs_only():
    from worldmodel.worlds.navigation.data import split_of

    task = load_task("nav-grid-tiny")
    world = task.world
    for dataset in ("random-walks", "shortest-paths", "noisy-shortest-paths"):
        stream = task.domain.stream(dataset)
        block = stream.block(0, 30)
        assert np.array_equal(block.tokens, stream.block(0, 30).tokens)
        seqs = [[world.tokens[i] for i in s] for s in block.to_lists()]
        assert len(seqs) == 30 and all(is_valid(world, s) for s in seqs)
        assert all(split_of(s[0], s[1], task.seed, stream.fractions) == "train" for s in seqs)
        assert max(len(s) for s in seqs) <= stream.max_len


def test_files_without_a_stream():
    task = load_task("seating-tiny")
    assert task.domain.stream(task.domain.datasets()[0]) is None
