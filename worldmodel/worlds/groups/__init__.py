"""Group word-problem worlds: tokens are generators of a finite group, the state is the running product.

* :mod:`.group` — permutation groups (Z_k and parity, S_n, A_n) and their generating sets;
* :mod:`.world` — :class:`~.world.GroupWorld`, the word problem ``w = [product]`` as a minimal DFA;
* :mod:`.domain` — tasks (data, the state sampler) and :func:`~.domain.accuracy_by_length`.
"""
