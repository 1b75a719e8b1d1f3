"""The Atlas page's heatmap: case by size, a facet per device and precision. Pure ``rows -> chart``.

Colour is the speedup on a diverging log scale centred on 1x (NumPy's blue below, JAX's colour above:
model/palette.py), and only a trusted cell is coloured: a cell set aside is grey with a dashed border and
its figure marked "?", a cell the device cannot run is white and says so, a planned cell the atlas does not
hold is white with a dotted border and says "not measured" in small grey type. Each cell links to its result.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import altair as alt

from ..analysis.atlas import NOT_MEASURED, Atlas
from ..analysis.atlas_text import NEUTRAL, html_body
from ..i18n import _
from ..model.palette import DOUBT_GREY, JAX_COLOR, NUMPY_COLOR
from .atlas_view import speedup_extent

CELL_PX = 64
ROW_PX = 26
LEGEND_PX = 260
# 0.0033x, 0.33x, 3x, 100x: two significant digits read 100 as "1e+2" (the TPU atlas reaches 144x).
LEGEND_LABEL = "format(datum.value, datum.value >= 10 ? 'd' : '.2~g') + 'x'"


def legend_values(extent: float) -> list[float]:
    """1x and the powers of ten either side, up to ``extent``, with 3x and 30x where the scale reaches no
    further than 30x each way: on the 260 px bar of a 300x scale, "0.33x" and "1x" sat 25 px apart and ran
    together."""
    steps = (3.0, 10.0, 30.0) if extent <= 30 * 1.0001 else (10.0, 100.0, 1000.0)
    ups = [v for v in steps if v <= extent * 1.0001]
    return sorted([1 / v for v in ups] + [1.0] + ups)


def atlas_heatmap(rows: Sequence[dict[str, Any]], sizes: Sequence[str]) -> alt.FacetChart:
    """The heatmap of ``heatmap_rows``; ``sizes``: the size labels in order (small, middle, large)."""
    extent = speedup_extent(rows)
    cases = list(dict.fromkeys(r["case"] for r in rows))
    facets = list(dict.fromkeys(r["facet"] for r in rows))
    x = alt.X("size:O", title=None, sort=list(sizes), axis=alt.Axis(labelAngle=0))
    y = alt.Y("case:N", title=None, sort=cases)
    tooltip = [alt.Tooltip("case:N", title=_("case")), alt.Tooltip("shape:N", title=_("shape")),
               alt.Tooltip("detail:N", title=_("speedup")), alt.Tooltip("result_id:N", title=_("result"))]
    # A cell with no link gets "" (no link): Vega-Lite turns a null href into the text "null", a page
    # that does not exist.
    base = alt.Chart().transform_calculate(link="datum.url ? datum.url : ''").encode(x=x, y=y)
    colour = alt.Color("speedup:Q", title=_("speedup (log)"),
                       scale=alt.Scale(type="log", domain=[1 / extent, extent], domainMid=1,
                                       range=[NUMPY_COLOR, NEUTRAL, JAX_COLOR], clamp=True),
                       legend=alt.Legend(orient="bottom", values=legend_values(extent), gradientLength=LEGEND_PX,
                                         labelExpr=LEGEND_LABEL))
    trusted = base.mark_rect(stroke="white", strokeWidth=1).encode(
        color=colour, href="link:N", tooltip=tooltip).transform_filter("datum.status === 'trusted'")
    doubtful = base.mark_rect(fill=DOUBT_GREY, stroke="#555555", strokeDash=[3, 2], strokeWidth=1).encode(
        href="link:N", tooltip=tooltip).transform_filter("datum.status === 'doubtful'")
    empty = base.mark_rect(fill="white", stroke="#bbbbbb", strokeWidth=1).encode(
        tooltip=tooltip).transform_filter("datum.status === 'unmeasurable' || datum.status === 'missing'")
    not_measured = base.mark_rect(fill="white", stroke="#999999", strokeDash=[1, 2], strokeWidth=1).encode(
        tooltip=tooltip).transform_filter(f"datum.status === '{NOT_MEASURED}'")
    grey = f"datum.status === 'unmeasurable' || datum.status === '{NOT_MEASURED}'"
    text = base.mark_text().encode(
        text="label:N", href="link:N", tooltip=tooltip,
        size=alt.condition(f"datum.status === '{NOT_MEASURED}'", alt.value(9), alt.value(11)),
        color=alt.condition(grey, alt.value("#777777"), alt.value("#111111")))
    layered = alt.layer(trusted, doubtful, empty, not_measured, text).properties(
        width=CELL_PX * len(sizes), height=ROW_PX * len(cases))
    return layered.facet(data=alt.Data(values=list(rows)), facet=alt.Facet("facet:N", title=None, sort=facets),
                         columns=2).properties(title=_("Speedup atlas: NumPy time over JAX time"))


def atlas_html(chart: alt.TopLevelMixin, atlas: Atlas, measure: str = "blocked") -> str:
    """One file that opens with no network: the heatmap with Vega's scripts inlined by Altair (vl-convert's
    bundle, checked offline here), then the atlas's tables and environments (analysis/atlas_text.html_body)."""
    page = chart.to_html(inline=True)
    end = page.rfind("</body>")  # the page's own: the inlined scripts hold the string too
    return page[:end] + html_body(atlas, measure) + page[end:]
