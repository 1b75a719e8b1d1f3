"""The Chinese catalog covers every message the code marks, keeps each message's fields and
markup, and the text the engine writes in English is recognised and translated where it is shown.
No Streamlit here: the pages in Chinese are tests/test_i18n_pages.py and test_browser_i18n.py."""

from __future__ import annotations

import importlib.util
import string
import threading
from pathlib import Path

import pytest
from babel.messages.catalog import Catalog

from jaxcompare import i18n

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("translations", ROOT / "tools" / "translations.py")
translations = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(translations)


@pytest.fixture(scope="module")
def zh() -> Catalog:
    return translations.read("zh")


def test_every_message_the_code_marks_is_translated():
    """Fails on a new untranslated, fuzzy or broken message: run `make translations`, translate."""
    found = list(translations.problems("zh"))
    assert not found, "\n".join(found)


def _code(*messages: str) -> Catalog:
    code = Catalog(domain="jaxcompare")
    for message in messages:
        code.add(message, None, [("jaxcompare/app/views.py", 1)])
    return code


@pytest.mark.parametrize(("english", "chinese", "complaint"), [
    ("Run the comparison again", "", "untranslated"),
    ("JAX is {factor} faster per call", "JAX 每次调用快 {speedup}", "replacement fields differ"),
    ("JAX is **{factor} faster** per call", "JAX 每次调用快 {factor}", "'**' appears"),
    ("Paste `%timeit f(x)` into IPython", "把 %timeit f(x) 粘贴到 IPython", "'`' appears"),
    ("Two lines:\nthe second one", "两行：第二行", "'\\n' appears"),
    ("The outputs of both sides agree", "The outputs of both sides agree", "left in English"),
    ("**Same setup:** all {count} match.", "**设置相同：**全部 {count} 项一致。", "a **bold** or *italic*"),
])
def test_the_check_catches_what_a_careless_catalog_does(english, chinese, complaint):
    catalog = Catalog(locale="zh", domain="jaxcompare")
    catalog.add(english, chinese)
    found = list(translations.problems("zh", catalog=catalog, code=_code(english)))
    assert any(line.startswith(complaint) for line in found), found


def test_the_check_catches_fuzzy_and_stale_entries():
    catalog = Catalog(locale="zh", domain="jaxcompare")
    catalog.add("Median time per call", "每次调用时间的中位数", flags=["fuzzy"])
    catalog.add("A message the code no longer has", "代码里已经没有的消息")
    found = list(translations.problems("zh", catalog=catalog, code=_code("Median time per call")))
    assert [line.split(" ")[0] for line in found] == ["marked", "no"], found


def test_code_names_and_fields_need_no_translation():
    """Names, code and fields are not prose: a message of them may read the same in Chinese."""
    catalog = Catalog(locale="zh", domain="jaxcompare")
    catalog.add("`{numpy_name}` vs `{jax_name}` · {case}", "`{numpy_name}` 对比 `{jax_name}` · {case}")
    code = _code("`{numpy_name}` vs `{jax_name}` · {case}")
    assert list(translations.problems("zh", catalog=catalog, code=code)) == []


# --- the language in force -------------------------------------------------------------------
def test_english_is_the_default_and_chinese_is_asked_for():
    assert i18n.language() == "en"
    assert i18n.gettext("Compare") == "Compare"
    with i18n.using("zh"):
        assert i18n.language() == "zh"
        assert i18n.gettext("Compare") == "对比"
    assert i18n.gettext("Compare") == "Compare"


def test_a_language_is_per_thread():
    """Streamlit serves each session on its own thread: one reader's Chinese is not another's."""
    seen = []
    with i18n.using("zh"):
        thread = threading.Thread(target=lambda: seen.append(i18n.gettext("Compare")))
        thread.start()
        thread.join()
        assert i18n.gettext("Compare") == "对比"
    assert seen == ["Compare"]


def test_an_unknown_language_is_refused_in_one_line():
    with pytest.raises(ValueError, match="unknown language 'fr': choose one of en, zh"), i18n.using("fr"):
        pass


@pytest.mark.parametrize(("browser", "lang"), [
    ("zh-CN", "zh"), ("zh-TW", "zh"), ("zh-Hant-TW", "zh"), ("zh", "zh"), ("en-US", "en"), ("en", "en"),
    ("fr-FR", None), ("", None), (None, None),
])
def test_a_browser_language_maps_to_ours(browser, lang):
    assert i18n.negotiate(browser) == lang


# --- text the engine wrote in English --------------------------------------------------------
def _templates(catalog: Catalog) -> list[tuple[str, str]]:
    """The N_() templates (the catalog's RECORDED ones): English text is filled in from these."""
    return [(m.id, m.string) for m in catalog
            if i18n.RECORDED in m.flags and isinstance(m.id, str) and m.string and i18n.fields(m.id)]


def _filled(template: str, values: dict[str, str]) -> str:
    return "".join(literal + (values[name] if name is not None else "")
                   for literal, name, _, _ in string.Formatter().parse(template))


def test_every_template_is_recognised_when_filled_in(zh):
    """translate_text finds the template an English message was filled from (and no other
    template takes it), then fills the Chinese with the same values."""
    wrong = []
    with i18n.using("zh"):
        for english, chinese in _templates(zh):
            fields = [(name, conversion) for _, name, _, conversion in string.Formatter().parse(english) if name]
            values = {name: repr(f"⟨{i}⟩") if conversion == "r" else f"⟨{i}⟩" for i, (name, conversion) in
                      enumerate(fields)}
            got = i18n.translate_text(_filled(english, values))
            if got != _filled(chinese, values):
                wrong.append(f"{english!r} -> {got!r}")
    assert not wrong, "\n".join(wrong)


def test_a_message_holding_another_is_translated_inside_out():
    """'The measurement failed: <the worker's error>': both parts come out in Chinese."""
    inner = i18n.N_("only {n} sample(s): each call is long compared with the time budget")
    assert inner in {m.id for m in translations.read("zh")}, "the example's inner message is gone"
    with i18n.using("zh"):
        direct = i18n.translate_text(inner.format(n=2))
        # As the app stores a failed job's message (English) and shows it (translated).
        got = i18n.translate_text(i18n.N_("The measurement failed: {error}").format(error=inner.format(n=2)))
    assert "2" in direct and direct != inner.format(n=2)
    assert direct in got and "only" not in got


def test_text_from_no_template_stays_as_it_is():
    with i18n.using("zh"):
        assert i18n.translate_text("ValueError: my function broke") == "ValueError: my function broke"
        assert i18n.translate_text("") == ""
    assert i18n.translate_text("Compare") == "Compare"  # English: nothing to do


@pytest.mark.parametrize("text", [
    "it took 3 calls",  # like the _() message '{n:,} calls', which is worded for a page, never recorded
    "case study failed badly",  # like "case {name!r} {problem}", but a repr is quoted: 'svd'
    "cannot reach the worker",  # the workers' labels are whole messages, not '{precision} worker'
])
def test_a_readers_own_text_is_not_taken_for_a_message(text):
    """A user's function can raise anything; translate_text must leave it as it is."""
    with i18n.using("zh"):
        assert i18n.translate_text(text) == text
