"""TextWorld Simple (Microsoft TextWorld's ``tw-simple`` challenge) as a world.

* :mod:`.house` — enumerate a game's reachable facts with TextWorld's logic engine into
  an automaton, cached beside the game (``game.automaton.json.gz``);
* :mod:`.world` — :class:`TextWorldWorld`, its minimal DFA (tokens are commands);
* :mod:`.games` — generate games by seed with ``tw-make`` (the 9 configurations × 2 splits);
* :mod:`.data` — random walks, goal-directed play with detours, a mixture;
* :mod:`.domain` — tasks ``textworld-simple`` and ``textworld-simple-suite``.

``textworld`` itself is needed only to generate or enumerate a game and to play it
through the real engine (``pip install -e ".[textworld]"``); a cached automaton is
read without it.
"""
