"""Stability in real physics: the settled level simulated for 10 s in Box2D.

Science Birds runs Unity's 2-D physics, which is Box2D. The competition's evaluator
loads a level, lets it run for ``duration`` = 10 s of game time and counts the blocks
whose centre moved by at least ``movementThreshold`` = 0.1 Unity units from where the
level placed them; the level's stability is ``1 - moving / total`` (the best of 3 runs;
Box2D here is deterministic, so one run gives the same). This module rebuilds that
run in pybox2d (the ``box2d`` package, Box2D 2.3) with Science Birds' settings:

* gravity (0, -9.81) with every block's gravity scale 0.5; fixed time step 0.02 s
  (500 steps for 10 s); 100 velocity and 100 position iterations;
* blocks as Science Birds' box colliders (:mod:`.unity`), wood: density 1, friction 4,
  bounciness 0; linear damping 1, angular damping 0.05;
* the ground a static box whose top is y = -3.5, friction :data:`GROUND_FRICTION`
  (0.4, Unity's default material: the evaluator's ground material is not in its
  repository); Box2D mixes two frictions as their geometric mean, as Unity does.

Box2D's compiled-in tolerances (linear slop 0.005, polygon skin 0.01, Baumgarte 0.2,
sleep after 0.5 s below 0.01 units/s and 2°/s) are the values Science Birds' physics
settings carry. Not modelled: block damage (Science Birds removes a block whose
collisions add up to its life of 10; a removed block counts as moved there).

:func:`simulate` returns every block's displacement; :func:`stability` the paper's
``st``. Needs the optional extra ``worldmodel[blockdrop]``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from ...errors import WorldModelError
from .grid import Block
from .unity import ORIGIN, place

GRAVITY = 9.81
GRAVITY_SCALE = 0.5
TIME_STEP = 0.02
DURATION = 10.0
VELOCITY_ITERATIONS = 100
POSITION_ITERATIONS = 100
DENSITY = 1.0
FRICTION = 4.0
GROUND_FRICTION = 0.4
LINEAR_DAMPING = 1.0
ANGULAR_DAMPING = 0.05
THRESHOLD = 0.1  #: a block moved when its centre is this far (Unity units) from where it started


def _box2d():
    try:
        import Box2D  # noqa: F401
    except ImportError:
        raise WorldModelError("the Box2D physics needs the box2d package: pip install 'worldmodel[blockdrop]'") from None
    return Box2D


def engine_version() -> str:
    """``"box2d <version>"``, the engine behind :func:`simulate`."""
    return f"box2d {_box2d().__version__}"


@dataclass
class Simulation:
    """One run: per block (drop order) its start and end centre and how far it moved."""

    start: list[tuple[float, float]]
    end: list[tuple[float, float]]
    angles: list[float]  #: end rotation, radians (as placed: b13 blocks start at pi/2)
    moved: list[float]

    @property
    def moving(self) -> int:
        return sum(d >= THRESHOLD for d in self.moved)

    @property
    def stability(self) -> float:
        """``(total - moving) / total``; 0 for an empty level (the evaluator's caught division)."""
        n = len(self.moved)
        return (n - self.moving) / n if n else 0.0


def simulate(blocks: Sequence[Block], duration: float = DURATION) -> Simulation:
    """Run the level for ``duration`` seconds of game time and measure every block's displacement."""
    B = _box2d()
    world = B.b2World(gravity=(0.0, -GRAVITY), doSleep=True)
    ground = world.CreateStaticBody(position=(0.0, ORIGIN[1] - 1.0))
    ground.CreatePolygonFixture(box=(100.0, 1.0), friction=GROUND_FRICTION, restitution=0.0)
    bodies = []
    placed = place(blocks)
    for p in placed:
        # the prefab's box (0.70 x 0.22 for RectSmall), rotated as placed
        w, h = (p.h, p.w) if p.rotation == 90 else (p.w, p.h)
        body = world.CreateDynamicBody(position=(p.x, p.y), angle=math.radians(p.rotation),
                                       linearDamping=LINEAR_DAMPING, angularDamping=ANGULAR_DAMPING)
        body.gravityScale = GRAVITY_SCALE
        body.CreatePolygonFixture(box=(w / 2, h / 2), density=DENSITY, friction=FRICTION, restitution=0.0)
        bodies.append(body)
    steps = int(round(duration / TIME_STEP))
    for _ in range(steps):
        world.Step(TIME_STEP, VELOCITY_ITERATIONS, POSITION_ITERATIONS)
    start = [(p.x, p.y) for p in placed]
    end = [(b.position[0], b.position[1]) for b in bodies]
    moved = [math.hypot(e[0] - s[0], e[1] - s[1]) for s, e in zip(start, end)]
    return Simulation(start, end, [b.angle for b in bodies], moved)


def stability(blocks: Sequence[Block]) -> float:
    """The paper's ``st`` for a level: the share of blocks that did not move 0.1 units in 10 s."""
    return simulate(blocks).stability


def agreement(programs: int = 500, seed: int = 0, max_drops: int = 24, progress: bool = True) -> dict:
    """How often the static rule (:func:`~.stability.check`) agrees with this physics on random levels.

    ``programs`` random programs of 1..``max_drops`` drops (each drop a uniformly random
    block and slot, redrawn until it lands inside the grid), seeded. A level is stable by
    the physics when no block moved 0.1 units (``st = 1``). Returns the counts of the four
    cases, the agreement rate, and how many rule-unstable but physics-stable levels have a
    block that turned by more than 0.05 rad (it toppled without its centre moving 0.1).
    """
    import numpy as np
    from tqdm.auto import tqdm

    from .grid import EMPTY_SKYLINE, KINDS, WIDTH, DropError, add, land
    from .stability import check

    rng = np.random.default_rng([seed, 0xA9])
    counts = {"both stable": 0, "both unstable": 0, "rule unstable, physics stable": 0,
              "rule stable, physics unstable": 0}
    turned = 0
    for _ in tqdm(range(programs), desc="static rule vs Box2D", disable=not progress):
        n = int(rng.integers(1, max_drops + 1))
        sky, blocks = EMPTY_SKYLINE, []
        while len(blocks) < n:
            try:
                b = land(sky, KINDS[int(rng.integers(3))], int(rng.integers(WIDTH)))
            except DropError:
                continue
            blocks.append(b)
            sky = add(sky, b)
        rule = bool(check(blocks))
        sim = simulate(blocks)
        phys = sim.stability == 1.0
        if rule and phys:
            counts["both stable"] += 1
        elif not rule and not phys:
            counts["both unstable"] += 1
        elif phys:
            counts["rule unstable, physics stable"] += 1
            turned += any(abs(a - (math.pi / 2 if b.kind == "b13" else 0.0)) > 0.05 for a, b in zip(sim.angles, blocks))
        else:
            counts["rule stable, physics unstable"] += 1
    agree = counts["both stable"] + counts["both unstable"]
    return {"programs": programs, "seed": seed, "max_drops": max_drops, "engine": engine_version(), **counts,
            "agreement": agree / programs, "rule unstable, physics stable, a block turned > 0.05 rad": turned}
