"""TextWorld Simple: the enumerated automaton against the real engine, and the metrics on it."""

from pathlib import Path

import numpy as np
import pytest

from worldmodel.dfa import REJECT, ExplicitDFA, exact_boundary, random_walk, run
from worldmodel.errors import WorldModelError
from worldmodel.metrics import Settings, compression, distinction, next_token
from worldmodel.models import TrueWorldModel
from worldmodel.sampling import PrefixPair, StateSampler
from worldmodel.worlds.textworld.data import distance_to_win, generate, goal_directed, plan_commands
from worldmodel.worlds.textworld.house import command_of, load_house, token_of
from worldmodel.worlds.textworld.world import TextWorldWorld

GAME = Path(__file__).parent / "fixtures" / "textworld" / "tw-simple-dense-detailed-train-seed1" / "game.json"


@pytest.fixture(scope="module")
def world():
    return TextWorldWorld(load_house(GAME, build=False), name="tw-seed1")


def test_seed1_house_size_and_tokens(world):
    h = world.house
    # 3,652 reachable fact sets: 2,308 live ones (each its own Myhill–Nerode class), 192 won, 1,152 lost
    assert (h.n_states, len(h.won), len(h.lost)) == (3652, 192, 1152)
    assert world.n_states == 2309 and len(world.terminal) == 1
    assert world.win_tokens == {"put_milk_on_stove"} and world.lose_tokens == {"eat_milk"}
    assert h.quest_objects == ["f_2", "k_0"]
    assert set(world.valid_tokens(world.initial_state())) == {token_of(c) for c in [
        "examine antique trunk", "examine chest drawer", "examine king-size bed", "examine wooden door",
        "inventory", "look", "open antique trunk", "open chest drawer"]}
    assert command_of("take_old_key_from_antique_trunk") == "take old key from antique trunk"
    # the walkthrough wins, and nothing is valid afterwards
    end = run(world, h.walkthrough)
    assert world.is_terminal(end) and world.valid_tokens(end) == []
    assert h.walkthrough[-1] in world.win_tokens


def test_probe_targets_follow_the_facts(world):
    names = world.probe_names
    assert names[0] == "room"
    s = run(world, world.house.walkthrough[:5])  # trunk opened, key taken, door unlocked and opened, east
    t = dict(zip(names, world.probe_targets(s)))
    assert world.rooms[t["room"]] == "r_1"  # the kitchen
    assert t["carries old key"] == 1 and t["carries milk"] == 0
    assert t["wooden door locked/closed/open"] == 2
    start = dict(zip(names, world.probe_targets(world.initial_state())))
    assert start["wooden door locked/closed/open"] == 0 and start["carries old key"] == 0


def test_cache_belongs_to_its_game(tmp_path):
    import shutil

    shutil.copy(GAME, tmp_path / "game.json")
    with pytest.raises(WorldModelError, match="no automaton cache"):
        load_house(tmp_path / "game.json", build=False)
    other = tmp_path / "game.automaton.json.gz"
    shutil.copy(GAME.with_name("game.automaton.json.gz"), other)
    text = (tmp_path / "game.json").read_text().replace('"milk"', '"cream"')
    (tmp_path / "game.json").write_text(text)
    with pytest.raises(WorldModelError, match="another game"):
        load_house(tmp_path / "game.json", build=False)


def _engine_admissible(infos, excluded):
    adm = {token_of(c) for c in infos["admissible_commands"]}
    return adm, adm - set(excluded)


@pytest.mark.slow
def test_enumerated_automaton_matches_the_engine(world):
    """On random walks and goal-directed play, the automaton's valid commands are the engine's admissible ones."""
    textworld = pytest.importorskip("textworld")
    env = textworld.start(str(GAME.with_suffix(".z8")),
                          textworld.EnvInfos(admissible_commands=True, won=True, lost=True))
    rng = np.random.default_rng(0)
    dist = distance_to_win(world)
    h = world.house
    episodes = [list(random_walk(world, world.initial_state(), 30, rng)) for _ in range(4)]
    episodes += [goal_directed(world, dist, rng, 0.3, 40) for _ in range(2)]
    episodes.append(list(h.walkthrough[:6]) + ["take_milk_from_couch", "eat_milk"])
    steps = 0
    for cmds in episodes:
        infos = env.reset()
        state = world.initial_state()
        for cmd in cmds:
            adm, kept = _engine_admissible(infos, h.excluded)
            assert adm <= set(world.tokens) | set(h.excluded), adm - set(world.tokens) - set(h.excluded)
            assert kept == set(world.valid_tokens(state)), (cmds, cmd)
            infos, _, done = env.step(command_of(cmd))
            state = world.step(state, cmd)
            assert state is not REJECT
            steps += 1
            assert done == world.is_terminal(state)
            if done:
                assert infos["won"] == (cmd in world.win_tokens) and infos["lost"] == (cmd in world.lose_tokens)
                break
        else:
            adm, kept = _engine_admissible(infos, h.excluded)
            assert kept == set(world.valid_tokens(state))
    assert steps > 100
    env.close()


def test_goal_directed_play_follows_a_shortest_plan(world):
    dist = distance_to_win(world)
    assert dist[world.initial_state()] == len(world.house.walkthrough) == 9
    seq = goal_directed(world, dist, np.random.default_rng(1), 0.0, 40)
    assert len(seq) == 9 and seq[-1] == "put_milk_on_stove"
    assert plan_commands(world, dist, world.initial_state()) == ["open_antique_trunk"]
    data = generate(world, "mixture", {"train": 40}, np.random.default_rng(2), 5, 20, 0.2)
    assert len(data["train"]) == 40 and all(run(world, s) is not REJECT for s in data["train"])


class _Fixed(StateSampler):
    """Always the same pair of prefixes."""

    def __init__(self, world, p1, p2):
        super().__init__(world)
        self.pair = (tuple(p1), tuple(p2))

    def compression_pair(self, rng):
        return self.make_pair("c", *self.pair)

    def distinction_pair(self, rng):
        return self.make_pair("d", *self.pair)


def _forget(world: TextWorldWorld, fact_kinds: tuple[str, ...]) -> ExplicitDFA:
    """The quotient that merges states differing only in ``fact_kinds`` (the union of their commands)."""
    def key(q):
        if world.is_terminal(q):
            return "over"
        return frozenset(f for f in world.facts(q) if f not in fact_kinds)

    groups: dict = {}
    cls = [groups.setdefault(key(q), len(groups)) for q in range(world.n_states)]
    delta = np.full((len(groups), len(world.tokens)), -1)
    for q in range(world.n_states):
        for a in range(len(world.tokens)):
            nxt = world.delta[q, a]
            if nxt >= 0:
                assert delta[cls[q], a] in (-1, cls[nxt])  # a deterministic quotient
                delta[cls[q], a] = cls[nxt]
    return ExplicitDFA(delta, world.tokens, cls[world.initial_state()], name="forgetful")


def test_true_world_model_scores_one(world):
    from worldmodel.worlds.textworld.domain import TextWorldSampler

    model = TrueWorldModel(world)
    s = Settings(trials=12, M=10, k=2, max_sample_len=6, seed=3)
    sampler = TextWorldSampler(world, 1, 24)
    assert compression(world, model, sampler, s, progress=False).mean == 1.0
    d = distinction(world, model, sampler, s, progress=False)
    assert d["distinction_precision"].mean == 1.0 and d["distinction_recall"].mean == 1.0
    assert d["distinction_recall"].n == 12
    seqs = generate(world, "random-walks", {"test": 10}, np.random.default_rng(0), 5, 20, 0.2)["test"]
    assert next_token(world, model, seqs, s, progress=False).mean == 1.0


def test_merging_two_house_states_scores_what_we_compute_by_hand(world):
    """A model that cannot tell whether the chest drawer is open (a quotient of the true automaton).

    A = start, B = drawer open, C = trunk open, D = both. The model merges A with B
    and C with D and allows the union of their commands. Its state is a function of
    the true state, so compression is perfect (1.0). Distinction with one-command
    suffixes (k = 1, samples of one command):

    * (A, B): true boundary {open drawer}; the model allows it after both -> recall 0;
      the model's boundary is empty -> precision 1 (the convention).
    * (B, C): true boundary {close drawer, open trunk}; the model separates only the
      trunk -> recall 1/2; its one-command boundary {open trunk} is real -> precision 1.
    * (C, B): true boundary {close trunk, take key, examine key, open drawer}; the
      drawer command is allowed after both -> recall 3/4; precision 1.
    """
    drawer = ("open(c_0: c)", "closed(c_0: c)")
    assert world.house.names["c_0"] == "chest drawer"
    model = TrueWorldModel(_forget(world, drawer))
    A, B, C = [], ["open_chest_drawer"], ["open_antique_trunk"]
    qa, qb, qc = run(world, A), run(world, B), run(world, C)
    assert exact_boundary(world, qa, qb, 1) == [("open_chest_drawer",)]
    assert len(exact_boundary(world, qc, qb, 1)) == 4
    s = Settings(trials=3, M=30, k=1, max_sample_len=1, seed=0)
    comp = compression(world, model, _Fixed(world, ["look", "open_chest_drawer"], ["open_chest_drawer", "look"]),
                       s, progress=False)
    assert comp.mean == 1.0
    want = {("A", "B"): (1.0, 0.0), ("B", "C"): (1.0, 0.5), ("C", "B"): (1.0, 0.75), ("A", "C"): (1.0, 1.0)}
    prefixes = {"A": A, "B": B, "C": C}
    for (x, y), (precision, recall) in want.items():
        d = distinction(world, model, _Fixed(world, prefixes[x], prefixes[y]), s, progress=False)
        assert d["distinction_precision"].mean == precision, (x, y)
        assert d["distinction_recall"].mean == recall, (x, y)
    # the true model itself separates every pair
    for (x, y) in want:
        d = distinction(world, TrueWorldModel(world), _Fixed(world, prefixes[x], prefixes[y]), s, progress=False)
        assert d["distinction_recall"].mean == 1.0


@pytest.mark.slow
def test_tw_make_regenerates_the_shipped_game(tmp_path):
    """The shipped seed-1 game is what `tw-make tw-simple --rewards dense --goal detailed --seed 1` makes."""
    pytest.importorskip("textworld")
    from worldmodel.worlds.textworld.games import GameSpec, ensure_game
    from worldmodel.worlds.textworld.house import _sha256

    z8 = ensure_game(GameSpec("dense", "detailed", "train", 1), tmp_path)
    assert z8.read_bytes() == GAME.with_suffix(".z8").read_bytes()
    assert _sha256(z8.with_suffix(".json")) == _sha256(GAME)


def test_cached_classes_must_be_a_congruence(world):
    import copy

    h = copy.deepcopy(world.house)
    # put the start state in the class of the state after "open antique trunk"
    h.classes[0] = h.classes[dict((world.house.tokens[t], n) for t, n in h.edges[0])["open_antique_trunk"]]
    with pytest.raises(WorldModelError, match="not a congruence"):
        TextWorldWorld(h)


@pytest.mark.slow
def test_cached_classes_are_hopcrofts(world):
    from worldmodel.worlds.textworld.house import minimal_classes

    assert minimal_classes(world.house) == world.house.classes
