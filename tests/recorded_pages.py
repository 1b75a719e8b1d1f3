"""The app's real pages showing recorded results, for browser tests of what a page says about
figures a live run gives only by chance (a range across 1x, a busy sweep point, a lab whose
sections disagree). `streamlit run` on a copy of the app's layout whose app.py and pages/ each
seed the session with a named scenario (``?recorded=NAME``) and then run the repository's own
file unchanged: the pages, their views and their widgets are the app's, only the session's
results are given rather than measured (as AppTest's session_state gives them).
"""

from __future__ import annotations

import contextlib
import pickle
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from browser_support import Server, streamlit_run
from support import ROOT

from jaxcompare.app import navigation

SCENARIO_PARAM = "recorded"
# Each wrapper: seed the session once per scenario named in the URL (the page then rewrites its URL
# without it), then run the real file as Streamlit runs a page.
WRAPPER = '''import os, pickle, runpy
import streamlit as st

name = st.query_params.get({param!r})
if name is not None and st.session_state.get("_recorded_scenario") != name:
    with open(os.environ["JAXCOMPARE_TEST_RECORDED"], "rb") as file:
        st.session_state.update(pickle.load(file)[name])
    st.session_state["_recorded_scenario"] = name
runpy.run_path({path!r}, run_name="__main__")
'''


@contextlib.contextmanager
def recorded_app(tmp: Path, scenarios: Mapping[str, Mapping[str, Any]]) -> Iterator[Server]:
    """A server whose pages open each of ``scenarios`` (name -> session state) at ``?recorded=name``."""
    folder = tmp / "app"
    (folder / "pages").mkdir(parents=True)
    for page in navigation.PAGES:  # the same file names: Streamlit's page paths and links are the app's
        (folder / page.path).write_text(WRAPPER.format(param=SCENARIO_PARAM, path=str(ROOT / page.path)))
    seeds = tmp / "scenarios.pickle"
    seeds.write_bytes(pickle.dumps(dict(scenarios)))
    with streamlit_run(tmp, str(folder / navigation.HOME.path), env={"JAXCOMPARE_TEST_RECORDED": str(seeds)}) as url:
        yield url


def page_url(server: str, page: navigation.Page, scenario: str, lang: str = "en") -> str:
    """The address of ``page`` showing ``scenario`` in ``lang``."""
    return f"{server}/{page.url_path}?{SCENARIO_PARAM}={scenario}&lang={lang}"
