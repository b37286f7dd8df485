"""Hand-built street maps for the map-reconstruction tests: points placed in metres around a Manhattan corner."""

from __future__ import annotations

import math
from types import SimpleNamespace

from worldmodel.worlds.navigation.geometry import haversine_m

LAT0, LON0 = 40.75, -73.98


def at(north_m: float, east_m: float) -> tuple[float, float]:
    """The (lat, lon) ``north_m`` metres north and ``east_m`` metres east of (LAT0, LON0)."""
    return (LAT0 + north_m / 111_195.0, LON0 + east_m / (111_195.0 * math.cos(math.radians(LAT0))))


def make_map(coords: dict[str, tuple[float, float]], edges: dict[tuple[str, str], str]):
    """A StreetMap-like object with the attributes reconstruction reads; node order = the order of ``coords``."""
    lengths = {k: haversine_m(coords[k[0]], coords[v]) for k, v in edges.items()}
    return SimpleNamespace(nodes=list(coords), coords=dict(coords), edges=dict(edges), lengths=lengths)
