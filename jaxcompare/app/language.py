"""Which language a visitor reads the app in: chosen once per session (the link's ``?lang=``,
else the browser's language, else English), switched in the sidebar of every page, and kept in
the URL so a shared link opens in the same language. The server serves every session from one
process, so jaxcompare.i18n asks ``session_language`` whose text it is wording."""

from __future__ import annotations

from collections.abc import Mapping

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from .. import i18n

PARAM = "lang"  # the URL parameter, and the session's language in session state
SWITCH = "lang_switch"  # the sidebar switch's widget key
LABEL = "Language · 语言"  # readable whatever the current language (and one widget id in both)
_URL_PROBLEM = "lang_url_problem"


def session_language() -> str | None:
    """This session's language; None outside a session's script thread (a runner thread, a test).
    The first call in a session decides it: the link, the browser, English."""
    if get_script_run_ctx(suppress_warning=True) is None:
        return None
    state = st.session_state
    lang = state.get(PARAM)
    if lang not in i18n.LANGUAGES:
        lang = state[PARAM] = _initial_language()
    return lang


def _initial_language() -> str:
    raw = st.query_params.get(PARAM)
    if raw in i18n.LANGUAGES:
        return raw
    if raw is not None:
        st.session_state[_URL_PROBLEM] = raw
    return browser_language() or i18n.SOURCE_LANGUAGE


def browser_language() -> str | None:
    """The app's language for the browser's (navigator.language), None when it has none of ours."""
    try:
        return i18n.negotiate(st.context.locale)
    except Exception:  # no browser behind this session (a script run without one)
        return None


def url_params() -> dict[str, str]:
    """``{'lang': ...}`` for links and the address bar; empty when the language is English and
    the browser's default is English too, so plain English links stay plain."""
    lang = i18n.language()
    if lang == i18n.SOURCE_LANGUAGE and (browser_language() or i18n.SOURCE_LANGUAGE) == lang:
        return {}
    return {PARAM: lang}


def with_language(query: Mapping[str, str]) -> dict[str, str]:
    """A page's URL parameters with the language's."""
    return {**query, **url_params()}


def _switched() -> None:
    st.session_state[PARAM] = st.session_state[SWITCH]


def language_switch() -> None:
    """The sidebar's English / 中文 switch; also writes the language into the address bar."""
    lang = i18n.language()
    if st.session_state.get(SWITCH) != lang:  # a new page, or a session that has not drawn it yet
        st.session_state[SWITCH] = lang
    st.segmented_control(LABEL, list(i18n.LANGUAGES), format_func=i18n.LANGUAGES.__getitem__, key=SWITCH,
                         required=True, on_change=_switched)
    bad = st.session_state.pop(_URL_PROBLEM, None)
    if bad is not None:
        st.warning(i18n.gettext("The link's `lang={raw}` was ignored: it must be one of {choices}.")
                   .format(raw=bad, choices=", ".join(i18n.LANGUAGES)), icon=":material/link_off:")
    wanted = url_params().get(PARAM)
    if st.query_params.get(PARAM) != wanted:
        if wanted is None:
            del st.query_params[PARAM]
        else:
            st.query_params[PARAM] = wanted


i18n.set_language_source(session_language)
