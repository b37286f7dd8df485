"""The seating logic puzzle (the paper's third world, App. E).

* :mod:`.world` — :class:`SeatingWorld`, the DFA whose states are sets of seatings;
* :mod:`.prompts` — capability and validity prompts, strict answer parsing;
* :mod:`.responders` — the true and random responders (the chat backends, OpenAI-compatible
  HTTP and local transformers, and the response cache are in :mod:`worldmodel.chat`);
* :mod:`.protocol` — the App. E metrics for chat models (Figure 4);
* :mod:`.domain` — the likelihood mode: a small GPT-2 on statement sequences,
  evaluated with the core metrics;
* :mod:`.cli` — ``worldmodel llm-eval seating``.
"""

from .world import SeatingWorld, parse_statement, statement_text, statement_tokens

__all__ = ["SeatingWorld", "parse_statement", "statement_text", "statement_tokens"]
