"""The app in hosted mode and behind a login, under AppTest: case files off unless the server is
local and on loopback, History read-only without the operator token, no host names or paths for
visitors, the rate limit per client (a reload does not reset it), and no page at all before login."""

from __future__ import annotations

import dataclasses

import pytest
from _results import make_result
from apptest_support import ROOT, app_runner, fresh_caches, page, run_until  # noqa: F401
from streamlit.testing.v1 import AppTest

from jaxcompare import JobFailed, Runner
from jaxcompare.engine.server.settings import Settings
from jaxcompare.history.store import Store

PAGES = ("app.py", "pages/1_Compare.py", "pages/2_Size_sweep.py", "pages/3_Pitfalls.py", "pages/4_History.py",
         "pages/5_Environment.py", "pages/6_Versions.py", "pages/7_Atlas.py")
TOKEN = "correct horse battery staple"


@pytest.fixture
def serve(monkeypatch):
    """Serve the app like `streamlit run` with these settings on this address (the app reads
    Streamlit's server.address); a fresh Runner each time, closed afterwards."""
    import streamlit as st

    from jaxcompare.app import resources

    def start(address: str | None = "127.0.0.1", **env: str) -> None:
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        st.config.set_option("server.address", address)
        resources.get_runner.clear()

    yield start
    st.config.set_option("server.address", None)
    st.config.set_option("client.showErrorDetails", "type")
    resources.get_runner.clear()


def cases_box(at: AppTest) -> tuple[bool, bool]:
    """(is the path box there, is it enabled)."""
    keys = {t.key: t for t in at.text_input}
    if "cases_file_input" in keys:
        return True, not keys["cases_file_input"].disabled
    return "cases_file_input_disabled" in keys, False


@pytest.mark.parametrize("address, env, enabled", [
    ("127.0.0.1", {}, True),
    ("localhost", {}, True),
    (None, {}, False),  # unset: Streamlit listens on every interface
    ("0.0.0.0", {}, False),
    ("192.0.2.2", {}, False),
    ("127.0.0.1", {"JAXCOMPARE_MODE": "hosted"}, False),
])
def test_case_files_need_local_mode_and_a_loopback_server(serve, address, env, enabled):
    serve(address, **env)
    at = page("pages/1_Compare.py")
    assert not at.exception
    assert cases_box(at) == (True, enabled)
    assert any("disabled on this server" in c.value for c in at.caption) is not enabled
    assert not any("others can reach" in w.value for w in at.sidebar.warning)


def test_case_files_forced_on_a_reachable_server_are_flagged(serve, tmp_path):
    serve("0.0.0.0", JAXCOMPARE_ALLOW_CASES_FILE="true")
    at = page("pages/1_Compare.py")
    assert cases_box(at) == (True, True)
    assert any("anyone who can open this page can run Python code" in w.value for w in at.sidebar.warning)


def test_a_refused_server_ignores_a_forged_path(serve, tmp_path):
    """The box is disabled, but a client could still send a value for its key: nothing loads."""
    serve("0.0.0.0")
    marker = tmp_path / "ran"
    path = tmp_path / "evil.py"
    path.write_text(f"open({str(marker)!r}, 'w').close()\nCASES = []\n")
    at = page("pages/1_Compare.py")
    at.session_state["cases_file_input"] = str(path)
    from jaxcompare.app import resources

    with pytest.raises(Exception, match="disabled"):
        resources.get_runner().submit_list_cases(str(path))
    at.run()
    assert resources.get_runner().wait_idle(120)
    assert "list_cases" not in [job.kind for job in resources.get_runner().history]
    assert not marker.exists() and "cases_file_cases" not in at.session_state


def test_a_case_file_that_hangs_at_import_can_be_abandoned(serve, tmp_path):
    serve("127.0.0.1")
    path = tmp_path / "hangs.py"
    path.write_text("while True:\n    pass\n")
    at = page("pages/1_Compare.py")
    at.text_input(key="cases_file_input").set_value(str(path)).run()
    job = at.session_state["cases_file_job"]
    assert not job.done and any("Loading the file in a worker" in c.value for c in at.caption)
    at.text_input(key="cases_file_input").set_value("").run()  # the visitor gives up on it
    with pytest.raises(JobFailed, match="cancelled"):  # stopped, not left to run to its deadline
        job.wait(60)
    assert "cases_file_job" not in at.session_state
    assert not at.exception


@pytest.fixture
def saved(tmp_path, monkeypatch) -> Store:
    """A results database with two runs from a machine called secret-gpu-box."""
    from jaxcompare.app import resources

    monkeypatch.setenv("JAXCOMPARE_DB", str(tmp_path / "results.sqlite3"))
    resources._store_at.clear()
    store = Store(tmp_path / "results.sqlite3")
    for i, numpy_s in enumerate((1e-3, 2e-3)):
        result = make_result(numpy_s=numpy_s)
        env = {**result.env, "hostname": "secret-gpu-box", "python_executable": "/srv/secret/venv/bin/python"}
        store.save(dataclasses.replace(result, id=f"{result.id}-{i}", env=env))
    yield store
    resources._store_at.clear()


def select_all(at: AppTest) -> AppTest:
    at.session_state["history_table"] = {"selection": {"rows": [0, 1], "columns": []}}
    return at.run()


def everything(at: AppTest) -> str:
    """Every text the page shows, table cells included."""
    parts = [str(e.value) for kind in ("title", "markdown", "caption", "info", "success", "error", "warning",
                                       "subheader") for e in getattr(at, kind)]
    parts += [frame.value.to_csv() for frame in (*at.dataframe, *at.table)]
    return "\n".join(parts)


def test_history_is_read_only_for_visitors_and_hides_the_server(serve, saved, caplog):
    serve("0.0.0.0", JAXCOMPARE_MODE="hosted", JAXCOMPARE_ADMIN_TOKEN=TOKEN)
    at = select_all(page("pages/4_History.py"))
    assert not at.exception
    assert "2 selected" in everything(at)
    assert not at.get("file_uploader")
    assert "history_delete" not in {b.key for b in at.button}
    assert "Host" not in at.dataframe[0].value.columns
    assert "secret" not in everything(at) and str(saved.path) not in everything(at)
    assert [s.label for s in at.selectbox] == ["Case", "Device", "JAX version"]  # no host filter
    assert at.get("download_button")  # the selection can be downloaded, without the host name
    from jaxcompare.app import access

    shown = access.visible(saved.load([r["id"] for r in saved.list()]))
    assert all("hostname" not in r.env and "python_executable" not in r.env for r in shown)

    # A wrong token is refused, and logged for the operator without the guess; the right one unlocks delete and
    # import for this session only.
    with caplog.at_level("INFO", logger="jaxcompare"):
        at.text_input(key="history_token_input").set_value("hunter2").run()
    assert any("not the operator token" in e.value for e in at.error)
    assert any(m.startswith("operator token: a wrong guess: client ") for m in caplog.messages), caplog.messages
    assert not any("hunter2" in m for m in caplog.messages)
    assert "history_delete" not in {b.key for b in at.button}
    at.text_input(key="history_token_input").set_value(TOKEN).run()
    assert "Unlocked for this session" in everything(at)
    assert "history_token_input" not in {t.key for t in at.text_input}
    assert "history_token_input" not in at.session_state or at.session_state["history_token_input"] == ""
    at = select_all(at)
    assert at.get("file_uploader") and "history_delete" in {b.key for b in at.button}
    assert "Host" in at.dataframe[0].value.columns
    ids = [r["id"][:8] for r in saved.list()]
    with caplog.at_level("INFO", logger="jaxcompare"):
        at.button(key="history_delete").click().run()
        at.button(key="history_confirm").click().run()
    assert saved.count() == 0
    # The log records the edit and who made it, not only the unlock before it
    said = f"History delete of 2 result(s): {', '.join(ids)}: client "
    assert any(m.startswith(said) for m in caplog.messages), caplog.messages
    other = select_all(page("pages/4_History.py"))  # another visitor: still read-only
    assert not other.get("file_uploader")


def test_history_without_a_token_is_read_only_for_everyone(serve, saved):
    serve("0.0.0.0", JAXCOMPARE_MODE="hosted")
    at = select_all(page("pages/4_History.py"))
    assert "read-only on this server" in everything(at)
    assert "history_token_input" not in {t.key for t in at.text_input}
    assert not at.get("file_uploader") and "history_delete" not in {b.key for b in at.button}


def test_local_history_stays_editable(serve, saved):
    serve("127.0.0.1")
    at = select_all(page("pages/4_History.py"))
    assert at.get("file_uploader") and "history_delete" in {b.key for b in at.button}
    assert "secret-gpu-box" in everything(at)


@pytest.fixture(scope="module")
def hosted_runner():
    with Runner(settings=dataclasses.replace(Settings.hosted(), max_jobs_per_minute=2), timeout_s=240) as runner:
        yield runner


def test_the_rate_limit_counts_the_client_not_the_session(hosted_runner, monkeypatch):
    from jaxcompare.app import resources

    monkeypatch.setattr(resources, "get_runner", lambda: hosted_runner)
    for _ in range(2):  # two runs, each from a fresh session: a reload
        at = page("pages/1_Compare.py", case="matmul", shape="small", timing="quick")
        at.button(key="run_compare").click().run()
        assert "compare_error" not in at.session_state
        at = run_until(at, lambda a: "compare_result" in a.session_state)
    reloaded = page("pages/1_Compare.py", case="matmul", shape="small", timing="quick")
    reloaded.button(key="run_compare").click().run()
    assert any("rate limit: at most 2 runs a minute" in e.value for e in reloaded.error)
    assert hosted_runner.queue_length() == 0


def test_a_sweep_longer_than_the_cap_is_refused_with_the_limit_named(hosted_runner, monkeypatch):
    from jaxcompare.app import resources

    monkeypatch.setattr(resources, "get_runner", lambda: hosted_runner)
    at = page("pages/2_Size_sweep.py", case="matmul", steps="10", timing="quick")
    # Said before Run, which is off (a walk-through learnt it only from the click; the runner refuses it too:
    # test_limits).
    said = "a sweep of 10 sizes is longer than this server allows (8)"
    assert at.button(key="run_sweep").disabled and any(said in w.value for w in at.warning)
    assert hosted_runner.queue_length() == 0


def test_a_run_past_the_servers_deadline_or_size_limit_is_refused_before_run(hosted_runner, monkeypatch):
    # A walk-through of the hosted demo: Run stayed on for an svd estimated at 44-212 min on a server that stops
    # a job at 3 min (it held the queue until then), and for a shape over the server's element limit (refused
    # only after the click). Both are said beside Run, which is off; the runner refuses them too.
    from jaxcompare.app import resources

    monkeypatch.setattr(resources, "get_runner", lambda: hosted_runner)
    for shape, said in (("3000x3000", "a job may take on this server"), ("5000x5000", "this server allows at most")):
        at = page("pages/1_Compare.py", case="svd", shape=shape, precision="x64", timing="quick")
        assert at.button(key="run_compare").disabled, shape
        assert any(said in w.value for w in at.warning), [w.value for w in at.warning]
    at = page("pages/1_Compare.py", case="matmul", shape="small", timing="quick")
    assert not at.button(key="run_compare").disabled
    assert not [w.value for w in at.warning if "this server" in w.value]
    assert hosted_runner.queue_length() == 0


def test_hosted_mode_shows_a_generic_message_for_unexpected_errors(serve):
    import streamlit as st

    serve("0.0.0.0", JAXCOMPARE_MODE="hosted")
    page("app.py")
    assert st.get_option("client.showErrorDetails") == "none"


@pytest.mark.parametrize("name", PAGES)
def test_with_a_login_configured_no_page_runs_or_shows_anything_before_login(serve, saved, name):
    serve("0.0.0.0", JAXCOMPARE_MODE="hosted")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.secrets["auth"] = {"redirect_uri": "http://127.0.0.1:8501/oauth2callback", "cookie_secret": "x" * 32,
                          "client_id": "jaxcompare", "client_secret": "s",
                          "server_metadata_url": "https://login.invalid/.well-known/openid-configuration"}
    at.run()
    if name != "app.py":
        at.switch_page(name)
        at.query_params.update({"case": "matmul", "timing": "quick"})
        at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert [b.key for b in at.button] == ["login_default"]
    assert not at.dataframe and not at.get("vega_lite_chart") and not at.metric
    assert "secret-gpu-box" not in everything(at) and "test-matmul" not in everything(at)
    from jaxcompare.app import resources

    assert resources.get_runner().queue_length() == 0 and not resources.get_runner().history


@pytest.mark.parametrize("address, env, host_shown", [
    ("0.0.0.0", {"JAXCOMPARE_MODE": "hosted"}, False),
    ("127.0.0.1", {}, True),
])
def test_a_saved_run_opened_in_compare_hides_the_server_from_visitors(serve, saved, address, env, host_shown):
    """Compare's ?result=<id> (History's "Open in Compare") shows what History shows: no host name
    or interpreter path to a hosted demo's visitors, the host where the server is one's own."""
    serve(address, **env)
    rid = saved.list()[0]["id"]
    at = page("pages/1_Compare.py", result=rid)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("A saved run" in e.value for e in at.info) and at.metric  # the result's view, tiles and all
    text = (everything(at) + "\n".join(str(c.value) for c in at.code)).replace("\\", "")  # Markdown escapes
    assert ("secret-gpu-box" in text) == host_shown, text
    assert "/srv/secret" not in text  # the interpreter's path: the Compare page never shows it
