"""`jaxcompare pitfalls --json`: the chosen sections from the CLI, in the order asked, with
their ranges and effects; a section unknown or named twice is one line and exit 2. Three sections
(the Pitfalls page's run of all eight checks every one, tests/test_pitfalls_page.py)."""

from __future__ import annotations

import json

import pytest
from _pitfalls import check_ranges_and_effect
from support import cli

from jaxcompare.analysis.checks import PASS, WARN
from jaxcompare.engine.common.lessons import EFFECTS, SECTIONS

pytestmark = pytest.mark.slow  # 20 s or more beside other tests: collected first, so workers end together

# Three sections, reversed: the order asked is the order measured. The other sections' figures are
# the same engine's, checked on the Pitfalls page's run of all eight and in test_pitfalls.py.
ASKED = ["tf32", "transfer", "jit"]


@pytest.fixture(scope="module")
def cli_doc() -> dict:
    proc = cli("pitfalls", "--shape", "200x200", "--quick", "--sections", *ASKED, "--json", "-", timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "1. JIT" in proc.stderr and "naive" in proc.stderr, proc.stderr  # the readable lab, on stderr
    return json.loads(proc.stdout)


def test_pitfalls_cli_json(cli_doc):
    assert [pid for pid in SECTIONS if pid in ASKED][::-1] == ASKED  # not the lab's own order
    assert [p["id"] for p in cli_doc["pitfalls"]] == ASKED and cli_doc["timing"] == "quick"
    for pitfall in cli_doc["pitfalls"]:
        assert {"id", "title", "naive", "correct"} <= set(pitfall)
        assert pitfall["effect"] in EFFECTS
        for side in ("naive", "correct"):
            assert {"seconds", "range", "conclusion"} <= set(pitfall[side])
        check_ranges_and_effect(pitfall)


@pytest.mark.parametrize("sections, said", [
    (["jit", "nope"], "unknown pitfall section(s): nope; the sections are jit, async, "),
    (["size", "jit", "size"], "pitfall section(s) named twice: size")])
def test_a_bad_section_is_one_line_and_exit_2(sections, said):
    proc = cli("pitfalls", "--quick", "--sections", *sections)
    assert proc.returncode == 2 and said in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_each_pitfall_carries_the_machines_reading_and_the_run_its_findings(cli_doc):
    busy = [p["load"]["busy"] for p in cli_doc["pitfalls"]]
    assert cli_doc["busy_pitfalls"] == sum(busy)
    assert set(cli_doc["load"]["phases"]) >= {"baseline", *ASKED}  # the baseline and each pitfall's turns
    for pitfall, was_busy in zip(cli_doc["pitfalls"], busy, strict=True):
        [check] = pitfall["checks"]
        assert (check["id"], check["title"], check["status"]) == ("busy", "Machine quiet", WARN if was_busy else PASS)
        assert f"{pitfall['load']['others_cores']:.2f} cores" in check["reason"]
    assert all(c["id"] == "pitfalls_agree" and c["status"] == WARN for c in cli_doc["consistency"])
