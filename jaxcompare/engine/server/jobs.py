"""A queued job and who asked for it: what the runner's threads update and a front end polls.

A job knows its runner only through its JobContext (what cancelling needs), and its kind as an
object (server/job_kinds.py) that says its steps, how they combine and how long they take.
"""

from __future__ import annotations

import importlib
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from ...i18n import N_
from ...model.cases import Case
from ...model.errors import JaxCompareError, JobFailed
from ...model.spec import Spec

if TYPE_CHECKING:
    from .envs import JaxEnv

OTHER_KIND_S = 2.0  # a first guess at a job with no timing of its own: an environment, a cases listing


BASES = ("seen", "like", "scaled", "guess")  # from the firmest to the loosest


@dataclass(frozen=True)
class Estimate:
    """A run's expected duration in seconds and an honest range around it. ``basis``: 'seen' (this
    request ran before, ``runs`` times), 'like' (a first guess scaled by ``runs`` runs of the same case
    and shape at another timing), 'scaled' (by ``runs`` runs of other requests of its kind) or 'guess'
    (nothing like it has run in this server yet)."""

    seconds: float
    low: float
    high: float
    basis: str = "guess"
    runs: int = 0

    def left_s(self, elapsed_s: float) -> float:
        """Seconds left after ``elapsed_s``: never negative (past the estimate, see overdue())."""
        return max(self.seconds - elapsed_s, 0.0)

    def overdue(self, elapsed_s: float) -> bool:
        """Whether a run has taken longer than this estimate said."""
        return elapsed_s > self.seconds

    def __add__(self, other: Estimate) -> Estimate:
        """Two runs back to back (a sweep's points, a job's steps): the weaker basis of the two."""
        basis = max((self.basis, other.basis), key=BASES.index)
        return Estimate(self.seconds + other.seconds, self.low + other.low, self.high + other.high, basis,
                        min(self.runs, other.runs))


@dataclass(frozen=True)
class Owner:
    """Who asked for a job: the app session, the client it is rate-limited as (an address;
    None: the session), and the logged-in user when the app asks for a login."""

    session: str
    client: str | None = None
    user: str | None = None

    @property
    def rate_key(self) -> str:
        return self.client or self.session


def as_owner(owner: Owner | str | None) -> Owner | None:
    if owner is None or isinstance(owner, Owner):
        return owner
    return Owner(session=str(owner))


@dataclass(frozen=True)
class Step:
    """One call into a worker: which precision's worker, the function it runs (``module:function``,
    imported there) and its typed request (common/requests.py)."""

    precision: str
    target: str
    request: Any = None


class StepContext(Protocol):
    """What a job kind's prepare() may do before its step runs on a lane (server/lanes.LaneContext)."""

    @property
    def local(self) -> bool:
        """The lane's workers are local processes (not a cluster's slots): processes started here run beside them."""

    @property
    def device_label(self) -> str:
        """The lane's device, in words."""

    def progress(self, phase: str, fraction: float) -> None:
        """Say how far the job is."""

    def notice(self, text: str) -> None:
        """Tell the job's user something beside its phase."""

    def check_cancelled(self) -> None:
        """Raise Cancelled if the job was cancelled meanwhile."""

    def let_go(self, notice: str, job: Job) -> dict[str, str] | None:
        """On a device one process at a time may hold: ``notice`` told, the lane's workers stopped, and
        the environment for processes started here returned; None elsewhere."""


@dataclass(frozen=True)
class JobContext:
    """What a job may ask of the runner that queued it: to leave its queue when cancelled."""

    withdraw: Callable[[Job], None]


@dataclass(eq=False)
class Job:
    """A queued unit of work (one or more worker steps run back to back, never interleaved
    with another job on its device); its fields are updated by the runner's threads."""

    job_kind: JobKind  # what it is and does (server/job_kinds.py); ``kind`` is its name
    steps: tuple[Step, ...]
    timeout_s: float
    spec: Spec | None = None
    owner: str | None = None
    client: str | None = None
    user: str | None = None
    device: str | None = None  # the device whose queue it joined (None: the first device)
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    status: str = "queued"  # queued, running, done, failed, cancelled
    phase: str = "queued"
    progress: float = 0.0
    submitted_at: float = field(default_factory=time.time)
    started_at: float | None = None
    finished_at: float | None = None
    window: tuple[float, float] | None = None
    worker_pid: int | None = None
    node: str | None = None  # the Ray node it runs on (a cluster runner), once placed
    value: Any = None
    error: JaxCompareError | None = None
    # What a user should be told while it runs, beside its phase (a device handed from one process to another).
    notices: list[str] = field(default_factory=list)
    # A job of a versions run: the environment of the JAX release its worker runs (None: the runner's own).
    jax_env: JaxEnv | None = field(default=None, repr=False)
    # How long it should take once started (engine/server/durations.py): said when queued, said again when it
    # starts only if it waited (what a page showed before the run stays what its bar counts down from).
    estimate: Estimate | None = None
    work_started_at: float | None = None  # when its worker began the work (a fresh worker's start-up before)
    case: Case | None = field(default=None, repr=False)  # the case it measures, looked up once, where known here
    context: JobContext | None = field(default=None, repr=False)
    _cold: tuple[str, ...] = field(default=(), repr=False)  # the precisions whose workers it started
    _ceilings: bool = field(default=False, repr=False)  # it measured the CPU's ceilings first
    _peak_at: float | None = field(default=None, repr=False)  # when it reached the ceilings' phase
    _busy: float = field(default=0.0, repr=False)  # the share of the cores other programs took as it started
    _done: threading.Event = field(default_factory=threading.Event, repr=False)
    _cancel: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def kind(self) -> str:
        """Its kind's name ('measure', 'pitfalls', ...): for showing and logging; the code asks job_kind."""
        return self.job_kind.name

    @property
    def precision(self) -> str:
        return self.steps[0].precision

    @property
    def precisions(self) -> tuple[str, ...]:
        return tuple(step.precision for step in self.steps)

    @property
    def done(self) -> bool:
        return self._done.is_set()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def cancel(self) -> None:
        """Cancel: a queued job leaves its queue at once (the jobs behind it move up); a
        running one has its worker stopped."""
        self._cancel.set()
        if self.context is not None:
            self.context.withdraw(self)

    def finished_within(self, timeout: float) -> bool:
        """Wait at most ``timeout`` s; True once finished. Short waits in a loop let a caller's
        Ctrl-C through (a long lock wait may not see it until the job ends)."""
        return _interruptible(self._done, timeout)

    def wait(self, timeout: float | None = None) -> Any:
        """Block until finished; return the value or raise the job's error."""
        if not _interruptible(self._done, timeout):
            raise JobFailed(N_("job {id} did not finish within {timeout} s of waiting").format(
                id=self.id, timeout=timeout))
        if self.error is not None:
            raise self.error
        return self.value


def _interruptible(event: threading.Event, timeout: float | None) -> bool:
    """``event.wait(timeout)``, where a Ctrl-C is a KeyboardInterrupt wherever it lands: one that lands while
    Python's Condition takes its lock back leaves it unheld, and the wait's exit then raises "RuntimeError:
    release unlocked lock" instead (the TPU atlas's CLI printed that traceback when its call's time ran out)."""
    try:
        return event.wait(timeout)
    except RuntimeError as exc:
        if isinstance(exc.__context__, KeyboardInterrupt):
            raise exc.__context__ from None
        raise


class JobKind:
    """What a kind of job is: its steps, how their values combine into the job's, what it holds and
    how long it is guessed to take. One subclass a kind (server/job_kinds.py has the engine's own), one
    instance registered by name (register_kind); the runner asks the kind and compares no names."""

    name: ClassVar[str]
    # A visitor's measurement: counts against the queue's cap and a client's, and may measure the CPU's
    # ceilings first (the first measurement in a runner).
    capped: ClassVar[bool] = False

    def steps(self, *args: Any) -> tuple[Step, ...]:
        """The job's steps, from what ``Runner.submit_job(name, *args)`` was given: each a worker's precision,
        the function it runs there by import path ("package.module:function", importable from the caller's
        sys.path, which its workers inherit) and the request passed to it. Every kind says its own."""
        raise NotImplementedError(f"job kind {self.name!r} says no steps")

    def precisions(self, spec: Spec | None, key: str) -> tuple[str, ...]:
        """The workers a job of this kind would use, for its estimate before it is made (``key``: the
        estimate key asked for, estimate_key's form)."""
        return (spec.precision,) if spec is not None else ("x32",)

    def prepare(self, job: Job, step: Step, context: StepContext) -> Step:
        """The step as it is sent, just before it runs on its lane (server/lanes.py): where a device
        one process at a time may hold needs work from here first. As it is, by default."""
        return step

    def combine(self, job: Job, values: list[Any]) -> Any:
        """The job's value from its steps' values, in order."""
        return values[0]

    def failed(self, job: Job, error: JaxCompareError) -> JaxCompareError:
        """The error a user is told when a step failed with ``error``."""
        return error

    def estimate_key(self, job: Job) -> str:
        """What its duration is guessed and learnt as (server/durations.py): its name, and after a colon
        what makes one job of it take longer than another, where something does."""
        return self.name

    def work_parts(self, key: str, spec: Spec | None, case: Case | None) -> tuple[float, float, float]:
        """The first guess at a job's own work on a quiet machine, in seconds, and of them what fresh
        processes and NumPy's plain process take (the parts a busy machine stretches most)."""
        return OTHER_KIND_S, 0.0, 0.0

    def known(self, job: Job, kept: OrderedDict[Any, Any]) -> Any:
        """A value this runner already has for ``job`` (None: run it). ``kept``: this kind's memo in the runner."""
        return None

    def keep(self, job: Job, value: Any, kept: OrderedDict[Any, Any]) -> None:
        """Remember a finished job's value in ``kept``, for known()."""

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"<job kind {self.name}>"


_KINDS: dict[str, JobKind] = {}
# The engine's own kinds register themselves when this module is imported (by name, so that the job
# records here need not import what the kinds do).
_BUILTIN = "jaxcompare.engine.server.job_kinds"


def register_kind(kind: JobKind) -> JobKind:
    """Make ``kind`` known by its name to every runner in this process; returns it. A name already
    taken by another class is refused (a typo in a plug-in must not replace a kind)."""
    _builtins()
    taken = _KINDS.get(kind.name)
    if taken is not None and type(taken) is not type(kind):
        raise ValueError(f"job kind {kind.name!r} is already registered by {type(taken).__name__}")
    _KINDS[kind.name] = kind
    return kind


def job_kind(name: str) -> JobKind:
    """The registered kind called ``name``."""
    _builtins()
    try:
        return _KINDS[name]
    except KeyError:
        raise ValueError(f"no job kind {name!r}; known: {', '.join(sorted(_KINDS))}") from None


def job_kinds() -> dict[str, JobKind]:
    """Every registered kind, by name (a copy)."""
    _builtins()
    return dict(_KINDS)


def kind_for_key(key: str) -> JobKind:
    """The kind an estimate key (JobKind.estimate_key) belongs to."""
    return job_kind(key.partition(":")[0])


def _builtins() -> None:
    # Every time, not behind a flag: while one thread imports the module, the import system makes
    # another wait until its kinds are registered (a flag set first let a dispatcher thread find none).
    importlib.import_module(_BUILTIN)

