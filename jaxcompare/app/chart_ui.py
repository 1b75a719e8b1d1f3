"""A chart on a page: drawn as SVG, with its PNG download. Apart from ui so that a page without
charts (Home) never imports Altair or pandas: seconds of the first paint."""

from __future__ import annotations

import altair as alt
import pandas  # noqa: F401  (see below)
import streamlit as st

from ..i18n import _
from .charts import chart_png_bytes

# pandas is imported above, fully, before any page can draw a chart: Altair (through narwhals)
# uses pandas when it finds it in sys.modules, and two sessions drawing their first charts at
# once could otherwise find it there half-imported (AttributeError: partially initialized module).

# The theme st.altair_chart draws in (without Altair's default 300-pixel views, the pages size the
# charts), set once before any session draws: draw() makes the spec itself, and Streamlit would
# otherwise switch the global theme around each chart. PNG downloads are drawn in it too.
alt.theme.enable("none")


def svg_rendered(chart_obj: alt.TopLevelMixin) -> alt.TopLevelMixin:
    """The chart with Vega's SVG renderer pinned: Streamlit draws charts of many points on a canvas,
    where a browser test cannot tell a plotted mark from a legend swatch; in SVG each mark is an element."""
    usermeta = chart_obj.usermeta if isinstance(chart_obj.usermeta, dict) else {}
    embed = {**(usermeta.get("embedOptions") or {}), "renderer": "svg"}
    return chart_obj.properties(usermeta={**usermeta, "embedOptions": embed})


def draw(chart_obj: alt.TopLevelMixin, *, stretch: bool = True) -> None:
    """The chart on the page, drawn as SVG, without Altair checking its spec against Vega-Lite's schema
    at every rerun (st.altair_chart does: 60 of a phase chart's 100 ms to make its spec). The chart
    tests that read a page's charts check each against the schema (tests/chart_support.py)."""
    st.vega_lite_chart(svg_rendered(chart_obj).to_dict(validate=False), width="stretch" if stretch else "content")


def png_bytes(chart_obj: alt.TopLevelMixin) -> bytes:
    """A chart's PNG download, drawn in the app's fonts (theme.font: Chinese in its own glyph forms)."""
    return chart_png_bytes(chart_obj, font=st.get_option("theme.font"))


def chart(chart_obj: alt.TopLevelMixin, name: str, file_stem: str, *, stretch: bool = False) -> None:
    """An Altair chart (drawn as SVG) and a button that downloads it as PNG (made only when clicked);
    ``name`` (the button says "{name} (PNG)") comes in the reader's language."""
    draw(chart_obj, stretch=stretch)
    st.download_button(
        _("{name} (PNG)").format(name=name), data=lambda: png_bytes(chart_obj), file_name=f"{file_stem}.png",
        mime="image/png", icon=":material/download:", on_click="ignore", key=f"png_{file_stem}",
    )
