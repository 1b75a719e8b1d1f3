"""The README's picture of the TPU atlas (docs/img/atlas-tpu-v5e.png): the Atlas page's own heatmap of the
recorded TPU atlas, drawn by vl-convert as the page's PNG download draws it, in the app's fonts.

`make screenshots` rewrites the picture (JAXCOMPARE_SCREENSHOTS=1); without that variable (as in `make test`)
it is drawn under pytest's tmp_path, so a test run never changes the repository."""

from __future__ import annotations

import io
import os
import tomllib

from PIL import Image
from support import ROOT

from jaxcompare.analysis import atlas as am
from jaxcompare.app import atlas_view
from jaxcompare.app.charts import chart_png_bytes
from jaxcompare.app.charts_atlas import atlas_heatmap
from jaxcompare.model.palette import DOUBT_GREY, JAX_COLOR, NUMPY_COLOR

TPU = ROOT / "tests" / "data" / "atlas" / "tpu-v5e-jax0.10.2.json.gz"
PICTURE = ROOT / "docs" / "img" / "atlas-tpu-v5e.png"


def rgb(colour: str) -> tuple[int, int, int]:
    return tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))


def test_the_tpu_atlas_picture(tmp_path):
    atlas = am.load(TPU)
    rows = atlas_view.heatmap_rows(atlas)  # what the page draws, its cells not measured included
    chart = atlas_heatmap(rows, [am.SIZE_LABELS[s] for s in am.SIZES])
    font = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())["theme"]["font"]
    png = chart_png_bytes(chart, font=font)
    out = PICTURE if os.environ.get("JAXCOMPARE_SCREENSHOTS", "").strip() not in ("", "0") else tmp_path / PICTURE.name
    image = Image.open(io.BytesIO(png)).convert("RGB")
    out.parent.mkdir(parents=True, exist_ok=True)
    # 256 colours, no dithering: the flat cells and text look the same at a ninth of the bytes (56 KB).
    image.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(out, optimize=True)

    assert image.height > image.width > 300  # one facet (float32), 29 cases tall
    colours = {colour for _count, colour in image.getcolors(maxcolors=1 << 24)}
    # The full colours of both ends (beyond 30x either way), and the grey of a cell set aside.
    for colour in (JAX_COLOR, NUMPY_COLOR, DOUBT_GREY):
        assert rgb(colour) in colours, colour


def test_the_legends_ticks_stand_apart_on_its_bar():
    """Adjacent ticks at least 40 px apart on the legend's bar (a log scale from 1/extent to extent): a 300x
    scale's 0.33x, 1x and 3x sat 25 px apart and their labels ran together."""
    import math

    from jaxcompare.app.charts_atlas import LEGEND_PX, legend_values

    for extent in (10.0, 30.0, 100.0, 300.0, 1000.0):
        ticks = legend_values(extent)
        assert 1.0 in ticks and max(ticks) <= extent * 1.0001 and len(ticks) >= 3, (extent, ticks)
        px_per_decade = LEGEND_PX / (2 * math.log10(extent))
        gaps = [math.log10(b / a) * px_per_decade for a, b in zip(ticks, ticks[1:], strict=False)]
        assert min(gaps) >= 40, (extent, ticks, gaps)
