"""Errors that are the user's to fix.

Anything raised as :class:`WorldModelError` is reported by the CLI as one line
(``worldmodel: error: <message>``) with a non-zero exit code and no traceback.
Everything else is a bug and keeps its traceback.
"""


class WorldModelError(Exception):
    """Bad input: an unknown task or token, a malformed file, a mismatched checkpoint."""


class TrialSkipped(Exception):
    """A metric trial that cannot run (no prefix pair exists, empty boundary, ...).

    The reason is recorded in the results and counted in ``n_failed``; it is never
    silently dropped.
    """

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason
