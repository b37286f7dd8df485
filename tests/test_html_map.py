"""The interactive HTML map works offline: nothing is loaded from the network, and a
headless Chromium with the network cut off draws the streets and the new edges."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from worldmodel.cli import main
from worldmodel.worlds.navigation import draw

EXTERNAL = re.compile(r"""<(?:script|link|img)[^>]*\b(?:src|href)=["']?(?:https?:)?//""", re.I)


def _reconstruct(tmp_path: Path, monkeypatch, out: str) -> Path:
    monkeypatch.chdir(tmp_path)
    assert main(["reconstruct", "nav-grid-tiny", "--model", "true", "--n-sequences", "200", "--corrupt", "0.3",
                 "--html", "--color-by", "direction", "--out", out, "--data-dir", "data", "--no-progress"]) == 0
    return tmp_path / out / "reconstruction.html"


def test_html_map_loads_nothing_from_the_network(tmp_path, monkeypatch):
    html = _reconstruct(tmp_path, monkeypatch, "rec").read_text()
    assert not EXTERNAL.search(html), EXTERNAL.search(html).group(0)
    assert "L.map(" in html and "Leaflet 1.9.4" in html and "data:image/png;base64," in html
    assert html.count("L.polyline(") > 20


def test_html_map_has_a_title_and_a_legend(tmp_path, monkeypatch):
    """The page says what it shows: a <title>, the run's heading, and a key to every colour drawn."""
    html = _reconstruct(tmp_path, monkeypatch, "rec").read_text()
    title = re.search(r"<title>(.*?)</title>", html)
    assert title and title.group(1).startswith("nav-grid-tiny: ") and "new edges" in title.group(1)
    legend = html[html.index('id="worldmodel-legend"'):]
    assert "paper algorithm, max degree 4" in legend
    assert "true street, used by a sequence" in legend and "true street, unused" in legend
    for d, colour in draw._DIR_COLOURS.items():          # --color-by direction: one swatch per direction
        assert f"new edge heading {d}" in legend and colour in legend


def _chromium() -> str | None:
    return next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)


def screenshot(html: Path, png: Path) -> np.ndarray:
    """Render ``html`` in headless Chromium with every network request failing; RGB 0..255."""
    cmd = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9",   # offline
           "--window-size=1000,800", "--virtual-time-budget=5000", f"--screenshot={png}", html.resolve().as_uri()]
    subprocess.run(cmd, capture_output=True, timeout=120, check=True)
    from matplotlib.image import imread

    return (imread(png)[..., :3] * 255).round().astype(int)


def colour_counts(img: np.ndarray) -> tuple[int, int]:
    """(street pixels, new-edge pixels) in the map area (controls and attribution cut off).

    Streets are grey strokes darker than Leaflet's light grey background; new edges
    (coloured by direction) are saturated pixels.
    """
    area = img[90:-40, 60:-60]
    spread = area.max(axis=2) - area.min(axis=2)
    grey = (spread < 8) & (area.mean(axis=2) < 195)
    saturated = spread > 60
    return int(grey.sum()), int(saturated.sum())


@pytest.mark.slow
@pytest.mark.skipif(_chromium() is None, reason="no headless Chromium (Debian: apt-get install chromium)")
def test_offline_screenshot_shows_streets_and_new_edges(tmp_path, monkeypatch):
    html = _reconstruct(tmp_path, monkeypatch, "rec")
    streets, new = colour_counts(screenshot(html, tmp_path / "map.png"))
    assert streets > 2000 and new > 500, (streets, new)

    # the control: the page as folium writes it (Leaflet from a CDN) stays blank offline
    monkeypatch.setattr(draw, "inline_leaflet", lambda page: page)
    cdn = _reconstruct(tmp_path, monkeypatch, "cdn")
    assert EXTERNAL.search(cdn.read_text())
    assert colour_counts(screenshot(cdn, tmp_path / "cdn.png")) == (0, 0)
