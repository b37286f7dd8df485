"""ByteSized32 (Wang et al., EMNLP 2023): world models written as Python text games.

* :mod:`.corpus` — where the corpus lies and what its files are (reference games, GPT-4's games
  before and after reflection, specifications, released labels);
* :mod:`.data_sets` — the ``bytesized32`` data set (``worldmodel fetch bytesized32``);
* :mod:`.validity` — the corpus's technical validity crawl, reproduced in the sandbox;
* :mod:`.judges` — specification compliance and physical reality alignment asked of an LLM
  through the project's chat backends, and their agreement with the released labels;
* :mod:`.domain` — a reference game as a task world (a crawled, closed simulator) for training
  and scoring sequence models on random playthroughs.

The simulator-as-World machinery itself is core (:mod:`worldmodel.simulator`,
:mod:`worldmodel.sandbox`, :mod:`worldmodel.compare`).
"""
