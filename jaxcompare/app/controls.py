"""What the app's controls hold and how a URL encodes them (no Streamlit here): case labels,
the Compare and Size sweep configurations (each field one widget, its default the page's and the
URL's) with their URL parsing (a bad value becomes a warning and the default), and the size
sweep a page advances one job at a time."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar, Self

from ..analysis.ports import PortRun, PortsVerdict, ports_verdict
from ..analysis.sweep import ladder
from ..i18n import N_, _, translate_text
from ..model.cases import Case, format_shape
from ..model.errors import BadInput, JaxCompareError
from ..model.formatting import cut
from ..model.platforms import PLATFORMS, PREFERRED, error_first_line, gap_line, is_accelerator, platform
from ..model.result import Result
from ..model.spec import (
    DEVICES,
    DTYPES,
    MATMUL_PRECISIONS,
    PRECISIONS,
    TIMING_PRESETS,
    Spec,
    TimingConfig,
    parse_shape,
)

GROUP_LABELS = {"numpy": "NumPy", "scipy": "SciPy"}
# Shown in the reader's language by device_label() (the Device control's format_func); the Timing
# control's labels, with how long each preset should take, are app/estimates.py's.
SIZE_CHOICES = ("small", "large", "custom")
# Where Compare and Pitfalls open: the JAX docs' "Benchmarking JAX code" example at its large size
# (as the CLI's default and the README's screenshot), a first result that shows JAX's case.
DEFAULT_CASE = "centered_gram"
URL_VALUE_CHARS = 60  # longer than any valid URL value (a case name, a shape)
# 'auto' names the platform table's order of preference (PREFERRED); each platform is its table label.
DEVICE_LABELS = {"auto": N_("auto (GPU, else TPU, else CPU)"),
                 **{name: found.label for name, found in PLATFORMS.items()}}


def device_label(device: str) -> str:
    """'auto (GPU, else TPU, else CPU)', 'CPU'...: the device control's format_func."""
    return _(DEVICE_LABELS[device])


def running_platform(device: str, env: Mapping[str, Any] | None) -> str | None:
    """The platform a run on the Device box's ``device`` would use: 'auto' takes the worker's GPU,
    else TPU, else CPU (as the engine's resolve_device); None while the worker has not reported."""
    if device != "auto":
        return device
    present = {d.get("platform") for d in ((env or {}).get("jax") or {}).get("devices", [])}
    return next((name for name in PREFERRED if name in present), None)


def float64_gap_text(case: Case, precision: str, device: str, env: Mapping[str, Any] | None) -> str | None:
    """What the chosen device lacks for this catalog case at this precision, and what to choose
    instead, as a recorded run found it (model/platforms.py); None where nothing is known missing."""
    found = platform(running_platform(device, env)) if precision == "x64" and not case.cases_file else None
    gap = found.float64_gap_of(case.name) if found is not None else None
    return None if found is None or gap is None else translate_text(gap_line(found, gap))


def timing_config(mode: str) -> TimingConfig:
    return TimingConfig.preset(mode)


# --- cases ---------------------------------------------------------------------------------
def group_label(group: str) -> str:
    return GROUP_LABELS.get(group, group.capitalize() or _("Custom"))


def ordered_cases(cases: Sequence[Case]) -> list[Case]:
    """NumPy cases, then SciPy, then anything else; catalog order inside a group."""
    rank = {"numpy": 0, "scipy": 1}
    return sorted(cases, key=lambda c: rank.get(c.group, 2))


def case_label(case: Case) -> str:
    """'NumPy · matmul — Matrix product A @ B': the group prefix keeps the list grouped and
    searchable by library."""
    title = f" — {translate_text(case.title)}" if case.title and case.title != case.name else ""
    return f"{group_label(case.group)} · {case.name}{title}"


def precision_label(precision: str) -> str:
    """'x32 · float32': the mode and the dtype both sides compute in."""
    return f"{precision} · {DTYPES[precision]}"


def size_labels(case: Case) -> dict[str, str]:
    """The shape control's choices for ``case``: 'Small · 10x10', 'Large · 1000x1000', 'Custom'."""
    return {"small": _("Small · {shape}").format(shape=format_shape(case.small_shape)),
            "large": _("Large · {shape}").format(shape=format_shape(case.large_shape)), "custom": _("Custom")}


def preset_shape_text(case: Case, size: str) -> str:
    """The custom-shape box's text for a preset size (small or large)."""
    return format_shape(case.small_shape if size == "small" else case.large_shape)


def check_shape_text(case: Case, text: str) -> tuple[int, ...]:
    """Parse a typed shape and check it against the case; BadInput says what is wrong."""
    shape = parse_shape(text)
    case.check_shape(shape)
    return shape


# --- URL state -----------------------------------------------------------------------------
def _url_value(value: Any) -> str | None:
    """A URL parameter's value (the last where the parameter is repeated, as st.query_params reads
    it), cut to a length no valid value reaches (a page echoes a bad one)."""
    if isinstance(value, list | tuple):
        value = value[-1] if value else None
    return None if value is None else cut(str(value), URL_VALUE_CHARS)


def _case_from_url(raw: str, cases: Sequence[Case]) -> tuple[Case | None, str | None]:
    for case in cases:
        if case.name == raw:
            return case, None
    import difflib

    close = difflib.get_close_matches(raw, [c.name for c in cases], n=3)
    if close:
        return None, N_("there is no case called {raw!r} (did you mean {close}?)").format(
            raw=raw, close=", ".join(close))
    return None, N_("there is no case called {raw!r}").format(raw=raw)


# The URL's warnings are kept (in session state) and shown later, in the language of that moment:
# they are worded in English from N_() templates, and the page shows them with translate_text().
def _url_warning(key: str, raw: str, reason: str, default: str) -> str:
    # One field for `key=raw`: a value alone ('shape', 'yes') could be a message of its own.
    return N_("The link's {setting} was ignored: {reason}. Using the default, {default}.").format(
        setting=f"{key}={raw}", reason=reason, default=default)


class PageConfig:
    """A page's controls as a frozen dataclass: each field (but those in NOT_CONTROLS) is one
    widget, keyed KEY_PREFIX + its name in session state; each field's default is the page's
    and the URL's default."""

    KEY_PREFIX: ClassVar[str] = ""
    NOT_CONTROLS: ClassVar[frozenset[str]] = frozenset()
    URL_SETTINGS: ClassVar[str] = "url_settings"  # key(URL_SETTINGS): the settings the URL held at this run's start
    TIMING_PRESETS: ClassVar[tuple[str, ...]] = TIMING_PRESETS  # the page's timing choices

    @classmethod
    def key(cls, name: str) -> str:
        """The session-state key of the widget for field ``name``."""
        return cls.KEY_PREFIX + name

    @classmethod
    def default(cls, name: str) -> Any:
        return next(f.default for f in fields(cls) if f.name == name)  # type: ignore[arg-type]

    @classmethod
    def controls(cls) -> list[str]:
        return [f.name for f in fields(cls) if f.name not in cls.NOT_CONTROLS]  # type: ignore[arg-type]

    def widgets(self) -> dict[str, Any]:
        """The widgets' values (by key) that show these settings."""
        return {self.key(name): self.widget_value(name) for name in self.controls()}

    @classmethod
    def from_widgets(cls, state: Mapping[str, Any]) -> Self:
        """The settings the page's widgets hold now."""
        if "ports" in cls.controls() and cls.key("ports") not in state:
            # The port picker is drawn only for a case with several ports: Streamlit forgets its key otherwise.
            state = {**state, cls.key("ports"): []}
        url = state.get(cls.key(cls.URL_SETTINGS))
        values = {}
        for name in cls.controls():
            value = state[cls.key(name)]
            if value is None and cls.default(name) is not None:
                # A choice that always holds one came back empty (the hosted demo under load: every segmented
                # control of a freshly loaded page sent none with the Run click): the URL's, which the page
                # wrote from them, else the default.
                value = getattr(url, name, None) if isinstance(url, cls) else None
                value = cls.default(name) if value is None else value
            values[name] = cls.field_value(name, value)
        return cls(**values)

    def widget_value(self, name: str) -> Any:
        return list(getattr(self, name)) if name == "ports" else getattr(self, name)  # a multi-select's list

    @classmethod
    def field_value(cls, name: str, value: Any) -> Any:
        return tuple(value or ()) if name == "ports" else value

    def chosen_ports(self, case: Case) -> list[str]:
        """The ports a config with a Ports box measures, in the case's order; the case's default alone
        where none of the chosen is the case's (a case changed under the picker, a case with one port)."""
        chosen = getattr(self, "ports", ()) if "ports" in self.controls() else ()
        return [name for name in case.port_names if name in chosen] or [case.default_port]

    def ports_query(self, case: Case | None) -> dict[str, str]:
        """The URL's ``ports`` where ``case`` (this config's) is given and they are not its default port alone."""
        if case is None or "ports" not in self.controls() or self.chosen_ports(case) == [case.default_port]:
            return {}
        return {"ports": ",".join(self.chosen_ports(case))}


@dataclass(frozen=True)
class CompareConfig(PageConfig):
    """Everything the Compare page's controls hold; what its URL encodes."""

    case: str = DEFAULT_CASE
    size: str = "large"  # small | large | custom
    custom_shape: str = ""
    precision: str = "x32"
    device: str = "auto"
    timing: str = "careful"
    profile: bool = False  # also trace a few JAX calls after the timed phases (the Profile tab)
    matmul_precision: str = "default"  # jax.default_matmul_precision for the comparison (Spec's)
    ports: tuple[str, ...] = ()  # the case's JAX ports to race; () or a stale choice: its default port alone

    def shape(self, case: Case) -> tuple[int, ...]:
        if self.size == "small":
            return case.small_shape
        if self.size == "large":
            return case.large_shape
        return check_shape_text(case, self.custom_shape)

    def spec(self, case: Case) -> Spec:
        """The one run these settings describe: a single chosen port other than the default names it
        (several ports run as a PortsRun, each its own Spec)."""
        port = self.chosen_ports(case)[0] if "ports" in self.controls() else case.default_port
        return Spec(case.name, self.shape(case), precision=self.precision, device=self.device,
                    cases_file=case.cases_file, port=None if port == case.default_port else port,
                    timing=timing_config(self.timing), matmul_precision=self.matmul_precision)

    def changed_note(self, shape: tuple[int, ...] | None, case: str, measured_shape: Sequence[int],
                     precision: str, matmul_precision: str = "default") -> str:
        """A caption's note when these settings would no longer measure what is shown ('' if they would)."""
        same = (self.case == case and shape == tuple(measured_shape) and self.precision == precision
                and self.matmul_precision == matmul_precision)
        return "" if same else " · " + _("*the sidebar settings have changed since this run*")

    def query(self, case: Case | None = None) -> dict[str, str]:
        """URL parameters: the case always, the rest only when not the default; the ports where
        ``case`` (this config's) is given and they are not its default port alone."""
        out = {"case": self.case, **self.ports_query(case)}
        if self.size == "custom":
            out["shape"] = self.custom_shape.replace(" ", "")
        elif self.size != self.default("size"):
            out["shape"] = self.size
        for key in ("precision", "device", "timing", "matmul_precision"):
            if getattr(self, key) != self.default(key):
                out[key] = getattr(self, key)
        if self.profile:
            out["profile"] = "1"
        return out


def _choice(query: Mapping[str, Any], key: str, options: Sequence[str], default: str,
            warnings: list[str]) -> str:
    raw = _url_value(query.get(key))
    if raw is None:
        return default
    if raw in options:
        return raw
    warnings.append(_url_warning(key, raw, N_("it must be one of {options}").format(options=", ".join(options)),
                                 default))
    return default


def compare_config_from_query(query: Mapping[str, Any], cases: Sequence[Case],
                              cls: type[CompareConfig] = CompareConfig) -> tuple[CompareConfig, list[str]]:
    """Read a page's URL into ``cls`` (its fields' defaults); every bad value becomes a warning
    and its default."""
    warnings: list[str] = []
    default = cls.default
    ordered = ordered_cases(cases)
    default_case = next((c for c in ordered if c.name == default("case")), ordered[0])
    case = default_case
    raw_case = _url_value(query.get("case"))
    if raw_case is not None:
        found, problem = _case_from_url(raw_case, ordered)
        if found is None:
            warnings.append(_url_warning("case", raw_case, problem or N_("unknown case"), default_case.name))
        else:
            case = found
    presets = {"small": case.small_shape, "large": case.large_shape}
    size = default("size")
    custom = format_shape(presets[size])
    raw_shape = _url_value(query.get("shape"))
    if raw_shape is not None:
        if raw_shape in presets:
            size, custom = raw_shape, format_shape(presets[raw_shape])  # the box shows the chosen preset
        else:
            try:
                shape = check_shape_text(case, raw_shape)
                custom = format_shape(shape)
                size = next((name for name in (default("size"), "small", "large") if presets[name] == shape),
                            "custom")
            except JaxCompareError as exc:
                preset = (N_("the small preset {shape}") if size == "small" else N_("the large preset {shape}"))
                warnings.append(_url_warning("shape", raw_shape, str(exc), preset.format(shape=custom)))
    ports = _ports_from_query(query, case, warnings) if "ports" in cls.controls() else ()
    config = cls(
        case=case.name, size=size, custom_shape=custom, ports=ports,
        precision=_choice(query, "precision", PRECISIONS, default("precision"), warnings),
        device=_choice(query, "device", DEVICES, default("device"), warnings),
        timing=_choice(query, "timing", cls.TIMING_PRESETS, default("timing"), warnings),
        profile=_choice(query, "profile", ("0", "1"), "1" if default("profile") else "0", warnings) == "1",
        matmul_precision=(_choice(query, "matmul_precision", MATMUL_PRECISIONS, default("matmul_precision"), warnings)
                          if "matmul_precision" in cls.controls() else default("matmul_precision")),
    )
    return config, warnings


def _ports_from_query(query: Mapping[str, Any], case: Case, warnings: list[str]) -> tuple[str, ...]:
    """The URL's ``ports=jnp,scan`` for ``case``, in its order; () (its default port) where absent or bad."""
    raw = _url_value(query.get("ports"))
    if raw is None:
        return ()
    names = [name.strip() for name in raw.split(",") if name.strip()]
    if not names or any(name not in case.port_names for name in names):
        warnings.append(_url_warning("ports", raw, N_("the case's ports are {ports}").format(
            ports=", ".join(case.port_names)), case.default_port))
        return ()
    return tuple(name for name in case.port_names if name in names)


@dataclass(frozen=True)
class SweepConfig(PageConfig):
    """The Size sweep page's controls; what its URL encodes."""

    KEY_PREFIX: ClassVar[str] = "sweep_"

    case: str = DEFAULT_CASE
    precisions: tuple[str, ...] = ("x32",)
    steps: int = 6
    largest: str = ""  # "" = the default for the device (see default_largest)
    device: str = "auto"
    timing: str = "quick"
    matmul_precision: str = "default"  # jax.default_matmul_precision at every point (Spec's)
    ports: tuple[str, ...] = ()  # several: a line per port; () or a stale choice: the case's default port

    def shapes(self, case: Case, backend: str = "cpu") -> list[tuple[int, ...]]:
        largest = check_largest(case, self.largest) if self.largest else default_largest(case, backend)
        return ladder(case, self.steps, largest)

    def base_spec(self, case: Case) -> Spec:
        """Every point's Spec but its shape and precision (and port, with several: SweepRun's)."""
        ports = self.chosen_ports(case)
        port = ports[0] if len(ports) == 1 and ports[0] != case.default_port else None
        return Spec(case.name, case.small_shape, precision=self.precisions[0], device=self.device,
                    cases_file=case.cases_file, port=port,
                    timing=timing_config(self.timing), matmul_precision=self.matmul_precision)

    def plan(self, case: Case, env: Mapping[str, Any] | None = None) -> SweepRun:
        """The sweep these settings describe; BadInput says what is wrong with them."""
        if not self.precisions:
            raise BadInput(N_("pick at least one precision"))
        shapes = self.shapes(case, backend_for(self.device, env))
        return SweepRun.plan(self.base_spec(case), shapes, self.precisions, self.chosen_ports(case))

    def query(self, case: Case | None = None) -> dict[str, str]:
        """URL parameters: the case always, the rest only when not the default (the ports where ``case`` is given)."""
        out = {"case": self.case, **self.ports_query(case)}
        if self.precisions != self.default("precisions"):
            out["precision"] = ",".join(self.precisions)
        if self.steps != self.default("steps"):
            out["steps"] = str(self.steps)
        if self.largest != self.default("largest"):
            out["largest"] = self.largest.replace(" ", "")
        for key in ("device", "timing", "matmul_precision"):
            if getattr(self, key) != self.default(key):
                out[key] = getattr(self, key)
        return out

    def widget_value(self, name: str) -> Any:
        return list(self.precisions) if name == "precisions" else super().widget_value(name)  # a multi-select's list

    @classmethod
    def field_value(cls, name: str, value: Any) -> Any:
        if name == "ports":
            return super().field_value(name, value)
        if name == "precisions":  # in the model's order, whichever was picked first
            return tuple(p for p in PRECISIONS if p in (value or []))
        if name == "steps":
            return int(value)
        if name == "largest":
            return (value or "").strip()
        return value


STEPS_RANGE = (3, 10)


def backend_for(device: str, env: Mapping[str, Any] | None) -> str:
    """The backend a run on ``device`` lands on ('auto' means the worker's default)."""
    if device != "auto":
        return device
    return ((env or {}).get("jax") or {}).get("default_backend", "cpu")


def known_backend(device: str, env: Mapping[str, Any] | None) -> str | None:
    """backend_for, or None while 'auto' waits for the worker to say what it has."""
    return backend_for(device, env) if env or device != "auto" else None


def default_largest(case: Case, backend: str = "cpu") -> tuple[int, ...]:
    """The case's large preset on CPU; on an accelerator, 2x per dimension (capped) to
    reach sizes where it shines."""
    if is_accelerator(backend):
        scaled = tuple(n * 2 for n in case.large_shape)
        try:
            case.check_shape(parse_shape(list(scaled)))
            return scaled
        except JaxCompareError:
            pass
    return case.large_shape


def check_largest(case: Case, text: str) -> tuple[int, ...]:
    """The sweep's top size: a shape the case accepts, with the small preset's rank, larger
    than the small preset."""
    shape = check_shape_text(case, text)
    if len(shape) != len(case.small_shape):
        raise BadInput(N_("the largest size needs {ndim} dimension(s) like {example}").format(
            ndim=len(case.small_shape), example=format_shape(case.large_shape)))
    if math.prod(shape) <= math.prod(case.small_shape):
        raise BadInput(N_("the largest size must be bigger than the smallest, {smallest}").format(
            smallest=format_shape(case.small_shape)))
    return shape


def sweep_config_from_query(query: Mapping[str, Any], cases: Sequence[Case]
                            ) -> tuple[SweepConfig, list[str]]:
    warnings: list[str] = []
    default = SweepConfig.default
    compare, case_warnings = compare_config_from_query({"case": query.get("case")} if "case" in query
                                                        else {}, cases)
    warnings += case_warnings
    case = next(c for c in cases if c.name == compare.case)
    precisions: tuple[str, ...] = default("precisions")
    raw = _url_value(query.get("precision"))
    if raw is not None:
        parts = tuple(p.strip() for p in raw.split(",") if p.strip())
        bad = [p for p in parts if p not in PRECISIONS]
        if bad or not parts:
            warnings.append(_url_warning("precision", raw, N_("give x32, x64 or x32,x64"),
                                        ",".join(default("precisions"))))
        else:
            precisions = tuple(p for p in PRECISIONS if p in parts)
    steps = default("steps")
    raw = _url_value(query.get("steps"))
    if raw is not None:
        lo, hi = STEPS_RANGE
        if raw.isdecimal() and lo <= int(raw) <= hi:
            steps = int(raw)
        else:
            warnings.append(_url_warning("steps", raw, N_("it must be a whole number from {lo} to {hi}").format(
                lo=lo, hi=hi), str(default("steps"))))
    largest = default("largest")
    raw = _url_value(query.get("largest"))
    if raw is not None:
        try:
            largest = format_shape(check_largest(case, raw))
        except JaxCompareError as exc:
            warnings.append(_url_warning("largest", raw, str(exc), N_("the case's large preset")))
    config = SweepConfig(
        case=case.name, precisions=precisions, steps=steps, largest=largest,
        ports=_ports_from_query(query, case, warnings),
        device=_choice(query, "device", DEVICES, default("device"), warnings),
        timing=_choice(query, "timing", SweepConfig.TIMING_PRESETS, default("timing"), warnings),
        matmul_precision=_choice(query, "matmul_precision", MATMUL_PRECISIONS, default("matmul_precision"), warnings),
    )
    return config, warnings


# --- size sweep, driven step by step ---------------------------------------------------------------
@dataclass
class SweepRun:
    """A sweep the page advances on each poll: at most one job in the device queue at a time,
    so other users' measurements interleave with it. Not thread-safe; one session owns it.
    With several ``ports`` each point is measured once per port, a port's later sizes dropped
    after its first failure (a port that times out at one size would at every larger one)."""

    base: Spec
    points: list[tuple[tuple[int, ...], str]]  # (shape, precision), in run order
    results: list[Result] = field(default_factory=list)
    failures: list[tuple[str, str]] = field(default_factory=list)  # (point: '10x10 x32', the error, as recorded)
    next_index: int = 0
    job: Any = None
    current: tuple[tuple[int, ...], str, str | None] | None = None  # (shape, precision, port)
    stopped: bool = False
    ports: tuple[str | None, ...] = (None,)  # None: the base spec's port (the case's default)
    dropped: set[str | None] = field(default_factory=set)  # ports that failed: their larger sizes are not run

    @classmethod
    def plan(cls, base: Spec, shapes: Sequence[tuple[int, ...]], precisions: Sequence[str],
             ports: Sequence[str] = ()) -> SweepRun:
        """Small to large; both precisions (and every port) at each size, so a stopped sweep still overlays."""
        points = [(tuple(shape), p) for shape in shapes for p in precisions]
        return cls(base=base, points=points, ports=tuple(ports) if len(ports) > 1 else (None,))

    @property
    def order(self) -> list[tuple[tuple[int, ...], str, str | None]]:
        """Every measurement in run order: (shape, precision, port)."""
        return [(shape, precision, port) for shape, precision in self.points for port in self.ports]

    @property
    def total(self) -> int:
        return len(self.points) * len(self.ports)

    @property
    def finished(self) -> bool:
        return self.job is None and (self.stopped or self.next_index >= self.total)

    @property
    def completed(self) -> int:
        return len(self.results) + len(self.failures)

    def extent(self) -> tuple[float, float] | None:
        """Smallest and largest planned element counts (a stable x axis while running)."""
        if not self.points:
            return None
        sizes = [math.prod(shape) for shape, _ in self.points]
        return float(min(sizes)), float(max(sizes))

    def _spec(self, shape: tuple[int, ...], precision: str, port: str | None) -> Spec:
        return replace(self.base, shape=shape, precision=precision, **({} if port is None else {"port": port}))

    def specs(self, start: int = 0) -> list[Spec]:
        """The Spec of every measurement from ``start`` on, in run order."""
        return [self._spec(*point) for point in self.order[start:]]

    def plan_text(self) -> str:
        """'10x10 → 32x32 → 100x100: 6 measurement(s).' for the sidebar, before it runs."""
        sizes = list(dict.fromkeys(shape for shape, _ in self.points))
        return _("{sizes}: {count} measurement(s).").format(sizes=" → ".join(format_shape(s) for s in sizes),
                                                          count=self.total)

    def progress_label(self) -> str:
        """'Size 2 of 6: 32x32 x32' (and the port, with several): which point is being measured."""
        shape, precision, port = self.current or ((), "", None)
        label = _("Size {index} of {total}: {shape} {precision}").format(
            index=min(self.completed + 1, self.total), total=self.total, shape=format_shape(shape), precision=precision)
        return label + (f" {port}" if port else "")

    def fraction(self) -> float:
        if not self.points:
            return 1.0
        running = float(getattr(self.job, "progress", 0.0) or 0.0) if self.job is not None else 0.0
        return min((self.completed + running) / self.total, 1.0)

    def _fail(self, port: str | None, point: str, error: str) -> None:
        self.failures.append((point, error))
        self.dropped.add(port)
        self.stopped = self.dropped >= set(self.ports)  # the first failure of the last port left stops it

    def advance(self, submit: Callable[[Spec], Any]) -> bool:
        """Collect a finished job and submit the next point; True when a result or error landed.
        A port's first failure drops its larger sizes (one that times out or runs out of memory is
        followed by larger ones), and stops the sweep once no port is left; what landed is kept."""
        landed = False
        if self.job is not None and self.job.done:
            shape, precision, port = self.current or ((), "", None)
            if self.job.error is not None:
                if not self.stopped:
                    self._fail(port, f"{format_shape(shape)} {precision}" + (f" {port}" if port else ""),
                               str(self.job.error))
            elif self.job.value is not None:
                self.results.append(self.job.value)
            self.job, self.current = None, None
            landed = True
        order = self.order
        while self.job is None and not self.stopped and self.next_index < len(order):
            shape, precision, port = order[self.next_index]
            self.next_index += 1
            if port in self.dropped:
                continue
            self.current = (shape, precision, port)
            try:
                self.job = submit(self._spec(shape, precision, port))
            except JaxCompareError as exc:
                self._fail(port, f"{format_shape(shape)} {precision}" + (f" {port}" if port else ""), str(exc))
                self.job, self.current = None, None
                landed = True
                break  # a refusal (a server's limit) says so before the next is tried
        return landed

    def stop(self) -> None:
        """Stop after keeping what has landed; a running job is cancelled."""
        self.stopped = True
        if self.job is not None:
            self.job.cancel()


# --- several ports of one case, driven port by port ---------------------------------------------------
@dataclass
class PortsRun:
    """The chosen ports of one case at one shape, measured one after another: each is a job of its own
    (so the server's limits count each port as a run) and at most one is in the device queue at a
    time, as a sweep's points. A port that fails gets its one line and the next one runs; Stop ends
    the run with what has landed. Not thread-safe; one session owns it."""

    base: Spec
    ports: list[str]
    profile_dir: str | None = None  # where each port's run is traced (the Profile toggle), else None
    runs: list[PortRun] = field(default_factory=list)
    # Its results taken in by the page (shown, saved to History) once it finished: a race reopened from
    # History starts so, being saved already.
    harvested: bool = False
    next_index: int = 0
    job: Any = None
    current: str | None = None
    stopped: bool = False

    @property
    def finished(self) -> bool:
        return self.job is None and (self.stopped or self.next_index >= len(self.ports))

    @property
    def results(self) -> list[Result]:
        return [run.result for run in self.runs if run.result is not None]

    def spec(self, port: str) -> Spec:
        return replace(self.base, port=port)

    def specs(self, start: int = 0) -> list[Spec]:
        """The Spec of every port from ``start`` on, in run order."""
        return [self.spec(port) for port in self.ports[start:]]

    def progress_label(self) -> str:
        """'Port 2 of 3: scan': which port is being measured."""
        return _("Port {index} of {total}: {port}").format(
            index=min(len(self.runs) + 1, len(self.ports)), total=len(self.ports), port=self.current or "")

    def fraction(self) -> float:
        running = float(getattr(self.job, "progress", 0.0) or 0.0) if self.job is not None else 0.0
        return min((len(self.runs) + running) / max(len(self.ports), 1), 1.0)

    @property
    def started(self) -> bool:
        """Whether a port was submitted already: the later ones go to its device."""
        return self.next_index > 0

    def advance(self, submit: Callable[[Spec], Any]) -> bool:
        """Collect a finished port and submit the next; True when a port's result or line landed. A
        port refused at once (a server's limit) gets its line, and the next is tried."""
        landed = False
        if self.job is not None and self.job.done:
            job, port = self.job, self.current or ""
            self.runs.append(PortRun(port, result=job.value) if job.error is None and job.value is not None
                             else PortRun(port, error=error_first_line(str(job.error or N_("it did not run")))))
            if job.status == "cancelled":
                self.stopped = True
            self.job, self.current, landed = None, None, True
        while self.job is None and not self.stopped and self.next_index < len(self.ports):
            port = self.ports[self.next_index]
            try:  # submitted before next_index moves on, so ``started`` says whether a port went first
                self.job, self.current = submit(self.spec(port)), port
            except JaxCompareError as exc:
                self.runs.append(PortRun(port, error=error_first_line(str(exc))))
                landed = True
            finally:
                self.next_index += 1
        return landed

    def stop(self) -> None:
        """Stop after keeping what has landed; a running port is cancelled."""
        self.stopped = True
        if self.job is not None:
            self.job.cancel()

    def verdict(self) -> PortsVerdict:
        """The race among the ports that have landed (analysis/ports)."""
        return ports_verdict(self.runs, case=self.base.case, shape=self.base.shape, precision=self.base.precision)
