"""Reading Vega-Lite chart specs in tests: a view's mark type, a layered chart's marks, and the
specs and data rows of the charts an AppTest page drew."""

from __future__ import annotations

import json
from typing import Any


def mark_type(unit: dict[str, Any]) -> str:
    """A single view's mark type: Altair writes ``"mark": "line"`` or ``{"type": "line", ...}``."""
    mark = unit["mark"]
    return mark["type"] if isinstance(mark, dict) else mark


def layer_marks(spec: dict[str, Any]) -> list[str]:
    """The mark types of a layered chart's layers, in order."""
    return [mark_type(unit) for unit in spec.get("layer", [])]


def vega_specs(at) -> list[dict[str, Any]]:
    """The specs of every chart on an AppTest page, in page order, each checked against Vega-Lite's
    schema: the pages skip Altair's check when they draw (chart_ui.draw), the tests that read charts do it."""
    from altair.vegalite.v6.schema.core import TopLevelSpec

    specs = []
    for chart in at.get("vega_lite_chart"):
        specs.append(json.loads(chart.proto.spec))
        # Streamlit ships a chart's top-level data beside the spec (Arrow): named here, as Vega-Lite needs.
        shipped = {"data": {"name": "shipped"}} if chart.proto.data.data and "data" not in specs[-1] else {}
        TopLevelSpec.validate({**specs[-1], **shipped})  # jsonschema.ValidationError, naming the part
    return specs


def chart_rows(at, index: int) -> list[dict[str, Any]]:
    """The rows chart ``index`` on an AppTest page ships with: Streamlit moves shared data into
    Arrow and leaves per-layer data inline in the spec."""
    import pyarrow as pa

    proto = at.get("vega_lite_chart")[index].proto
    rows = []
    for blob in [proto.data.data] + [d.data.data for d in proto.datasets]:
        if blob:
            rows += pa.ipc.open_stream(blob).read_all().to_pylist()
    spec = json.loads(proto.spec)
    for part in [spec, *spec.get("layer", [])]:
        rows += (part.get("data") or {}).get("values", [])
    return rows
