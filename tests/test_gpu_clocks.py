"""The GPU's clocks and heat around the timed runtime blocks: the "GPU clocks steady" check on
readings shaped as NVML returns them (tests/data/nvml), the JSON they are saved in, and the
path this machine takes: the real pynvml with no GPU and no NVML library, "not applicable"."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from _results import make_result
from support import QUICK

from jaxcompare import Result, Spec
from jaxcompare.analysis.checks import NA, PASS, WARN, checklist
from jaxcompare.engine.worker.gpu_clocks import ClockWatch, nvml_target
from jaxcompare.engine.worker.measure import measure
from jaxcompare.history.exchange import read_results
from jaxcompare.model.clocks import ClockReading, GpuClocks
from jaxcompare.model.errors import BadInput
from jaxcompare.model.formatting import dumps

DATA = Path(__file__).parent / "data" / "nvml"
NVML = {path.stem: json.loads(path.read_text()) for path in sorted(DATA.glob("*.json"))}


def recorded(name: str) -> GpuClocks:
    doc = NVML[name]
    return GpuClocks(device=doc["device"], before=ClockReading.from_nvml(doc["before"]),
                     after=ClockReading.from_nvml(doc["after"]))


def on_gpu(clocks: GpuClocks | None) -> Result:
    return dataclasses.replace(make_result(), backend="gpu", gpu_clocks=clocks)


def clocks_check(result: Result):
    return {c.id: c for c in checklist(result)}["clocks"]


@pytest.mark.parametrize(("name", "status", "words"), [
    ("h200-thermal-slowdown", WARN, "held back by HW_THERMAL_SLOWDOWN while it was timed (SM clock 1980 → 1755 MHz)"),
    ("h200-power-cap", WARN, "held back by SW_POWER_CAP while it was timed (SM clock 1980 → 1890 MHz)"),
    ("h200-clock-fell", WARN, "the SM clock fell from 1980 to 1710 MHz (14%, more than 10%)"),
    ("h200-steady", PASS, "SM clock 1980 → 1980 MHz, no thermal or power limit reached"),
    ("h200-idle-before", PASS, "SM clock 345 → 1980 MHz"),  # idle is no limit, and the clock rose
    ("t4-no-reasons", PASS, "SM clock 1590 → 1590 MHz"),
    # Read by tools/record_hardware.py on an H200: idle, then just after matrix products.
    ("h200-recorded", PASS, "SM clock 1980 → 1980 MHz, no thermal or power limit reached"),
])
def test_the_check_judges_recorded_readings(name, status, words):
    check = clocks_check(on_gpu(recorded(name)))
    assert check.status == status and words in check.reason, check
    assert check.title == "GPU clocks steady"


def test_nvmls_units_become_the_readings_units():
    clocks = recorded("h200-thermal-slowdown")
    assert clocks.before == ClockReading(sm_mhz=1980, memory_mhz=3201, temperature_c=71, power_w=598.312,
                                         throttle_reasons=0)
    assert clocks.after.reasons == ("HW_THERMAL_SLOWDOWN",) and clocks.after.power_w == pytest.approx(611.45)
    assert clocks.sm_drop == pytest.approx(225 / 1980) and clocks.throttled == ("HW_THERMAL_SLOWDOWN",)
    assert clocks.steady is False and recorded("h200-steady").steady is True
    # Idle is a reason NVML sets, but not heat or power; bits NVML may add later keep their value.
    assert recorded("h200-idle-before").before.reasons == ("GPU_IDLE",) and recorded("h200-idle-before").throttled == ()
    assert ClockReading(throttle_reasons=0x41 | 0x8000).reasons == ("GPU_IDLE", "HW_THERMAL_SLOWDOWN", "0x8000")


def test_the_readings_are_saved_in_the_result_and_read_back():
    result = on_gpu(recorded("h200-thermal-slowdown"))
    doc = json.loads(dumps(result.to_dict()))
    saved = doc["gpu_clocks"]
    assert saved["device"] == "NVIDIA H200" and saved["error"] is None
    assert saved["before"] == {"sm_mhz": 1980, "memory_mhz": 3201, "temperature_c": 71, "power_w": 598.312,
                               "throttle_reasons": 0, "throttle_reason_names": []}
    assert saved["after"]["throttle_reason_names"] == ["HW_THERMAL_SLOWDOWN"]
    assert saved["sm_drop"] == pytest.approx(0.1136, abs=1e-4) and saved["throttled"] == ["HW_THERMAL_SLOWDOWN"]
    assert saved["steady"] is False
    again = read_results(doc)[0]
    assert again.gpu_clocks == result.gpu_clocks and json.loads(dumps(again.to_dict())) == doc


def test_results_saved_before_the_clocks_load_and_say_not_checked():
    doc = on_gpu(recorded("h200-steady")).to_dict()
    doc.pop("gpu_clocks")
    old = Result.from_dict(doc)
    assert old.gpu_clocks is None
    check = clocks_check(old)
    assert check.status == NA and "saved before jaxcompare read the GPU's clocks" in check.reason


@pytest.mark.parametrize(("where", "value", "message"), [
    ("after.sm_mhz", "fast", "gpu_clocks: sm_mhz must be a number"),
    ("before.power_w", True, "gpu_clocks: power_w must be a number"),
    ("device", 7, "gpu_clocks: device must be text"),
    ("device", "<img src=x>", "gpu_clocks.device '<img src=x>' is not a name"),
])
def test_a_malformed_reading_is_refused_in_one_line(where, value, message):
    doc = json.loads(dumps(on_gpu(recorded("h200-steady")).to_dict()))
    *path, key = where.split(".")
    target = doc["gpu_clocks"]
    for part in path:
        target = target[part]
    target[key] = value
    with pytest.raises(BadInput, match=message):
        read_results(doc)


# --- this machine: the real pynvml, no GPU, no NVML library -----------------------------------
def test_nvml_without_its_library_makes_the_check_not_applicable():
    """A GPU device record (as JAX reports one) with the real NVML bindings on a machine without
    the driver's libnvidia-ml: the watch says why and reads nothing; the check is n/a."""
    import pynvml  # the dev extra installs nvidia-ml-py: the real library, not a stand-in

    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError_LibraryNotFound:
        pass
    else:  # a machine with an NVIDIA driver: the path under test is not this machine's
        pynvml.nvmlShutdown()
        pytest.skip("this machine has NVML")
    watch = ClockWatch(SimpleNamespace(platform="gpu", id=0, device_kind="NVIDIA H200"))
    watch.before()
    watch.after()
    clocks = watch.result()
    assert clocks == GpuClocks(error="NVML could not start: NVML Shared Library Not Found")
    assert clocks.sm_drop is None and clocks.steady is None
    check = clocks_check(on_gpu(clocks))
    assert check.status == NA
    assert check.reason == ("not applicable: the GPU's clocks could not be read (NVML could not start: NVML "
                            "Shared Library Not Found)")


def test_off_a_gpu_nothing_is_read_and_the_check_is_not_applicable(fair_result):
    import jax

    assert ClockWatch(jax.devices("cpu")[0]).result() is None
    assert fair_result.gpu_clocks is None and fair_result.to_dict()["gpu_clocks"] is None
    check = clocks_check(fair_result)
    assert check.status == NA and check.reason == "not applicable on cpu"
    tpu = dataclasses.replace(make_result(), backend="tpu")
    assert clocks_check(tpu).reason == "not applicable on tpu"


def test_nvmls_index_follows_cuda_visible_devices(monkeypatch):
    gpu = SimpleNamespace(platform="gpu", id=1, local_hardware_id=1)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert nvml_target(gpu) == 1
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    assert nvml_target(gpu) == 3
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b57a3, GPU-9d4e2f71-3c8a")
    assert nvml_target(gpu) == "GPU-9d4e2f71-3c8a"


class Replayed(ClockWatch):
    """Recorded readings handed out in turn, as NVML would give them on a GPU."""

    def __init__(self, readings: list[ClockReading]) -> None:
        super().__init__(SimpleNamespace(platform="gpu", id=0))
        self.error, self.name, self.readings, self.reads = None, "NVIDIA H200", list(readings), 0

    def read(self) -> ClockReading:
        self.reads += 1
        return self.readings.pop(0)


def test_readings_are_taken_before_the_runtime_blocks_and_after_the_last_jax_block():
    """Two pairs of blocks, N J then J N: one reading before, one after each JAX block; the
    trailing NumPy block (an idle GPU) does not move the after reading."""
    doc = NVML["h200-thermal-slowdown"]
    first, middle, last = (ClockReading.from_nvml(doc[k]) for k in ("before", "before", "after"))
    watch = Replayed([first, middle, last, ClockReading(sm_mhz=345)])
    r = measure(Spec("matmul", (32, 32), device="cpu", timing=dataclasses.replace(QUICK, runtime_blocks=2)),
                recheck=False, clocks=watch)
    assert watch.reads == 3  # before, after JAX block 1, after JAX block 2
    assert r.gpu_clocks == GpuClocks(device="NVIDIA H200", before=first, after=last)
