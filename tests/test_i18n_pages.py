"""Every page with ``?lang=zh``, driven through real runs the way a visitor would (AppTest): no
English prose is left in anything a person reads — titles, labels, help, messages, tables, chart
titles and legends — and the language holds across reruns, pages and the URL. Also: a Chinese
chart exported as PNG draws real glyphs, not empty boxes."""

from __future__ import annotations

import dataclasses
import io
import json
import re
import tomllib
from pathlib import Path

import pytest
from _results import make_result
from apptest_support import app_runner, fresh_caches, page, run_until  # noqa: F401
from i18n_support import cpu_model, english_left
from streamlit.testing.v1 import AppTest

from jaxcompare import i18n

pytestmark = pytest.mark.slow  # 20 s or more: collected first, so parallel workers end together

ROOT = Path(__file__).resolve().parents[1]
CJK = re.compile(r"[\u3400-\u9fff]")


@pytest.fixture(autouse=True)
def test_thread_in_chinese():
    """AppTest calls a selectbox's format_func in the test's own thread, outside the session the
    page runs in: there too the options must come out in the page's language."""
    with i18n.using("zh"):
        yield


def chinese(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["lang"] == "zh" and at.query_params.get("lang") == "zh"


def zh(name: str, **query: str) -> AppTest:
    return page(name, lang="zh", **query)


def _(message: str) -> str:
    return i18n.gettext(message)  # the test runs in Chinese (test_thread_in_chinese)


def worker_ready(at: AppTest) -> bool:
    from jaxcompare.app import resources

    return resources.known_environment() is not None


# --- the pages --------------------------------------------------------------------------------
def test_the_check_sees_english_on_an_english_page():
    """english_left would pass a page for nothing if it read nothing: on the English page it must
    find the prose the Chinese page translates (titles, help texts, table headings)."""
    with i18n.using("en"):
        at = page("pages/3_Pitfalls.py", case="centered_gram", shape="100x100")
    left = english_left(at, also_names=cpu_model())
    assert len(left) > 20 and any("Run all pitfalls" in text for text in left), left[:5]



def test_home_and_environment_read_in_chinese():
    at = run_until(zh("app.py"), worker_ready)
    chinese(at)
    assert at.title[0].value == "jaxcompare" and CJK.search(at.markdown[0].value)
    assert {link.proto.label for link in at.get("page_link")} >= {_("Compare"), _("Pitfalls"), _("History")}
    assert all(link.proto.query_string == "lang=zh" for link in at.get("page_link")), "a link dropped the language"
    assert english_left(at, also_names=cpu_model()) == []
    at.switch_page("pages/5_Environment.py")
    at = run_until(at.run(), lambda a: not any(_("Waiting for the workers…") in c.value for c in a.caption))
    chinese(at)
    # The Environment page's tables are data (package names, CPU model, variables); their headings are not.
    assert english_left(at, tables=False, also_names=cpu_model()) == []


def test_compare_in_chinese_from_the_first_click_to_every_tab():
    at = zh("pages/1_Compare.py", case="matmul", shape="64x64", timing="quick", profile="1")
    chinese(at)
    assert at.button(key="run_compare").label == _("Run comparison")
    at.text_input(key="custom_shape").input("10x20").run()
    assert any(CJK.search(e.value) and "10x20" in e.value for e in at.sidebar.error), "the shape error is English"
    at.text_input(key="custom_shape").input("10x10").run()
    at.button(key="run_compare").click().run()
    at = run_until(at, lambda a: "compare_result" in a.session_state, timeout=180)
    chinese(at)
    assert [m.label for m in at.metric][:6] == [_(t) for t in ("NumPy runtime", "JAX runtime", "Speedup", "Compile",
                                                              "Transfer", "Break-even")]
    assert at.session_state["compare_result"].profile is not None  # the Profile tab has its figures and ops
    left = english_left(at, also_names=cpu_model())
    assert left == [], "\n".join(left)
    at.button_group(key="lang_switch").set_value("en").run()  # the same page and result, in English
    assert at.session_state["lang"] == "en" and "lang" not in at.query_params
    assert [m.label for m in at.metric][:3] == ["NumPy runtime", "JAX runtime", "Speedup"]


def test_size_sweep_in_chinese():
    at = zh("pages/2_Size_sweep.py", case="matmul", steps="3", largest="40x40")
    chinese(at)
    at.button(key="run_sweep").click().run()
    at = run_until(at, lambda a: a.session_state["sweep_run"].finished, timeout=180)
    chinese(at)
    assert not at.session_state["sweep_run"].failures
    left = english_left(at, also_names=cpu_model())
    assert left == [], "\n".join(left)


def test_pitfalls_in_chinese_before_a_run():
    """After a run, too: tests/test_pitfalls_page.py switches its run of all eight to Chinese."""
    at = zh("pages/3_Pitfalls.py", case="centered_gram", shape="100x100", timing="quick")
    chinese(at)
    left = english_left(at, also_names=cpu_model())  # the previews: what each side will run
    assert left == [], "\n".join(left)


def test_history_verdict_in_chinese():
    """Two saved runs of one case side by side: the verdict, its statistics and the charts."""
    from jaxcompare.app import resources

    older = make_result(jax_s=2e-4)
    newer = dataclasses.replace(make_result(jax_s=1e-4), id="test-faster", created="2026-01-02T00:00:00+00:00")
    for result in (older, newer):
        resources.get_store().save(result)
    at = zh("pages/4_History.py")
    chinese(at)
    ids = at.session_state["history_row_ids"]
    rows = [ids.index(newer.id), ids.index(older.id)]
    at.session_state["history_table"] = {"selection": {"rows": rows, "columns": []}}
    at.run()
    chinese(at)
    assert any(_("Is B faster than A?") == h.value for h in at.subheader)
    left = english_left(at, also_names=cpu_model())
    assert left == [], "\n".join(left)


def test_a_hosted_demo_in_chinese(monkeypatch):
    """What only a hosted demo shows: case files off, History read-only, the operator's token."""
    import streamlit as st

    from jaxcompare.app import resources

    monkeypatch.setenv("JAXCOMPARE_MODE", "hosted")
    monkeypatch.setenv("JAXCOMPARE_ADMIN_TOKEN", "the operator's secret")
    st.config.set_option("server.address", "0.0.0.0")
    resources.get_runner.clear()
    try:
        at = zh("pages/1_Compare.py", case="matmul")
        chinese(at)
        assert at.text_input(key="cases_file_input_disabled").disabled
        left = english_left(at, also_names=cpu_model())
        assert left == [], "\n".join(left)
        at = zh("pages/4_History.py")
        at.text_input(key="history_token_input").input("a guess").run()
        chinese(at)
        assert any(e.value == _("That is not the operator token.") for e in at.sidebar.error)
        left = english_left(at, also_names=cpu_model())
        assert left == [], "\n".join(left)
    finally:
        st.config.set_option("server.address", None)
        st.config.set_option("client.showErrorDetails", "type")
        resources.get_runner.clear()


def test_bad_links_say_so_in_chinese():
    at = zh("pages/1_Compare.py", case="nope", precision="x16")
    chinese(at)
    warnings = [w.value for w in at.warning if "nope" in w.value or "x16" in w.value]
    assert len(warnings) == 2 and all(CJK.search(w) for w in warnings), warnings
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)  # a first visit, from the link
    at.query_params["lang"] = "fr"
    at.run()
    # Plain text: the page shows what the link said, with Markdown's escapes (lang\=fr).
    assert at.session_state["lang"] == "en" and any("lang\\=fr" in w.value for w in at.sidebar.warning)


# --- charts exported as PNG -------------------------------------------------------------------------
def test_a_chinese_png_export_draws_every_glyph():
    """vl-convert draws with the server's fonts: without one that has Chinese glyphs, every
    character becomes the same empty box. So the real export must differ from the same chart
    with every Chinese character replaced by one character (fonts-noto-cjk, docs/translating.md)."""
    from PIL import Image, ImageChops

    from jaxcompare.app import charts

    with i18n.using("zh"):
        chart = charts.phase_breakdown_chart(make_result())
    spec = json.dumps(chart.to_dict(), ensure_ascii=False)
    assert CJK.search(spec), "the chart has no Chinese to draw"
    boxed = type(chart).from_dict(json.loads(CJK.sub("口", spec)))

    font = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())["theme"]["font"]  # as chart_ui.png_bytes

    def pixels(c) -> Image.Image:
        return Image.open(io.BytesIO(charts.chart_png_bytes(c, font=font))).convert("RGB")

    real, same_glyph = pixels(chart), pixels(boxed)
    assert real.size == same_glyph.size
    assert ImageChops.difference(real, same_glyph).getbbox() is not None, (
        "Chinese renders as empty boxes in the PNG export: install a CJK font (fonts-noto-cjk)")
