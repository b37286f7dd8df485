"""The commands layer: the subcommands of ``worldmodel`` and what they share.

* :mod:`.common` — helpers every command uses (task and model checks, the LLM options);
* :mod:`.core` — the core subcommands (``data``, ``train``, ``evaluate``, ``fetch``,
  ``extract``, ``import``, ``detours``).

Worlds add their own subcommands from their ``cli.py`` (named in :mod:`worldmodel.registry`);
:mod:`worldmodel.cli` assembles them all.
"""
