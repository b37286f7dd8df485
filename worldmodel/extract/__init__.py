"""Extract the automaton a model implies (Angluin's L*), and diff it against the world.

Modules: :mod:`.acceptor` (the model as a language acceptor), :mod:`.oracles` (equivalence by conformance
testing), :mod:`.lstar` (the learner), :mod:`.diff` (learned against true), :mod:`.report` (what
``worldmodel extract`` writes). The world's own minimal DFA is :func:`worldmodel.dfa.explicit_world`.

The metrics say *how much* a model's implied world differs from the true one;
this module says *where*. A :class:`~worldmodel.models.SequenceModel` under an
:class:`~worldmodel.acceptance.AcceptanceRule` is a language acceptor: a word is
accepted when the model allows every one of its tokens in turn (the rule says yes
and the model gives the token positive probability). That language is
prefix-closed, like the world's valid sequences, so it has a minimal DFA whose
missing transitions go to a reject state, the shape of
:class:`~worldmodel.dfa.ExplicitDFA`. :func:`extract` learns it:

* **membership queries** (:class:`ModelAcceptor`) are answered from a prefix tree
  that stores, for every prefix the model has read, the set of tokens it allows
  next. One node answers the membership of all its one-token extensions, a word
  with a refused prefix is refused without a model call, and the nodes still
  missing for a whole batch of queries are computed in one batched
  :meth:`~worldmodel.models.SequenceModel.prefix_probs` call (one forward pass per
  sequence gives the distribution after every one of its prefixes);
* the **learner** (:func:`lstar`) is L* with an observation table over access
  words ``S`` and suffixes ``E``, filled a whole table extension at a time, with
  Rivest–Schapire counterexample analysis (one new suffix per counterexample, so
  the rows of ``S`` stay distinct and the table never needs a consistency check);
* **equivalence queries** are conformance tests against the model
  (:class:`WMethodTester`, :class:`RandomWalkTester`): each test word is read by
  the model once and, at every prefix, the model's whole allowed set is compared
  with the hypothesis's valid tokens, which checks every one-token extension too.

Learning is bounded by ``max_states`` (live states of a hypothesis) and
``max_queries`` (membership queries plus test words); when a bound stops it, the
last hypothesis is returned, marked incomplete, with the reason. A neural model
need not be a finite automaton at all (its behaviour can depend on position), so
the result is always "the smallest DFA consistent with every query asked"; how
far it was tested is part of the result (:class:`QueryStats`, ``rounds``).

Why not AALpy: its L* asks membership queries one word at a time from inside its
observation table (so a neural model would be run once per word, never in a
batch), its step-by-step systems under learning do not fit a model that reads a
whole sequence at once, and it has no state or query budget. This module keeps
its split (system under learning, equivalence oracle, algorithm) in a form that
batches.

:func:`diff` compares the learned DFA with the world's minimal DFA through their
product: *merged* true states (two true states that one learned state covers,
with a shortest suffix the world tells them apart by), *split* true states (one
true state covered by two learned states, with a suffix the model answers
differently), and the language difference (shortest words accepted by exactly one
of them). Every witness is checked against the model itself.
"""

from __future__ import annotations

from .acceptor import ExtractionStopped, ModelAcceptor, QueryStats, Word
from .diff import Diff, Merge, Split, agreement, diff, separating_suffix
from .lstar import Extraction, extract, lstar, shortest_access
from .oracles import Conformance, Hypothesis, RandomWalkTester, WMethodTester

__all__ = ["Conformance", "Diff", "Extraction", "ExtractionStopped", "Hypothesis", "Merge", "ModelAcceptor",
           "QueryStats", "RandomWalkTester", "Split", "WMethodTester", "Word", "agreement", "diff", "extract",
           "lstar", "separating_suffix", "shortest_access"]
