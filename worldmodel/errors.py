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


class Interrupted(WorldModelError):
    """A run stopped by Ctrl-C or SIGTERM after saving what it had (the CLI exits ``128 + signal``)."""

    def __init__(self, message: str, signum: int = 2):
        super().__init__(message)
        self.exit_code = 128 + int(signum)
