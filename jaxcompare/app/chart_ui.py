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


def svg_rendered(chart_obj: alt.TopLevelMixin) -> alt.TopLevelMixin:
    """The chart with Vega's SVG renderer pinned: Streamlit draws charts of many points on a canvas,
    where a browser test cannot tell a plotted mark from a legend swatch; in SVG each mark is an element."""
    usermeta = chart_obj.usermeta if isinstance(chart_obj.usermeta, dict) else {}
    embed = {**(usermeta.get("embedOptions") or {}), "renderer": "svg"}
    return chart_obj.properties(usermeta={**usermeta, "embedOptions": embed})


def png_bytes(chart_obj: alt.TopLevelMixin) -> bytes:
    """A chart's PNG download, drawn in the app's fonts (theme.font: Chinese in its own glyph forms)."""
    return chart_png_bytes(chart_obj, font=st.get_option("theme.font"))


def chart(chart_obj: alt.TopLevelMixin, name: str, file_stem: str, *, stretch: bool = False) -> None:
    """An Altair chart (drawn as SVG) and a button that downloads it as PNG (made only when clicked);
    ``name`` (the button says "{name} (PNG)") comes in the reader's language."""
    st.altair_chart(svg_rendered(chart_obj), width="stretch" if stretch else "content")
    st.download_button(
        _("{name} (PNG)").format(name=name), data=lambda: png_bytes(chart_obj), file_name=f"{file_stem}.png",
        mime="image/png", icon=":material/download:", on_click="ignore", key=f"png_{file_stem}",
    )
