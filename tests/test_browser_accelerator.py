"""The third side and the fraction of peak on a page, in a real browser, without a GPU: results
measured here for real (JAX on the CPU timed twice: as the main side and as the third side),
labelled as if the main side had run on an NVIDIA H200, rendered by tests/render_result.py with
the Compare and Size sweep pages' view and chart functions. Only the labels are made up."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
from browser_support import CHART, IDLE, assert_no_error, streamlit_run, wait_for_chart_marks
from support import QUICK

from jaxcompare import Spec
from jaxcompare.engine.worker.ceilings import ceilings
from jaxcompare.engine.worker.measure import measure
from jaxcompare.model.clocks import ClockReading, GpuClocks
from jaxcompare.model.formatting import dumps
from jaxcompare.model.palette import JAX_CPU_COLOR

pytestmark = pytest.mark.browser
SCRIPT = Path(__file__).with_name("render_result.py")
H200 = SimpleNamespace(platform="gpu", device_kind="NVIDIA H200")
# An H200 that heated into a thermal slowdown while timed (NVML's readings, tests/data/nvml).
THROTTLED = json.loads((Path(__file__).parent / "data" / "nvml" / "h200-thermal-slowdown.json").read_text())


def as_if_on_an_h200(result):
    """The same numbers, labelled as a run on an H200 (the table's TF32 peak for JAX), with the
    clocks NVML read on one that slowed down."""
    peak = ceilings(H200, result.dtype, result.dtype, with_cpu_side=True)
    on_h200 = replace(result.jax, device="cuda:0", device_kind="NVIDIA H200")
    clocks = GpuClocks(device="NVIDIA H200", before=ClockReading.from_nvml(THROTTLED["before"]),
                       after=ClockReading.from_nvml(THROTTLED["after"]))
    return replace(result, backend="gpu", jax=on_h200, peak=peak, gpu_clocks=clocks)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """`streamlit run tests/render_result.py` on two real matmul results with the third side."""
    folder = tmp_path_factory.mktemp("render")
    results = [as_if_on_an_h200(measure(Spec("matmul", (n, n), device="cpu", timing=QUICK),
                                        cpu_side=True)) for n in (48, 256)]
    path = folder / "results.json"
    path.write_text(dumps([r.to_dict() for r in results]))
    with streamlit_run(folder, str(SCRIPT), env={"JAXCOMPARE_TEST_RENDER_RESULT": str(path)}) as url:
        yield url, results


def test_the_third_side_and_the_peak_line_render(rendered, browser, tmp_path):
    url, results = rendered
    page = browser.new_page(viewport={"width": 1400, "height": 3000})
    page.goto(url)
    page.wait_for_selector(CHART, timeout=60_000)
    page.wait_for_selector(IDLE, timeout=60_000)
    for index in range(3):  # the phase chart, the samples chart, the sweep's runtime chart: each draws
        wait_for_chart_marks(page, index, JAX_CPU_COLOR)  # the third side, in its own colour
    shot = tmp_path / "third_side.png"
    page.screenshot(path=str(shot), full_page=True)
    if os.environ.get("JAXCOMPARE_TEST_KEEP_SCREENSHOT"):
        Path(os.environ["JAXCOMPARE_TEST_KEEP_SCREENSHOT"]).write_bytes(shot.read_bytes())
    assert_no_error(page)
    labels = page.locator("[data-testid='stMetricLabel']").all_inner_texts()
    assert labels[6:] == ["JAX on CPU", "Speedup on CPU", "GPU over CPU"], labels
    text = page.locator("[data-testid='stApp']").inner_text()
    # Nothing withheld: a dispatch timed per call over a loop stays below its blocked call (one call a sample
    # read above it once in four clean-clone runs, and the page withheld the third side's verdict).
    assert "JAX's dispatch alone took longer than its blocked call" not in text
    assert "JAX on the CPU." in text and "Fraction of peak." in text
    assert "of the NVIDIA H200's TF32 peak" in text
    assert shot.stat().st_size > 20_000
    page.close()
    assert json.loads(dumps(results[-1].to_dict()))["jax_cpu"]["runtime"]["n"] >= 3
