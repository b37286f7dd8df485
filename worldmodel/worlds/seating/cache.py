"""The on-disk response cache (moved to :mod:`worldmodel.chat`; re-exported for old imports)."""

from ...chat import ResponseCache, cache_key  # noqa: F401
