""""8", the loop memory game (alvations/melon-eight), as a world: see :mod:`.world`, :mod:`.game`, :mod:`.agents`."""
