"""Block-drop levels (the ChatGPT4PCG competition, IEEE CoG 2023) as a world.

* :mod:`.grid` — the drop grammar on the 20 × 16 grid (where a block lands, boundary errors);
* :mod:`.unity` — Science Birds' geometry in Unity units, level XML;
* :mod:`.stability` — the static stability rule; :mod:`.physics` — Box2D, the evaluator's ``st``;
* :mod:`.world` — :class:`BlockDropWorld`, the DFA (``grid`` and ``stable`` variants);
* :mod:`.sampler`, :mod:`.domain` — prefix pairs and the task domain;
* :mod:`.letters` — the constructive letter generator;
* :mod:`.render` — level images as the evaluator renders them;
* :mod:`.similarity` — letter classifiers: a local Hugging Face folder, or the project's proxy;
* :mod:`.scoring` — the competition's response parsing, qualification checks and scores;
* :mod:`.generate` — generators asked for levels (LLMs, scripted, random);
* :mod:`.probe` — the world-model probe in words;
* :mod:`.cli` — ``worldmodel blockdrop-generate``, ``blockdrop-probe``, ``blockdrop-proxy``,
  ``blockdrop-levels``.
"""

from .grid import Block, DropError, build, land
from .world import BlockDropWorld

__all__ = ["Block", "BlockDropWorld", "DropError", "build", "land"]
