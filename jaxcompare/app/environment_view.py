"""What the pages say about the machine, as plain data (no Streamlit here): the device banner,
whether a device is present, the warnings about what spoils numbers, and the Environment
page's tables."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..i18n import _, ngettext
from ..model.device_memory import DeviceMemory
from ..model.formatting import format_bytes, format_time, markdown_code
from ..model.platforms import is_accelerator, is_host

Env = Mapping[str, Any]
BLAS_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


@dataclass(frozen=True)
class Banner:
    level: str  # "success" | "warning" | "info"
    text: str


def accelerators(env: Env) -> list[dict[str, Any]]:
    return [d for d in (env.get("jax") or {}).get("devices", []) if is_accelerator(d.get("platform"))]


def cores_text(env: Env) -> str:
    cores = env.get("cpu_affinity") or env.get("cpu_count_logical")
    if not cores:
        return _("unknown cores")
    return ngettext("{cores} core", "{cores} cores", cores).format(cores=cores)


def device_banner(env: Env | None) -> Banner:
    """Which device the measurements run on, in one sentence."""
    if not env:
        return Banner("info", _("Checking which device the measurements will run on…"))
    accel = accelerators(env)
    if accel:
        first = accel[0]
        kinds = sorted({d.get("kind", d["platform"]) for d in accel})
        memory = DeviceMemory.from_env(first)
        values = {"kinds": ", ".join(kinds), "platform": first["platform"].upper(), "count": len(accel)}
        if memory:
            values.update(free=format_bytes(memory.free), total=format_bytes(memory.total))
            text = (_("Measuring on **{kinds}** ({platform}, {free} of {total} memory free) ({count} devices).")
                    if len(accel) > 1 else _("Measuring on **{kinds}** ({platform}, {free} of {total} memory free)."))
        else:
            text = (_("Measuring on **{kinds}** ({platform}) ({count} devices).") if len(accel) > 1
                    else _("Measuring on **{kinds}** ({platform})."))
        return Banner("success", text.format(**values))
    return Banner("warning", _(
        "**No GPU or TPU found: falling back to JAX's CPU backend** on this machine ({cpu}, {cores}). Both sides "
        "run on the same CPU, so a speedup here is XLA's CPU code against NumPy's, not an accelerator.").format(
        cpu=env.get("cpu_model", _("unknown CPU")), cores=cores_text(env)))


def device_problem(device: str, env: Env | None) -> str | None:
    """Why a run on ``device`` would fail here (None when it can run, or while unknown)."""
    if not env or device == "auto":
        return None
    platforms = {d.get("platform") for d in (env.get("jax") or {}).get("devices", [])}
    if device in platforms:
        return None
    present = ", ".join(sorted(p for p in platforms if p)) or _("none")
    return _("No {device} is visible to JAX here (present: {present}); a run on it would fail.").format(
        device=device.upper(), present=present)


def load_average() -> float | None:
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


# --- warnings: a table of small rules, like analysis/checks.py ----------------------------------
@dataclass(frozen=True)
class Machine:
    """What the rules look at: the first worker's environment, every worker's, the load."""

    env: Env
    workers: Mapping[str, Env]
    load: float | None

    @property
    def cores(self) -> int:
        return self.env.get("cpu_affinity") or self.env.get("cpu_count_logical") or 0

    @property
    def env_vars(self) -> Env:
        return self.env.get("env_vars") or {}


def shared_cores(m: Machine) -> Iterator[str]:
    if m.cores and m.cores <= 4:
        yield _("Shared cores: only {cores} core(s). NumPy's BLAS, XLA, the app server and anything else on "
                "the machine compete for them, so expect noise.").format(cores=m.cores)


def busy_machine(m: Machine) -> Iterator[str]:
    if m.load is not None and m.cores and m.load > 0.5 * m.cores:
        yield _("Busy machine: the 1-minute load average is {load:.2f} on {cores} core(s); other work will "
                "add noise to every timing.").format(load=m.load, cores=m.cores)


def hyper_threading(m: Machine) -> Iterator[str]:
    logical, physical = m.env.get("cpu_count_logical"), m.env.get("cpu_count_physical")
    if logical and physical and logical > physical:
        yield _("Hyper-threading: {logical} logical CPUs on {physical} physical cores; two threads on one core "
                "slow each other down.").format(logical=logical, physical=physical)


def x64_mismatch(precision: str, jax_env: Env) -> Iterator[str]:
    if bool(jax_env.get("x64_enabled")) != (precision == "x64"):
        yield _("The {precision} worker reports jax_enable_x64={x64}: its dtypes do not match its precision "
                "mode.").format(precision=precision, x64=jax_env.get("x64_enabled"))


def compilation_cache(precision: str, jax_env: Env) -> Iterator[str]:
    if jax_env.get("compilation_cache"):
        yield _("The {precision} worker has the persistent compilation cache on: 'compile' times may be disk "
                "reads.").format(precision=precision)


WORKER_RULES: tuple[Callable[[str, Env], Iterator[str]], ...] = (x64_mismatch, compilation_cache)


def each_worker(m: Machine) -> Iterator[str]:
    """WORKER_RULES for every worker that reported its JAX state, worker by worker."""
    for precision, worker_env in m.workers.items():
        jax_env = (worker_env or {}).get("jax") or {}
        if jax_env:
            for rule in WORKER_RULES:
                yield from rule(precision, jax_env)


def blas_oversubscribed(m: Machine) -> Iterator[str]:
    for b in m.env.get("blas") or []:
        threads = b.get("num_threads")
        if threads and m.cores and threads > m.cores:
            yield _("{library} uses {threads} threads on {cores} core(s): oversubscription makes NumPy slower and "
                    "noisier.").format(library=b.get("internal_api", "BLAS"), threads=threads, cores=m.cores)


def conflicting_memory_fraction(m: Machine) -> Iterator[str]:
    if "XLA_CLIENT_MEM_FRACTION" in m.env_vars and "XLA_PYTHON_CLIENT_MEM_FRACTION" in m.env_vars:
        yield _("Both XLA_CLIENT_MEM_FRACTION and its older alias XLA_PYTHON_CLIENT_MEM_FRACTION are set; "
                "they conflict.")


def custom_xla_flags(m: Machine) -> Iterator[str]:
    if m.env_vars.get("XLA_FLAGS"):
        yield _("Custom XLA_FLAGS are active: `{flags}`.").format(flags=m.env_vars["XLA_FLAGS"])


def blas_thread_limits(m: Machine) -> Iterator[str]:
    for var in BLAS_THREAD_VARS:
        if var in m.env_vars:
            yield _("{variable}={value} limits NumPy's threads (XLA is not limited by it).").format(
                variable=var, value=m.env_vars[var])


def low_memory(m: Machine) -> Iterator[str]:
    available = m.env.get("memory_available_bytes")
    if available and available < 2 * 1024**3:
        yield _("Only {free} of memory is free: large shapes may swap or fail.").format(free=format_bytes(available))


def backend_start_warnings(m: Machine) -> Iterator[str]:
    """What the backend warned as each worker opened it (libtpu's transparent hugepages, at every
    start; engine/worker/environment.backend_start), once for the workers that heard it, with the seconds
    the opening took in each: what a worker pays before it measures anything."""
    heard: dict[str, list[str]] = {}
    for precision, worker_env in m.workers.items():
        start = (worker_env or {}).get("backend_start") or {}
        for warning in start.get("warnings") or []:
            heard.setdefault(warning, []).append(_("{seconds} in the {precision} worker").format(
                precision=precision, seconds=format_time(start.get("seconds"))))
    for warning, costs in heard.items():
        yield _("The JAX backend warned as it started: {warning}. Importing JAX and opening the backend took "
                "{costs}, paid once as each worker starts, before it measures anything.").format(
            warning=markdown_code(warning), costs=", ".join(costs))


ENVIRONMENT_RULES: tuple[Callable[[Machine], Iterator[str]], ...] = (
    shared_cores, busy_machine, hyper_threading, each_worker, blas_oversubscribed,
    conflicting_memory_fraction, custom_xla_flags, blas_thread_limits, low_memory, backend_start_warnings,
)


def environment_warnings(workers: Mapping[str, Env], load: float | None = None) -> list[str]:
    """What makes numbers from this machine less trustworthy, in ENVIRONMENT_RULES order.
    ``workers``: precision -> that worker's environment."""
    envs = [e for e in workers.values() if e]
    if not envs:
        return []
    machine = Machine(envs[0], workers, load)
    return [text for rule in ENVIRONMENT_RULES for text in rule(machine)]


# --- the Environment page's tables ---------------------------------------------------------------
def version_rows(versions: Mapping[str, str | None]) -> list[dict[str, str]]:
    return [{_("Package"): name, _("Version"): version or _("not installed")} for name, version in versions.items()]


def machine_rows(env: Env, host: Env, load: float | None) -> list[dict[str, Any]]:
    """CPU and memory; the memory available is the app process's own, measured now."""
    items = [
        (_("CPU model"), env.get("cpu_model")),
        (_("Logical CPUs"), str(env.get("cpu_count_logical"))),
        (_("Physical cores"), str(env.get("cpu_count_physical"))),
        (_("Cores this process may use (affinity)"), str(env.get("cpu_affinity"))),
        (_("Load average (1 min)"), "—" if load is None else f"{load:.2f}"),
        (_("Memory total"), format_bytes(env.get("memory_total_bytes"))),
        (_("Memory available"), format_bytes(host.get("memory_available_bytes"))),
        (_("Platform"), env.get("platform")),
        ("Python", env.get("python_executable")),
    ]
    item, value = _("Item"), _("Value")
    # The interpreter's path is left out where a hosted demo hides it (access.visible_env), not shown empty.
    return [{item: name, value: text} for name, text in items if name != "Python" or text]


def worker_rows(workers: Mapping[str, Env]) -> list[dict[str, Any]]:
    rows = []
    for precision, worker_env in workers.items():
        jax_env = worker_env.get("jax") or {}
        rows.append({_("Worker"): precision, _("Backend"): jax_env.get("default_backend"),
                     "jax_enable_x64": _("on") if jax_env.get("x64_enabled") else _("off"),
                     _("Default float"): jax_env.get("default_float"),
                     _("Compilation cache"): _("on") if jax_env.get("compilation_cache") else _("off"),
                     _("Devices"): len(jax_env.get("devices", []))})
    return rows


def device_memory_text(device: Env) -> dict[str, str]:
    """A device's memory as the worker's allocator reports it (memory_stats: bytes_limit, what
    this process may use, and bytes_in_use); "n/a" on the CPU, whose memory is the host's."""
    memory = DeviceMemory.from_env(device)
    host = is_host(device.get("platform"))
    if host or memory is None:
        na = _("n/a (host memory)") if host else _("not reported")
        return {_("Memory free"): na, _("Memory limit"): na, _("Memory in use"): na}
    return {_("Memory free"): format_bytes(memory.free), _("Memory limit"): format_bytes(memory.total),
            _("Memory in use"): format_bytes(memory.in_use)}


def device_rows(env: Env) -> list[dict[str, Any]]:
    return [{_("Platform"): d.get("platform"), _("Id"): d.get("id"), _("Kind"): d.get("kind"),
             _("Name"): d.get("name"), **device_memory_text(d)}
            for d in (env.get("jax") or {}).get("devices", [])]


def accelerator_memory_rows(workers: Mapping[str, Env]) -> list[dict[str, Any]]:
    """Each worker's view of each GPU/TPU's memory: both workers share one device, and each
    allocates on demand (XLA_PYTHON_CLIENT_PREALLOCATE=false), so neither starves the other."""
    return [{_("Worker"): precision, _("Device"): d.get("name"), _("Kind"): d.get("kind"), **device_memory_text(d)}
            for precision, worker_env in workers.items() for d in accelerators(worker_env or {})]


def blas_rows(env: Env) -> list[dict[str, Any]]:
    return [{_("Library"): b.get("internal_api"), _("API"): b.get("user_api"), _("Threads"): b.get("num_threads"),
             _("Threading"): b.get("threading_layer"), _("Version"): b.get("version"),
             _("Architecture"): b.get("architecture")} for b in env.get("blas") or []]


def env_var_rows(names: Sequence[str], host: Env, workers: Mapping[str, Env]) -> list[dict[str, str]]:
    """The watched variables set in the app process or any worker, one column per process."""
    rows = []
    for name in names:
        values = {p: (w.get("env_vars") or {}).get(name) for p, w in workers.items()}
        app_value = host["env_vars"].get(name)
        if app_value is None and not any(values.values()):
            continue
        rows.append({_("Variable"): name, _("App process"): app_value or "—",
                     **{_("{precision} worker").format(precision=p): v or "—" for p, v in values.items()}})
    return rows


# --- the cluster (JAXCOMPARE_RAY_ADDRESS): Runner.cluster() as the page's caption, table and JSON --
def _job_text(job: Any) -> str:
    spec = getattr(job, "spec", None)
    if spec is None:
        return str(job.kind)
    return f"{spec.case} {'×'.join(str(n) for n in spec.shape)} {spec.precision}"


def cluster_summary(cluster: Env, *, private: bool = True) -> dict[str, Any]:
    """Runner.cluster() as plain data (the page's download too); the cluster's address and its
    nodes' addresses and host names only where private details may be shown."""
    nodes = []
    for node in cluster.get("nodes") or []:
        entry: dict[str, Any] = {"id": node.get("id"), "alive": bool(node.get("alive")), "slots": node.get("slots", 0),
                                 "gpus": node.get("gpus", 0), "cpus": node.get("cpus", 0),
                                 "jobs": [_job_text(job) for job in node.get("jobs") or []]}
        if private:
            entry.update(address=node.get("address"), hostname=node.get("hostname"))
        nodes.append(entry)
    summary = {"resource": cluster.get("resource"), "slots": cluster.get("slots"), "queued": cluster.get("queued", 0),
               "nodes": nodes, "error": cluster.get("error") if private or not cluster.get("error") else "unreachable"}
    return {"address": cluster.get("address"), **summary} if private else summary


def cluster_caption(summary: Env) -> str:
    running = sum(len(node["jobs"]) for node in summary["nodes"])
    where = (_("the Ray cluster at `{address}`").format(address=summary["address"]) if summary.get("address")
             else _("a Ray cluster"))
    text = _("Jobs go to {where}; each holds one whole `{resource}` while it runs, so no two measurements share a "
             "device. {slots} slot(s): {running} job(s) running, {queued} waiting here.").format(
        where=where, resource=summary["resource"], slots=summary["slots"], running=running, queued=summary["queued"])
    if summary.get("error"):
        text += " " + _("The cluster does not answer now: {error}").format(error=summary["error"])
    return text


def cluster_rows(summary: Env) -> list[dict[str, Any]]:
    """A row per node: its id, where it is (when shown), alive or dead, its slots, GPUs and CPUs,
    and this server's jobs running on it."""
    rows = []
    for node in summary["nodes"]:
        row: dict[str, Any] = {_("Node"): str(node["id"] or "")[:12]}
        if "address" in node:
            row.update({_("Address"): node["address"] or "—", _("Host"): node["hostname"] or "—"})
        row.update({_("State"): _("alive") if node["alive"] else _("dead"), _("Slots"): node["slots"],
                    _("GPUs"): node["gpus"], _("CPUs"): node["cpus"],
                    _("Jobs running"): ", ".join(node["jobs"]) or "—"})
        rows.append(row)
    return rows
