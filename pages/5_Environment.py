"""Environment: versions, devices, workers, CPU, BLAS, threads and flags behind every number."""

from __future__ import annotations

import streamlit as st

from jaxcompare.app import ui, views
from jaxcompare.engine.environment import ENV_VARS, host_info
from jaxcompare.model import formatting

st.set_page_config(page_title="Environment · jaxcompare", page_icon=":material/settings:", layout="wide")
ui.sidebar_nav()


def worker_or_error(precision: str) -> tuple[dict | None, str | None]:
    try:
        return ui.worker_environment(precision), None
    except Exception as exc:
        return None, f"The {precision} worker could not report: {exc}"


@st.fragment(run_every=1.0)
def wait_for_workers() -> None:
    if all(ui.worker_environment_ready(p) for p in ("x32", "x64")):
        st.rerun()
    st.info("Asking the x32 and x64 workers what they see (the first visit starts them: a few seconds)…",
            icon=":material/hourglass_top:")


def refresh() -> None:
    ui.refresh_environment()


st.title("Environment")
st.caption("What the numbers were measured on. Every saved result carries this fingerprint too.")
host = host_info()
workers: dict[str, dict] = {}
problems = []
for precision in ("x32", "x64"):
    env, problem = worker_or_error(precision)
    if env is not None:
        workers[precision] = env
    if problem:
        problems.append(problem)
for problem in problems:
    st.error(problem, icon=":material/error:")
if len(workers) + len(problems) < 2:
    wait_for_workers()

main_env = workers.get("x32") or workers.get("x64")
if main_env is not None:
    ui.show_banner(views.device_banner(main_env))
warnings = views.environment_warnings(workers, load=views.load_average()) if workers else []
for text in warnings:
    st.warning(text, icon=":material/warning:")

env = main_env or host
versions = env.get("versions") or host["versions"]
col_versions, col_cpu = st.columns(2, gap="medium")
with col_versions:
    st.subheader("Versions")
    st.dataframe([{"Package": name, "Version": version or "not installed"}
                  for name, version in versions.items()], hide_index=True, width="stretch")
with col_cpu:
    st.subheader("CPU and memory")
    load = views.load_average()
    st.dataframe([
        {"Item": "CPU model", "Value": env.get("cpu_model")},
        {"Item": "Logical CPUs", "Value": str(env.get("cpu_count_logical"))},
        {"Item": "Physical cores", "Value": str(env.get("cpu_count_physical"))},
        {"Item": "Cores this process may use (affinity)", "Value": str(env.get("cpu_affinity"))},
        {"Item": "Load average (1 min)", "Value": "—" if load is None else f"{load:.2f}"},
        {"Item": "Memory total", "Value": formatting.format_bytes(env.get("memory_total_bytes"))},
        {"Item": "Memory available", "Value": formatting.format_bytes(host.get("memory_available_bytes"))},
        {"Item": "Platform", "Value": env.get("platform")},
        {"Item": "Python", "Value": env.get("python_executable")},
    ], hide_index=True, width="stretch")

st.subheader("Workers and devices")
if workers:
    st.dataframe([
        {"Worker": precision, "Backend": (w.get("jax") or {}).get("default_backend"),
         "jax_enable_x64": "on" if (w.get("jax") or {}).get("x64_enabled") else "off",
         "Default float": (w.get("jax") or {}).get("default_float"),
         "Compilation cache": "on" if (w.get("jax") or {}).get("compilation_cache") else "off",
         "Devices": len((w.get("jax") or {}).get("devices", []))}
        for precision, w in workers.items()
    ], hide_index=True, width="stretch")
    st.dataframe([
        {"Platform": d.get("platform"), "Id": d.get("id"), "Kind": d.get("kind"), "Name": d.get("name"),
         "Memory limit": formatting.format_bytes(d.get("memory_limit_bytes")),
         "Memory in use": formatting.format_bytes(d.get("memory_in_use_bytes"))}
        for d in (main_env.get("jax") or {}).get("devices", [])
    ], hide_index=True, width="stretch")
else:
    st.caption("Waiting for the workers…")

col_blas, col_vars = st.columns(2, gap="medium")
with col_blas:
    st.subheader("BLAS and threads")
    blas = (main_env or {}).get("blas") or []
    if blas:
        st.dataframe([{"Library": b.get("internal_api"), "API": b.get("user_api"),
                       "Threads": b.get("num_threads"), "Threading": b.get("threading_layer"),
                       "Version": b.get("version"), "Architecture": b.get("architecture")} for b in blas],
                     hide_index=True, width="stretch")
    else:
        st.caption("NumPy's BLAS is reported by the workers (threadpoolctl)." if not workers
                   else "threadpoolctl found no BLAS or OpenMP library.")
with col_vars:
    st.subheader("Environment variables and XLA flags")
    rows = []
    for name in ENV_VARS:
        values = {p: (w.get("env_vars") or {}).get(name) for p, w in workers.items()}
        app_value = host["env_vars"].get(name)
        if app_value is None and not any(values.values()):
            continue
        rows.append({"Variable": name, "App process": app_value or "—",
                     **{f"{p} worker": v or "—" for p, v in values.items()}})
    if rows:
        st.dataframe(rows, hide_index=True, width="stretch")
    else:
        st.caption("None of the variables that change JAX or BLAS behaviour are set.")
    st.caption("Watched: " + ", ".join(f"`{v}`" for v in ENV_VARS))

actions = st.container(horizontal=True)
actions.button("Ask the workers again", icon=":material/refresh:", on_click=refresh)
actions.download_button("Environment (JSON)", formatting.dumps({"app": host, "workers": workers}),
                      file_name="jaxcompare_environment.json", mime="application/json",
                      icon=":material/download:", on_click="ignore")
