"""A configuration page's sidebar form (Compare, Size sweep, Pitfalls, JAX versions): the cases it
offers, its widgets' keys, the settings they hold now, and the boxes those pages share."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar

import streamlit as st

from ..engine import Estimate
from ..i18n import N_, _, translate_text
from ..model.cases import Case
from ..model.errors import JaxCompareError
from ..model.spec import DEVICES, MATMUL_PRECISIONS, PRECISIONS, Spec, TimingConfig
from . import cases_ui, controls, environment_view, estimates, language, resources

Config = TypeVar("Config", bound=controls.PageConfig)
SHAPE_HELP = N_("Sizes separated by x, like 500x500 (or 100000 for a vector).")
MATMUL_PRECISION_HELP = N_(
    "What JAX's float32 matrix products and convolutions run at (`jax.default_matmul_precision`). On a TPU: "
    "one bfloat16 pass (default), three (high) or six, about float32 (highest). On an NVIDIA Ampere or newer "
    "GPU: TF32 (default, high) or float32 (highest). No effect on the CPU or in float64. Recorded with the "
    "result; the fraction of peak follows it.")


@dataclass(frozen=True)
class PageForm(Generic[Config]):
    """The page's config class (each field one widget) and the cases its Case box offers."""

    config: type[Config]
    cases: list[Case]

    def key(self, name: str) -> str:
        """The session-state key of the widget for the config's field ``name``."""
        return self.config.key(name)

    def current(self) -> Config:
        """The settings the page's widgets hold now."""
        return self.config.from_widgets(st.session_state)

    def on_case_change(self) -> None:
        """The Case and Size boxes' callback: the Custom shape box shows the preset's shape."""
        cases_ui.fill_preset_shape(self.config)

    def on_case_choice(self, presets: bool) -> None:
        """The Case box's callback: a new case starts from its default port, and (``presets``) the Custom
        shape box shows its preset."""
        if "ports" in self.config.controls():
            st.session_state[self.key("ports")] = []
        if presets:
            self.on_case_change()

    def case_box(self, help: str | None = None, *, presets: bool = True) -> Case:
        """The Case box, each case named in the reader's language; returns the chosen case.
        ``presets``: the page has shape_boxes, so a new case puts its preset in the Custom box."""
        labels = {c.name: controls.case_label(c) for c in self.cases}
        language.selectbox(_("Case"), [c.name for c in self.cases], format_func=labels.__getitem__,
                           key=self.key("case"), on_change=self.on_case_choice, args=(presets,), help=help)
        return cases_ui.case_by_name(st.session_state[self.key("case")])

    def shape_boxes(self, case: Case, custom_help: str | None = SHAPE_HELP) -> None:
        """The Shape box (the case's small and large presets, or Custom) and the Custom shape box."""
        st.segmented_control(_("Shape"), controls.SIZE_CHOICES, format_func=controls.size_labels(case).__getitem__,
                             key=self.key("size"), required=True, on_change=self.on_case_change)
        st.text_input(_("Custom shape"), key=self.key("custom_shape"),
                      disabled=st.session_state[self.key("size")] != "custom", live=True,
                      placeholder=_("e.g. 500x500"), help=custom_help and _(custom_help))

    def case_and_shape(self, case_help: str) -> tuple[Case, tuple[int, ...] | None]:
        """The Case, Shape and Custom shape boxes; the case and the shape they name, or None for
        the shape with the reason shown under the boxes."""
        case = self.case_box(case_help)
        self.shape_boxes(case)
        try:
            return case, self.current().shape(case)
        except JaxCompareError as exc:
            st.error(translate_text(str(exc)), icon=":material/error:")
            return case, None

    def ports_box(self, case: Case) -> None:
        """The Ports box, a multi-select of the case's JAX ports (its default chosen at first), on a page
        whose config has that control; nothing for a case with one port. A choice left from another
        case becomes this one's default port."""
        if "ports" not in self.config.controls() or len(case.all_ports) < 2:
            return
        key = self.key("ports")
        held = list(st.session_state.get(key) or ())
        chosen = [name for name in case.port_names if name in held]
        if not chosen or chosen != held:
            st.session_state[key] = chosen or [case.default_port]  # before the widget: Streamlit allows it then
        st.multiselect(_("Ports"), case.port_names, key=key, placeholder=case.default_port,
                       help=_("The ways of writing this case's JAX side. Pick several to race them: each runs as "
                              "a measurement of its own, one after another, and the page says which is "
                              "fastest.") + (" " + translate_text(case.ports_why) if case.ports_why else ""))

    def precision_box(self, help: str | None = None) -> None:
        st.segmented_control(_("Precision"), PRECISIONS, key=self.key("precision"), required=True,
                             format_func=controls.precision_label, help=help)

    def matmul_precision_box(self) -> None:
        """The Matmul precision box, on a page whose config has that control (Compare, Size sweep)."""
        if "matmul_precision" in self.config.controls():
            st.segmented_control(_("Matmul precision"), MATMUL_PRECISIONS, key=self.key("matmul_precision"),
                                 required=True, help=_(MATMUL_PRECISION_HELP))

    def device_box(self, env: dict[str, Any] | None) -> None:
        """The Device box, and a warning when the worker's ``env`` (None while it has not reported)
        has no such device."""
        language.selectbox(_("Device"), DEVICES, format_func=controls.device_label, key=self.key("device"))
        device_problem = environment_view.device_problem(st.session_state[self.key("device")], env)
        if device_problem:
            st.warning(device_problem, icon=":material/warning:")

    def float64_gap_note(self, case: Case, env: dict[str, Any] | None) -> None:
        """Where the chosen device cannot run the case at x64 (float64 LU or FFTs on a TPU), say so
        before a run fails, with buttons for what works: x32, or the CPU device."""
        state = st.session_state
        text = controls.float64_gap_text(case, state[self.key("precision")], state[self.key("device")], env)
        if text is None:
            return
        st.warning(text, icon=":material/block:")
        left, right = st.columns(2)
        left.button(_("Use x32"), on_click=self._choose, args=("precision", "x32"), key=self.key("use_x32"))
        right.button(_("Use the CPU"), on_click=self._choose, args=("device", "cpu"), key=self.key("use_cpu"))

    def _choose(self, name: str, value: str) -> None:
        st.session_state[self.key(name)] = value

    def timing_box(self, help: str | None = None, durations: Mapping[str, Estimate] | None = None) -> None:
        """The Timing box; ``durations``: each preset's estimate, said in a caption under it."""
        st.segmented_control(_("Timing"), self.config.TIMING_PRESETS, key=self.key("timing"), required=True,
                             format_func=estimates.timing_label, help=help)
        if durations:
            st.caption(estimates.presets_caption(durations))

    def measurement_boxes(self, help: BoxHelp, kind: str | None = None) -> tuple[Case, tuple[int, ...] | None]:
        """One measurement's boxes under the Configuration header (Compare, Pitfalls): case and
        shape, precision, device (checked against the worker's environment, and against what it lacks
        at x64) and timing, each with the page's ``help``; returns case_and_shape()'s case and shape.
        ``kind``: the job the page runs ('measure', 'pitfalls'), whose estimate each timing preset says."""
        st.header(_("Configuration"))
        chosen = self.case_and_shape(help.case)
        self.ports_box(chosen[0])
        self.precision_box(help.precision)
        env = resources.known_environment()
        self.device_box(env)
        self.float64_gap_note(chosen[0], env)
        self.matmul_precision_box()
        specs = self.port_specs(chosen[0]) if kind is not None and chosen[1] is not None else []
        self.timing_box(help.timing, None if not specs else preset_estimates(specs, kind or "measure",
                                                                             self.config.TIMING_PRESETS))
        return chosen

    def spec(self, case: Case) -> Spec | None:
        """The Spec the widgets describe now (a config with a spec(), as Compare's), or None."""
        make = getattr(self.current(), "spec", None)
        try:
            return make(case) if make is not None else None
        except JaxCompareError:
            return None


    def port_specs(self, case: Case) -> list[Spec]:
        """The runs the widgets describe now: one per chosen port where several are (each its own job),
        else spec()'s one; [] where the settings cannot run."""
        spec = self.spec(case)
        if spec is None:
            return []
        ports = self.current().chosen_ports(case) if "ports" in self.config.controls() else []
        return [replace(spec, port=port) for port in ports] if len(ports) > 1 else [spec]


def preset_estimates(specs: Sequence[Spec], kind: str = "measure",
                     presets: Sequence[str] = controls.TIMING_PRESETS) -> dict[str, Estimate]:
    """How long ``specs``, run one after another, would take at each of ``presets`` (a page's timing
    choices, in its order)."""
    runner = resources.get_runner()
    return {mode: runner.estimate_all([replace(spec, timing=TimingConfig.preset(mode)) for spec in specs], kind=kind)
            for mode in presets}


def sweep_estimates(config: controls.SweepConfig, case: Case, env: dict[str, Any] | None) -> dict[str, Estimate] | None:
    """How long the sweep ``config`` describes would take at each timing preset; None where it cannot run."""
    try:
        specs = config.plan(case, env).specs()
    except JaxCompareError:
        return None
    return preset_estimates(specs, presets=config.TIMING_PRESETS) if specs else None


def refusal(specs: Sequence[Spec], kind: str = "measure", *, sweep: bool = False) -> str | None:
    """Why this server would refuse ``specs`` (each a job; ``sweep``: the points of one sweep) when Run is
    pressed, said before it is: a limit or the host's memory (Runner.check), a sweep's length, and on a hosted
    server a run whose estimate at its low end passes the deadline (the runner refuses it too); None where it
    would be taken. The page disables Run and says this."""
    runner = resources.get_runner()
    try:
        if sweep:
            runner.settings.check_sweep(len(specs))
        for spec in specs:
            runner.check(spec)
    except JaxCompareError as exc:
        return translate_text(str(exc))
    if not specs or not runner.settings.hosted_mode:
        return None
    return _past_limit(specs, kind)


def _past_limit(specs: Sequence[Spec], kind: str) -> str | None:
    """estimates.past_limit_text for the largest of ``specs``: each is a job of its own (a sweep's points), and
    the largest is the one a deadline stops."""
    runner = resources.get_runner()
    largest = max(specs, key=lambda spec: math.prod(spec.shape))
    return estimates.past_limit_text(runner.estimate_all([largest], kind=kind), runner.timeout_s)


def run_hint(specs: Sequence[Spec], kind: str = "measure") -> None:
    """The caption under a Run button: about how long ``specs`` will take (one after another), what
    the figure rests on, and the queue's wait before them."""
    if not specs:
        return
    runner = resources.get_runner()
    wait, ahead = runner.queue_wait()
    estimate = runner.estimate_all(specs, kind=kind)
    warning = _past_limit(specs, kind)
    if warning:
        st.warning(warning, icon=":material/hourglass_disabled:")
    else:
        st.caption(estimates.run_hint(estimate, wait, ahead))


@dataclass(frozen=True)
class BoxHelp:
    """A measurement page's help texts for its Case, Precision and Timing boxes, in the reader's language."""

    case: str
    precision: str
    timing: str


def page_form(config: type[Config], *, catalog_only: bool = False) -> PageForm[Config]:
    """The form of a page whose widgets hold ``config``, offering cases_ui.cases(); ``catalog_only``:
    without a cases file's (a JAX version's worker loads catalog cases only)."""
    offered = cases_ui.cases()
    return PageForm(config, [c for c in offered if not c.cases_file] if catalog_only else offered)
