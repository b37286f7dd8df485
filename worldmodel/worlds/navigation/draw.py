"""Pictures of a reconstructed map at real latitude/longitude.

* :func:`draw_reconstruction`: a matplotlib PNG. True edges are light grey (the ones
  no consistent sequence used are fainter still); new edges are coloured by their
  great-circle length (a colour bar, metres) or by their direction label (a legend).
* :func:`write_html`: an interactive Leaflet map via folium with ``tiles=None``, so it
  needs no tile server: only the street graph itself is drawn (pan, zoom, a tooltip per
  new edge). The page is self-contained: the vendored Leaflet 1.9.4 (``vendor/leaflet``,
  BSD-2-Clause) is written inline, its images as data URIs, and folium's other CDN
  links (jQuery, Bootstrap, icon fonts, none of which this map uses) are dropped, so it
  works offline and loads nothing from the network.

Both take a :class:`~worldmodel.worlds.navigation.reconstruct.Reconstruction` (or its
``edge_list()``) and the :class:`StreetMap` whose ``coords`` give positions.
"""

from __future__ import annotations

import base64
import math
import re
from pathlib import Path
from typing import Sequence

import numpy as np

from worldmodel.errors import WorldModelError

from .reconstruct import DIRECTIONS

COLOR_BY = ("length", "direction")
VENDOR = Path(__file__).resolve().parent / "vendor" / "leaflet"
LEAFLET_VERSION = "1.9.4"
_EXTERNAL = re.compile(r"""<script[^>]*\bsrc="https?://[^"]*"[^>]*>\s*</script>\s*|<link[^>]*\bhref="https?://[^"]*"[^>]*>\s*""")
_DIR_COLOURS = dict(zip(DIRECTIONS, ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                    "#9467bd", "#8c564b", "#e377c2", "#17becf")))


def _segments(edges: Sequence[dict], coords, kind: str) -> tuple[np.ndarray, list[dict]]:
    segs, kept = [], []
    for e in edges:
        if e["type"] != kind or e["u"] not in coords or e["v"] not in coords:
            continue
        (la1, lo1), (la2, lo2) = coords[e["u"]], coords[e["v"]]
        segs.append(((lo1, la1), (lo2, la2)))
        kept.append(e)
    return np.array(segs, dtype=float).reshape(-1, 2, 2), kept


def draw_reconstruction(reconstruction_or_edges, street_map, path: str | Path, color_by: str = "length",
                        title: str | None = None, dpi: int = 150) -> Path:
    """Save a PNG of the reconstructed map to ``path``; returns the path."""
    if color_by not in COLOR_BY:
        raise WorldModelError(f"colour new edges by {color_by!r}? choose one of {', '.join(COLOR_BY)}")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import LineCollection
    from matplotlib.lines import Line2D

    edges = reconstruction_or_edges.edge_list() if hasattr(reconstruction_or_edges, "edge_list") \
        else list(reconstruction_or_edges)
    coords = street_map.coords
    if not coords:
        raise WorldModelError(f"street map {getattr(street_map, 'name', '')} has no coordinates to draw")
    lats = np.array([c[0] for c in coords.values()])
    lons = np.array([c[1] for c in coords.values()])
    span_lat = max(float(np.ptp(lats)), 1e-4)
    span_lon = max(float(np.ptp(lons)), 1e-4)
    aspect = 1 / math.cos(math.radians(float(lats.mean())))  # metres per degree, lat vs lon
    h = 9.0
    w = min(16.0, max(4.0, h * span_lon / (span_lat * aspect) + 1.5))
    fig, ax = plt.subplots(figsize=(w, h))
    used, _ = _segments(edges, coords, "true-used")
    unused, _ = _segments(edges, coords, "true-unused")
    new, new_edges = _segments(edges, coords, "new")
    if len(unused):
        ax.add_collection(LineCollection(unused, colors="#e4e4e4", linewidths=0.5, zorder=1))
    if len(used):
        ax.add_collection(LineCollection(used, colors="#b5b5b5", linewidths=0.7, zorder=2))
    handles = [Line2D([], [], color="#b5b5b5", lw=1, label=f"true, used ({len(used)})"),
               Line2D([], [], color="#e4e4e4", lw=1, label=f"true, unused ({len(unused)})")]
    if len(new):
        if color_by == "length":
            lengths = np.array([e["length_m"] for e in new_edges], dtype=float)
            lc = LineCollection(new, cmap="plasma", linewidths=1.1, zorder=3)
            lc.set_array(lengths)
            ax.add_collection(lc)
            fig.colorbar(lc, ax=ax, fraction=0.04, pad=0.01, label="new edge length (m)")
            handles.append(Line2D([], [], color=plt.get_cmap("plasma")(0.6), lw=1.5,
                                  label=f"new ({len(new)}; colour = length, see bar)"))
        else:
            cols = [_DIR_COLOURS[e["direction"]] for e in new_edges]
            ax.add_collection(LineCollection(new, colors=cols, linewidths=1.1, zorder=3))
            present = sorted({e["direction"] for e in new_edges}, key=DIRECTIONS.index)
            handles += [Line2D([], [], color=_DIR_COLOURS[d], lw=1.5, label=f"new {d}") for d in present]
    ax.set_xlim(lons.min() - 0.03 * span_lon, lons.max() + 0.03 * span_lon)
    ax.set_ylim(lats.min() - 0.03 * span_lat, lats.max() + 0.03 * span_lat)
    ax.set_aspect(aspect)
    ax.ticklabel_format(useOffset=False, style="plain")
    ax.set_xlabel("longitude")
    ax.set_ylabel("latitude")
    # below the axes, so it hides no street
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.07), ncol=min(len(handles), 5),
              fontsize=8, frameon=False)
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    from worldmodel.plotting import save_figure

    return save_figure(fig, path, dpi=dpi)


def inline_leaflet(html: str) -> str:
    """``html`` (a folium page) with Leaflet inline and every external script or stylesheet removed.

    The inline library takes the place of folium's Leaflet ``<script>`` tag, so the globals
    folium sets before it (``L_NO_TOUCH``, ``L_DISABLE_3D``) keep their order.
    """
    def data_uri(match: re.Match) -> str:
        png = (VENDOR / "images" / match.group(1)).read_bytes()
        return f"url(data:image/png;base64,{base64.b64encode(png).decode()})"

    css = re.sub(r"url\(images/([\w.-]+\.png)\)", data_uri, (VENDOR / "leaflet.css").read_text())
    js = (VENDOR / "leaflet.js").read_text()
    note = f"<!-- Leaflet {LEAFLET_VERSION}, BSD-2-Clause (worldmodel/worlds/navigation/vendor/leaflet/LICENSE) -->"
    inline = f"{note}\n<style>\n{css}\n</style>\n<script>\n{js}\n</script>\n"
    first = _EXTERNAL.search(html)
    if first is None:
        raise WorldModelError("folium page has no Leaflet script tag to replace (unexpected folium version)")
    return html[:first.start()] + inline + _EXTERNAL.sub("", html[first.start():])


def _legend(title: str, color_by: str, max_length_m: float) -> str:
    """The map's title and legend: a fixed box in the top right corner (plain HTML, no external files)."""
    import html as _html

    def swatch(colour: str, label: str, width: int = 3) -> str:
        return (f'<div><span style="display:inline-block;width:22px;height:0;border-top:{width}px solid {colour};'
                f'vertical-align:middle;margin-right:6px"></span>{_html.escape(label)}</div>')

    rows = [swatch("#9a9a9a", "true street, used by a sequence", 2), swatch("#d0d0d0", "true street, unused", 2)]
    if color_by == "direction":
        rows += [swatch(c, f"new edge heading {d}") for d, c in _DIR_COLOURS.items()]
    else:
        rows.append('<div><span style="display:inline-block;width:90px;height:8px;vertical-align:middle;'
                    'margin-right:6px;background:linear-gradient(to right,#0d0887,#cc4778,#f0f921)"></span>'
                    f'new edge, by length: 0 to {max_length_m:.0f} m</div>')
    heading = "<br>".join(_html.escape(line) for line in title.splitlines())
    return ('<div id="worldmodel-legend" style="position:fixed;top:10px;right:10px;z-index:1000;background:#fff;'
            'padding:8px 10px;border:1px solid #999;border-radius:4px;font:12px sans-serif;max-width:340px">'
            f'<div style="font-weight:bold;margin-bottom:4px">{heading}</div>{"".join(rows)}</div>')


def write_html(reconstruction_or_edges, street_map, path: str | Path, color_by: str = "length",
               open_browser: bool = False, title: str = "Reconstructed street map") -> Path:
    """Save an interactive map (folium, ``tiles=None``) to ``path``, with ``title`` and a legend; optionally open it."""
    if color_by not in COLOR_BY:
        raise WorldModelError(f"colour new edges by {color_by!r}? choose one of {', '.join(COLOR_BY)}")
    import folium
    from matplotlib import colormaps
    from matplotlib.colors import Normalize, to_hex

    edges = reconstruction_or_edges.edge_list() if hasattr(reconstruction_or_edges, "edge_list") \
        else list(reconstruction_or_edges)
    coords = street_map.coords
    lats = [c[0] for c in coords.values()]
    lons = [c[1] for c in coords.values()]
    fmap = folium.Map(location=[float(np.mean(lats)), float(np.mean(lons))], tiles=None, zoom_start=13,
                      control_scale=True)
    fmap.fit_bounds([[min(lats), min(lons)], [max(lats), max(lons)]])
    true_layer = folium.FeatureGroup(name="true edges")
    new_layer = folium.FeatureGroup(name="new edges")
    new = [e for e in edges if e["type"] == "new" and e["u"] in coords and e["v"] in coords]
    norm = Normalize(vmin=0, vmax=max([e["length_m"] for e in new], default=1.0))
    cmap = colormaps["plasma"]
    for e in edges:
        if e["u"] not in coords or e["v"] not in coords:
            continue
        pts = [list(coords[e["u"]]), list(coords[e["v"]])]
        if e["type"] == "new":
            colour = to_hex(cmap(norm(e["length_m"]))) if color_by == "length" else _DIR_COLOURS[e["direction"]]
            folium.PolyLine(pts, color=colour, weight=3, opacity=0.9,
                            tooltip=f"new {e['direction']}: {e['u']} → {e['v']} ({e['length_m']:.0f} m)"
                            ).add_to(new_layer)
        else:
            colour = "#9a9a9a" if e["type"] == "true-used" else "#d0d0d0"
            folium.PolyLine(pts, color=colour, weight=2, opacity=0.8).add_to(true_layer)
    true_layer.add_to(fmap)
    new_layer.add_to(fmap)
    folium.LayerControl(position="bottomleft").add_to(fmap)
    import html as _html

    root = fmap.get_root()
    root.header.add_child(folium.Element(f"<title>{_html.escape(title.splitlines()[0])}</title>"))
    root.html.add_child(folium.Element(_legend(title, color_by, norm.vmax)))
    from worldmodel.safety import atomic_write

    path = Path(path)
    atomic_write(path, inline_leaflet(fmap.get_root().render()), "map")
    if open_browser:
        import webbrowser

        webbrowser.open(path.resolve().as_uri())
    return path
