"""Group word-problem worlds: tokens are generators of a finite group, the state is the running product.

* :mod:`.group` — permutation groups (Z_k and parity, S_n, A_n) and their generating sets;
* :mod:`.world` — :class:`~.world.GroupWorld`, the word problem ``w = [product]`` as a minimal DFA;
* :mod:`.sampler` — :class:`~.sampler.GroupSampler`, prefixes reaching group elements (compression, distinction);
* :mod:`.domain` — tasks (data, the sampler's lengths) and :func:`~.domain.accuracy_by_length`.

No data sets to fetch (every split is generated from the task's seed), no commands of its own.
"""
