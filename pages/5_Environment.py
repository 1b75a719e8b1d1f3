"""Environment: versions, devices, workers, CPU, BLAS, threads and flags behind every number."""

from __future__ import annotations

import streamlit as st

from jaxcompare.app import access, navigation, resources, ui
from jaxcompare.app import environment_view as ev
from jaxcompare.engine import ENV_VARS, host_info
from jaxcompare.i18n import _, translate_text
from jaxcompare.model import formatting
from jaxcompare.model.spec import PRECISIONS

ui.start_page(navigation.ENVIRONMENT)


def worker_or_error(precision: str) -> tuple[dict | None, str | None]:
    try:
        return resources.worker_environment(precision), None
    except Exception as exc:
        return None, _("The {precision} worker could not report: {error}").format(
            precision=precision, error=translate_text(str(exc)))


@st.fragment(run_every=1.0)
def wait_for_workers() -> None:
    if all(resources.worker_environment_ready(p) for p in PRECISIONS):
        st.rerun()
    st.info(_("Asking the x32 and x64 workers what they see (the first visit starts them: a few seconds)…"),
            icon=":material/hourglass_top:")


def refresh() -> None:
    resources.refresh_environment()


st.title(navigation.ENVIRONMENT.label)
st.caption(_("What the numbers were measured on. Every saved result carries this fingerprint too."))
host = access.visible_env(host_info())  # a hosted demo shows visitors no host name or paths
workers: dict[str, dict] = {}
problems = []
for precision in PRECISIONS:
    env, problem = worker_or_error(precision)
    if env is not None:
        workers[precision] = access.visible_env(env)
    if problem:
        problems.append(problem)
for problem in problems:
    st.error(problem, icon=":material/error:")
if len(workers) + len(problems) < 2:
    wait_for_workers()

main_env = workers.get("x32") or workers.get("x64")
if main_env is not None:
    ui.show_banner(ev.device_banner(main_env))
warnings = ev.environment_warnings(workers, load=ev.load_average()) if workers else []
for text in warnings:
    st.warning(text, icon=":material/warning:")

env = main_env or host
versions = env.get("versions") or host["versions"]
col_versions, col_cpu = st.columns(2, gap="medium")
with col_versions:
    st.subheader(_("Versions"))
    st.dataframe(ev.version_rows(versions), hide_index=True, width="stretch")
with col_cpu:
    st.subheader(_("CPU and memory"))
    ui.plain_table(ev.machine_rows(env, host, ev.load_average()))  # a platform string or a path in full

cluster = resources.get_runner().cluster()
if cluster is not None:
    cluster = ev.cluster_summary(cluster, private=not access.private_details_hidden())
    st.subheader(_("Cluster"))
    st.caption(ev.cluster_caption(cluster))
    st.dataframe(ev.cluster_rows(cluster), hide_index=True, width="stretch")

st.subheader(_("Workers and devices"))
if workers:
    st.dataframe(ev.worker_rows(workers), hide_index=True, width="stretch")
    st.dataframe(ev.device_rows(main_env), hide_index=True, width="stretch")
    memory = ev.accelerator_memory_rows(workers)
    if memory:
        st.dataframe(memory, hide_index=True, width="stretch")
        st.caption(_("Each worker's share of the accelerator's memory (memory_stats): both allocate on "
                     "demand, so they can share one device."))
else:
    st.caption(_("Waiting for the workers…"))

col_blas, col_vars = st.columns(2, gap="medium")
with col_blas:
    st.subheader(_("BLAS and threads"))
    blas = ev.blas_rows(main_env or {})
    if blas:
        st.dataframe(blas, hide_index=True, width="stretch")
    else:
        st.caption(_("NumPy's BLAS is reported by the workers (threadpoolctl).") if not workers
                   else _("threadpoolctl found no BLAS or OpenMP library."))
with col_vars:
    st.subheader(_("Environment variables and XLA flags"))
    rows = ev.env_var_rows(ENV_VARS, host, workers)
    if rows:
        ui.plain_table(rows)
    else:
        st.caption(_("None of the variables that change JAX or BLAS behaviour are set."))
    st.caption(_("Watched: {variables}").format(variables=", ".join(f"`{v}`" for v in ENV_VARS)))

document = {"app": host, "workers": workers} | ({} if cluster is None else {"cluster": cluster})
actions = st.container(horizontal=True)
actions.button(_("Ask the workers again"), icon=":material/refresh:", on_click=refresh, key="environment_refresh")
actions.download_button(_("Environment (JSON)"), formatting.dumps(document),
                        file_name="jaxcompare_environment.json", mime="application/json",
                        icon=":material/download:", on_click="ignore", key="environment_download_json")
