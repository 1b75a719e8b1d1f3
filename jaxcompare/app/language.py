"""Which language a visitor reads the app in: the URL's ``?lang=`` when it has one, else the
browser's language, else English; switched in the sidebar of every page, which writes it into
the URL, so a shared link opens in the same language. The server serves every session from one
process, so jaxcompare.i18n asks ``session_language`` whose text it is wording."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from .. import i18n
from ..model.formatting import cut, markdown_literal

PARAM = "lang"  # the URL parameter, and the session's language in session state
SWITCH = "lang_switch"  # the sidebar switch's widget key
LABEL = "Language · 语言"  # readable whatever the current language (and one widget id in both)
_URL_PROBLEM = "lang_url_problem"
_DRAWN_IN = "lang_drawn_in"  # widget key -> the language its select box last showed


def session_language() -> str | None:
    """This session's language; None outside a session's script thread (a runner thread, a test).
    The URL's ``lang`` when it names one (the switch writes it there); else what the session
    first decided: the browser's language, else English."""
    if get_script_run_ctx(suppress_warning=True) is None:
        return None
    state = st.session_state
    raw = st.query_params.get(PARAM)
    if raw in i18n.LANGUAGES:
        if state.get(PARAM) != raw:
            state[PARAM] = raw
        return raw
    lang = state.get(PARAM)
    if lang not in i18n.LANGUAGES:
        if raw is not None:
            state[_URL_PROBLEM] = raw  # the switch says so, once
        lang = state[PARAM] = browser_language() or i18n.SOURCE_LANGUAGE
    return lang


def browser_language() -> str | None:
    """The app's language for the browser's (navigator.language), None when it has none of ours."""
    try:
        return i18n.negotiate(st.context.locale)
    except Exception:  # no browser behind this session (a script run without one)
        return None


def url_params(lang: str | None = None) -> dict[str, str]:
    """``{'lang': ...}`` for links and the address bar (the session's language, unless given);
    empty when it is English and the browser's default is English too, so plain English links
    stay plain."""
    lang = lang or i18n.language()
    if lang == i18n.SOURCE_LANGUAGE and (browser_language() or i18n.SOURCE_LANGUAGE) == lang:
        return {}
    return {PARAM: lang}


def with_language(query: Mapping[str, str]) -> dict[str, str]:
    """A page's URL parameters with the language's."""
    return {**query, **url_params()}


def _switched() -> None:
    st.session_state[PARAM] = st.session_state[SWITCH]
    _write_url(st.session_state[SWITCH])  # before anything reads the language from the URL again


def _write_url(lang: str | None = None) -> None:
    """The address bar's ``lang`` as url_params says it."""
    wanted = url_params(lang).get(PARAM)
    if st.query_params.get(PARAM) != wanted:
        if wanted is None:
            del st.query_params[PARAM]
        else:
            st.query_params[PARAM] = wanted


def language_switch() -> None:
    """The sidebar's English / 中文 switch; also writes the language into the address bar."""
    lang = i18n.language()
    # Set on every run, even to the value it holds: on a switch of page Streamlit keeps a widget's
    # value but drops what the browser was told, and every second page showed neither choice chosen.
    st.session_state[SWITCH] = lang
    st.segmented_control(LABEL, list(i18n.LANGUAGES), format_func=_option, key=SWITCH, required=True,
                         on_change=_switched)
    bad = st.session_state.pop(_URL_PROBLEM, None)
    if bad is not None:
        # Plain text, cut short: the link says what ``bad`` is, and anyone can write a link.
        st.warning(markdown_literal(i18n.gettext("The link's lang={raw} was ignored: it must be one of {choices}.")
                                    .format(raw=cut(bad, 40), choices=", ".join(i18n.LANGUAGES))),
                   icon=":material/link_off:")
    _write_url()


def _option(lang: str) -> str:
    """A language's name on the switch. A name that is not ASCII leads with a Material icon: else
    Streamlit loads its emoji catalog to look for a leading emoji, 90 ms of every server's first page."""
    name = i18n.LANGUAGES[lang]
    return name if name.isascii() else f":material/translate: {name}"


def selectbox(label: str, options: Sequence[Any], *, format_func: Callable[[Any], str], key: str,
              **kwargs: Any) -> Any:
    """``st.selectbox`` whose choices are worded in the reader's language. A select box sends
    back the label it shows, not its option, and Streamlit does not resend the label when only
    the wording changed: after a switch the next control touched sent the old language's label,
    an unknown option (StopIteration in a callback, issue 23). Setting the key once again in the
    new language makes Streamlit send the new label to the browser."""
    lang = i18n.language()
    drawn = st.session_state.setdefault(_DRAWN_IN, {})
    if drawn.get(key) not in (None, lang) and key in st.session_state:
        st.session_state[key] = st.session_state[key]
    drawn[key] = lang
    return st.selectbox(label, options, format_func=format_func, key=key, **kwargs)


i18n.set_language_source(session_language)
