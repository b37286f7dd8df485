"""Geometry of the navigation world: compass directions, great-circle distances, bearings.

One home for every distance and direction the navigation code uses (the street-map
sources, the world, map reconstruction and the drawings). Coordinates are
``(lat, lon)`` in degrees; distances are metres.
"""

from __future__ import annotations

import math

#: The eight direction tokens, in the order the task spec fixes.
DIRECTIONS: tuple[str, ...] = ("N", "S", "E", "W", "NE", "NW", "SE", "SW")
#: Compass order, clockwise from north; sector i covers bearings [45 i - 22.5, 45 i + 22.5).
COMPASS: tuple[str, ...] = ("N", "NE", "E", "SE", "S", "SW", "W", "NW")

#: Mean Earth radius in metres (IUGG), used for every great-circle length.
EARTH_RADIUS_M = 6_371_008.8
#: One statute mile in metres.
MILE_M = 1609.344

#: The Earth radius in miles that the paper's code uses for map reconstruction distances.
PAPER_EARTH_RADIUS_MILES = 3958.8

Coord = tuple[float, float]


def haversine_m(coord_a: Coord, coord_b: Coord) -> float:
    """Great-circle distance in metres between two (lat, lon) points given in degrees."""
    lat1, lon1 = map(math.radians, coord_a)
    lat2, lon2 = map(math.radians, coord_b)
    h = math.sin((lat2 - lat1) / 2) ** 2 + math.cos(lat1) * math.cos(lat2) * math.sin((lon2 - lon1) / 2) ** 2
    return 2 * EARTH_RADIUS_M * math.asin(min(1.0, math.sqrt(h)))


def haversine_miles(coord_a: Coord, coord_b: Coord) -> float:
    """Great-circle miles between two (lat, lon) points, as the paper's reconstruction code measures
    them: the haversine formula in its ``atan2`` form on a sphere of radius 3,958.8 miles."""
    lat1, lon1 = map(math.radians, coord_a)
    lat2, lon2 = map(math.radians, coord_b)
    h = math.sin((lat2 - lat1) / 2) ** 2 + math.cos(lat1) * math.cos(lat2) * math.sin((lon2 - lon1) / 2) ** 2
    return PAPER_EARTH_RADIUS_MILES * (2 * math.atan2(math.sqrt(h), math.sqrt(1 - h)))


def bearing_deg(coord_a: Coord, coord_b: Coord) -> float:
    """Initial great-circle bearing from ``a`` to ``b`` in degrees, clockwise from north, in [0, 360)."""
    lat1, lon1 = map(math.radians, coord_a)
    lat2, lon2 = map(math.radians, coord_b)
    dlon = lon2 - lon1
    x = math.sin(dlon) * math.cos(lat2)
    y = math.cos(lat1) * math.sin(lat2) - math.sin(lat1) * math.cos(lat2) * math.cos(dlon)
    return math.degrees(math.atan2(x, y)) % 360.0


def direction_of(bearing: float) -> str:
    """The 8-way compass sector of a bearing: N covers [337.5, 22.5), NE [22.5, 67.5), ..."""
    return COMPASS[int(((bearing % 360.0) + 22.5) // 45.0) % 8]


def offset_coord(origin: Coord, north_m: float, east_m: float) -> Coord:
    """The point ``north_m`` metres north and ``east_m`` metres east of ``origin`` (local approximation)."""
    lat, lon = origin
    dlat = math.degrees(north_m / EARTH_RADIUS_M)
    dlon = math.degrees(east_m / (EARTH_RADIUS_M * math.cos(math.radians(lat))))
    return (lat + dlat, lon + dlon)
