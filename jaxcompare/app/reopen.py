"""A saved result reopened on the Compare page (``?result=<id>``, History's "Open in Compare"):
the page's full view of it, as after a run, until a new run replaces it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import streamlit as st

from ..analysis.ports import PortRun, race_key
from ..i18n import _
from ..model.cases import Case
from ..model.errors import JaxCompareError
from ..model.result import Result
from . import access, controls, language, navigation, resources
from . import history_view as hv

SHOWN = "compare_saved_id"  # session state: the id of the saved result on show, while it is
TRIED = "compare_saved_tried"  # the id the URL asked for last: opened (or refused) once, not every rerun


RACE_SEPARATOR = ","  # ?result=<id>,<id>,...: the saved ports of one race


def is_race(results: Sequence[Result]) -> bool:
    """Whether ``results`` are two or more ports of one case measured at one shape, precision and device
    kind (a race History can reopen as one)."""
    # The race's own key, and one device kind: saved runs may come from two machines of one backend.
    keys = {(*race_key(r), r.jax.device_kind) for r in results}
    ports = [r.port for r in results]
    return len(results) > 1 and len(keys) == 1 and None not in ports and len(set(ports)) == len(ports)


def open_from_url(result_key: str, error_key: str, cases: Sequence[Case], ports_key: str) -> bool:
    """Put the saved result the URL names into ``st.session_state[result_key]`` (as this reader may
    see it), or the saved ports of one race (ids joined by RACE_SEPARATOR) into ``ports_key`` as a
    finished controls.PortsRun, and the sidebar's settings to what was measured; an id that opens
    nothing leaves the page as it was and says so once in ``error_key`` (English, shown with
    translate_text). Call before the sidebar's widgets and the page's own URL seeding. True when it
    put a result or a race there."""
    raw = st.query_params.get(hv.RESULT_PARAM)
    if raw is None:
        st.session_state.pop(TRIED, None)  # the same run opened again later is opened again
        return False
    if st.session_state.get(TRIED) == raw:
        return False
    st.session_state[TRIED] = raw
    ids = [part for part in raw.split(RACE_SEPARATOR) if part] or [raw]
    try:
        results = [resources.get_store().get(one) for one in ids]
    except JaxCompareError:  # unknown, ambiguous or unreadable; the store's own message names its path
        st.session_state[error_key] = hv.not_opened_text(raw)
        return False
    if len(results) > 1 and not is_race(results):
        st.session_state[error_key] = hv.not_opened_text(raw)
        return False
    shown = access.visible(results)
    if len(results) > 1:
        st.session_state[ports_key] = controls.PortsRun(
            replace(results[0].spec, port=None), [r.port for r in results],
            runs=[PortRun(r.port, result) for r, result in zip(results, shown, strict=True)], next_index=len(results),
            harvested=True)
        st.session_state.pop(result_key, None)
    else:
        st.session_state[result_key] = shown[0]
        st.session_state.pop(ports_key, None)
    st.session_state[SHOWN] = RACE_SEPARATOR.join(r.id for r in results)
    st.session_state.pop(error_key, None)
    if any(case.name == results[0].case for case in cases):  # a case from a cases file not loaded: sidebar stays
        query = hv.compare_query(results[0]) | ({"ports": ",".join(r.port for r in results)} if len(results) > 1
                                                 else {})
        config, _warnings = controls.compare_config_from_query(query, cases)
        st.session_state.update(config.widgets())
    return True


def replaced() -> None:
    """A new run's result took the saved one's place: History's link to the same run opens it again
    (the URL still named it when this rerun began)."""
    st.session_state.pop(SHOWN, None)
    st.session_state.pop(TRIED, None)


def url_query(query: dict[str, str]) -> dict[str, str]:
    """The page's URL parameters, with the saved result's id while it is the one shown (a reload
    or a shared link shows it again)."""
    shown = st.session_state.get(SHOWN)
    return {**query, hv.RESULT_PARAM: shown} if shown else query


def saved_note(result: Result) -> bool:
    """The line saying ``result`` is a saved run; False (nothing drawn) for a run of this session."""
    if st.session_state.get(SHOWN) != result.id:
        return False
    st.info(hv.saved_run_note(result), icon=":material/history:")
    return True


def saved_race_note(results: Sequence[Result]) -> bool:
    """The line saying a race's ports are saved runs (its first port's date and device); False for a race
    of this session."""
    if not results or st.session_state.get(SHOWN) != RACE_SEPARATOR.join(r.id for r in results):
        return False
    st.info(hv.saved_run_note(results[0]), icon=":material/history:")
    return True


def open_link(result: Result, container: Any = st) -> None:
    """History's link to ``result`` on the Compare page, in the reader's language."""
    container.page_link(navigation.COMPARE.path, label=_("Open in Compare"), icon=":material/open_in_new:",
                        query_params=language.with_language({hv.RESULT_PARAM: result.id}))


def open_race_link(results: Sequence[Result], container: Any = st) -> None:
    """History's link to a race's saved ports (is_race) on the Compare page, shown as the race."""
    container.page_link(navigation.COMPARE.path, label=_("Open the race in Compare"), icon=":material/open_in_new:",
                        query_params=language.with_language(
                            {hv.RESULT_PARAM: RACE_SEPARATOR.join(r.id for r in results)}))
