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
from collections.abc import Iterator
from pathlib import Path

import pytest
from _results import make_result
from apptest_support import app_runner, fresh_caches, page, run_until  # noqa: F401
from streamlit.testing.v1 import AppTest

from jaxcompare import all_cases, i18n
from jaxcompare.engine.pitfalls import SECTIONS

pytestmark = pytest.mark.slow  # 20 s or more: collected first, so parallel workers end together

ROOT = Path(__file__).resolve().parents[1]
# Three words in a row, after code, links, names and fields are taken out: English prose.
PROSE = re.compile(r"[A-Za-z]{2,}[ ,]+[A-Za-z]{2,}[ ,]+[A-Za-z]{2,}")
CODE = re.compile(r"```.*?```|`[^`]*`|\]\([^)]*\)|:material/\w+:|https?://\S+", re.DOTALL)
CJK = re.compile(r"[\u3400-\u9fff]")
TEXT_FIELDS = {"body", "label", "help", "placeholder", "options", "content", "caption"}
# Words a Chinese page keeps as they are: names of things (docs/translating.md).
NAMES = [name for case in all_cases() for name in (case.name, case.numpy_name, case.jax_name)]
NAMES += ["Open trace file"]  # Perfetto's button, named as the reader will see it there


def _proto_texts(message) -> Iterator[str]:
    for field, value in message.ListFields():
        if field.type == field.TYPE_MESSAGE:
            for item in (value if field.is_repeated else [value]):
                yield from _proto_texts(item)
        elif field.type == field.TYPE_STRING and field.name in TEXT_FIELDS:
            yield from (value if field.is_repeated else [value])


def _chart_texts(spec) -> Iterator[str]:
    """Titles, subtitles, axis and legend titles, and the data a chart writes as labels."""
    if isinstance(spec, dict):
        for key, value in spec.items():
            if key in ("title", "subtitle", "text") and isinstance(value, str):
                yield value
            elif key in ("title", "subtitle") and isinstance(value, list):
                yield from (v for v in value if isinstance(v, str))
            elif key in ("label", "side", "group", "role", "part", "component", "row", "stable", "kind"):
                if isinstance(value, str):
                    yield value
            else:
                yield from _chart_texts(value)
    elif isinstance(spec, list):
        for item in spec:
            yield from _chart_texts(item)


def _walk(node) -> Iterator:
    yield node
    for child in (getattr(node, "children", None) or {}).values():
        yield from _walk(child)


def page_texts(at: AppTest, *, tables: bool = True) -> list[str]:
    """Everything a person reads on the page as AppTest sees it (code blocks left out)."""
    texts: list[str] = []
    for node in _walk(at._tree):
        proto = getattr(node, "proto", None)
        if proto is None or type(proto).__name__ == "Code":
            continue
        if type(proto).__name__ == "ArrowVegaLiteChart":
            texts += _chart_texts(json.loads(proto.spec))
        elif type(proto).__name__ == "Arrow" and tables:
            frame = node.value
            texts += [str(c) for c in frame.columns]
            texts += [v for v in frame.to_numpy().ravel().tolist() if isinstance(v, str)]
        else:
            texts += _proto_texts(proto)
    return texts


def english_left(at: AppTest, *, tables: bool = True, also_names: tuple[str, ...] = ()) -> list[str]:
    """The page's texts that still hold English prose."""
    left = []
    for text in page_texts(at, tables=tables):
        bare = CODE.sub(" ", text)
        for name in (*NAMES, *also_names):
            bare = bare.replace(name, " ")
        if PROSE.search(bare):
            left.append(text)
    return left


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


def cpu_model() -> tuple[str, ...]:
    from jaxcompare.app import resources

    env = resources.known_environment() or {}
    return tuple(filter(None, [env.get("cpu_model")]))


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


def test_pitfalls_in_chinese_before_and_after_a_run():
    at = zh("pages/3_Pitfalls.py", case="centered_gram", shape="100x100", timing="quick")
    chinese(at)
    left = english_left(at, also_names=cpu_model())  # the previews: what each side will run
    assert left == [], "\n".join(left)
    at.button(key="run_all_pitfalls").click().run()
    at = run_until(at, lambda a: "pitfalls_job" not in a.session_state, timeout=300)
    chinese(at)
    assert len(at.session_state["pitfalls_results"]) == len(SECTIONS) == 7
    left = english_left(at, also_names=cpu_model())
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
