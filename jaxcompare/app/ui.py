"""Streamlit helpers for every page's own lines: its start (tab, sidebar, login gate), links
that keep the reader's language, the device banner, URL state, charts with PNG downloads, and
saving results to history. The engine (jaxcompare/) never imports Streamlit; the pages share
widget code only through this package (resources, access, jobs, cases_ui, form_ui and this module).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import streamlit as st

from .. import i18n
from ..i18n import _, translate_text
from ..model.formatting import markdown_literal
from ..model.result import Result
from . import access, environment_view, language, navigation, resources
from .controls import PageConfig
from .navigation import Page

BANNER_ICONS = {"success": ":material/memory:", "warning": ":material/warning:", "info": ":material/hourglass_top:"}


# --- navigation ---------------------------------------------------------------------------------
def start_page(page: Page) -> None:
    """Every page's first lines: its browser tab (title and icon from the page list), then the
    sidebar (sidebar_nav)."""
    title = "jaxcompare" if page is navigation.HOME else f"{page.label} · jaxcompare"
    st.set_page_config(page_title=title, page_icon=page.icon, layout="wide")
    st.html(segment_borders_css())  # style only: Streamlit puts it where it takes no space
    sidebar_nav()


def segment_borders_css() -> str:
    """A segmented control's buttons overlap by a pixel, and Streamlit makes a button's edge next to
    the chosen one transparent (the chosen one, drawn above, shows its colour there). Where the
    sidebar wraps a row, that neighbour sits on another line and the edge was simply missing. Each
    unchosen button keeps its whole border (!important: Streamlit's rule is more specific); the
    chosen one is still drawn above it."""
    return ('<style>button[data-variant="segmented_control"]:not([data-selected]) '
            f"{{ border-color: {st.get_option('theme.borderColor')} !important; }}</style>")


def sidebar_nav() -> None:
    """Every page calls this first: the language switch, the login gate (when [auth] is
    configured), then page links with readable names (the pages/ directory names the home page
    'app')."""
    resources.get_runner()  # the server's settings (hosted mode's error details) apply from the first page shown
    with st.sidebar:
        language.language_switch()
    access.require_login()
    with st.sidebar:
        for page in navigation.PAGES:
            page_link(page)
        st.divider()


def page_link(page: Page, label: str | None = None, container: Any = st) -> None:
    """A link to another page that keeps the reader's language (Streamlit drops the URL's
    parameters on the way); ``label``: other words than the page's title."""
    container.page_link(page.path, label=label or page.label, icon=page.icon, query_params=language.url_params())


# --- device banner ---------------------------------------------------------------------------
def device_banner() -> dict[str, Any] | None:
    """Which device the measurements run on; polls (without blocking) until the worker reports."""
    try:
        env = resources.worker_environment("x32")
    except Exception as exc:  # the worker could not start: say so, the page still renders
        st.error(_("The measurement worker could not start: {error}").format(error=translate_text(str(exc))),
                 icon=":material/error:")
        return None
    if env is None:
        _pending_banner()
        return None
    show_banner(environment_view.device_banner(env))
    return env


def show_banner(banner: environment_view.Banner) -> None:
    show = {"success": st.success, "warning": st.warning}.get(banner.level, st.info)
    show(banner.text, icon=BANNER_ICONS.get(banner.level))


@st.fragment(run_every=1.0)
def _pending_banner() -> None:
    if resources.worker_environment_ready("x32"):
        st.rerun()  # the full rerun shows the final banner and stops this polling
    show_banner(environment_view.device_banner(None))


# --- URL state ----------------------------------------------------------------------------------
def seed_from_url(page: str, read: Callable[[Mapping[str, Any]], tuple[PageConfig, list[str]]]) -> list[str]:
    """Fill the page's widget keys from the URL when they are missing (a first visit, a shared
    link, a return from another page), or empty where a choice always holds one (PageConfig.from_widgets);
    bad values become warnings and their defaults."""
    config, warnings = read(st.query_params.to_dict())
    state = st.session_state
    state[config.key(config.URL_SETTINGS)] = config
    values = config.widgets()
    if any(key not in state for key in values):
        for key, value in values.items():
            if key not in state:
                state[key] = value
        state[f"{page}_url_warnings"] = warnings
    for key, value in values.items():
        if state[key] is None and value is not None:
            state[key] = value
    return state.get(f"{page}_url_warnings", [])


def sync_url(query: dict[str, str]) -> None:
    """Write the page's configuration (and the reader's language) into the URL, so the link
    reproduces it."""
    query = language.with_language(query)
    if st.query_params.to_dict() != query:
        st.query_params.from_dict(query)


def in_this_language(make: Callable[[], Any]) -> Callable[[], Any]:
    """``make`` for a download's data, called on the click in the page's language: Streamlit calls it
    outside the script's run, where the reader's language is not known (an atlas's HTML came out English
    on the Chinese page)."""
    lang = i18n.language()

    def made() -> Any:
        with i18n.using(lang):
            return make()
    return made


def plain_table(rows: Sequence[Mapping[str, Any]]) -> None:
    """A static table of short rows whose cells wrap (never cut off, unlike st.dataframe's), every
    cell shown as written: st.table reads its text cells as Markdown (numbers stay numbers, aligned)."""
    st.table([{key: markdown_literal(value) if isinstance(value, str) else "" if value is None else value
               for key, value in row.items()} for row in rows], hide_index=True, border="horizontal")


def show_url_warnings(warnings: list[str]) -> None:
    """The URL's warnings as plain text: they quote what the link said, and anyone can write a link."""
    for text in warnings:
        st.warning(markdown_literal(translate_text(text)), icon=":material/link_off:")


# --- results history --------------------------------------------------------------------------------
_SAVED = "history_saved"  # session state: result id -> None when saved, else why it was not


def save_to_history(results: Sequence[Result]) -> None:
    """Save finished results to the Store, each once per session. A failure is remembered for
    history_note() and never raised: the result on screen must survive an unwritable database."""
    status = st.session_state.setdefault(_SAVED, {})
    for result in results:
        if result.id in status:
            continue
        try:
            resources.get_store().save(result)
        except Exception as exc:  # any failure to save must leave the page and its result intact
            status[result.id] = str(exc) or type(exc).__name__
        else:
            status[result.id] = None


def history_note(results: Sequence[Result]) -> None:
    """A small 'saved to history' line with a link, or a warning saying what was not saved."""
    status = st.session_state.get(_SAVED, {})
    failed = [status[r.id] for r in results if status.get(r.id)]
    saved = sum(1 for r in results if r.id in status and status[r.id] is None)
    if failed:
        error = translate_text(failed[0])
        if len(results) == 1:
            text = _("This result was not saved to history: {error}. It stays on this page; download it as JSON "
                     "to keep it.").format(error=error)
        else:
            text = _("{failed} of {total} results were not saved to history: {error}. It stays on this page; "
                     "download it as JSON to keep it.").format(failed=len(failed), total=len(results), error=error)
        st.warning(text, icon=":material/warning:")
    elif saved:
        text = (_("Saved to history.") if len(results) == 1
                else _("All {count} measurements saved to history.").format(count=saved))
        with st.container(horizontal=True, vertical_alignment="center", gap="small"):
            st.caption(f":material/check_circle: {text}", width="content")
            page_link(navigation.HISTORY, _("Open History"))
