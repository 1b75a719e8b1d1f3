"""The shared queue under pressure: a capped queue, Stop that frees a place at once, tokens
spent only on accepted requests, one queue per device, and the runner's threads racing."""

from __future__ import annotations

import dataclasses
import os
import select
import textwrap
import threading
from pathlib import Path

import pytest
from support import QUICK, quick_spec

from jaxcompare import BadInput, JobFailed, Runner, Spec
from jaxcompare.engine.server.runner import Owner
from jaxcompare.engine.server.settings import Settings

pytestmark = pytest.mark.slow  # 20 s or more: collected first, so parallel workers end together


class Gate:
    """A cases file whose ``gated`` case blocks in the worker until the test opens the gate
    (creates a file), so a job can hold a queue for as long as a test needs."""

    def __init__(self, tmp_path: Path):
        self.path = tmp_path / "gate"
        self.reached = tmp_path / "reached"
        os.mkfifo(self.reached)
        self.cases_file = str(tmp_path / "gated_cases.py")
        Path(self.cases_file).write_text(textwrap.dedent(f"""
            import os
            import time

            import jax.numpy as jnp
            import numpy as np
            from jaxcompare import Case

            def gated(x):
                try:  # tell a test that listens (Gate.listen) that the job runs; none listens: ENXIO
                    fd = os.open({str(self.reached)!r}, os.O_WRONLY | os.O_NONBLOCK)
                    os.write(fd, b"in")
                    os.close(fd)
                except OSError:
                    pass
                for _ in range(60_000):  # at most ten minutes: the test opens the gate long before
                    if os.path.exists({str(self.path)!r}):
                        break
                    time.sleep(0.01)
                return np.sin(x)

            CASES = [Case(name="gated", numpy_fn=gated, jax_fn=jnp.sin,
                          make_inputs=lambda shape, dtype, rng: (rng.random(shape).astype(dtype),))]
        """))

    def spec(self) -> Spec:
        return Spec("gated", (4,), timing=QUICK, cases_file=self.cases_file)

    def open(self) -> None:
        self.path.touch()

    def listen(self) -> int:
        """Open the FIFO's reading end before submitting, so the worker's signal is not lost."""
        return os.open(self.reached, os.O_RDONLY | os.O_NONBLOCK)

    def wait_running(self, fd: int) -> None:
        """Block until the gated job runs in its worker (it writes to the FIFO): no polling."""
        ready, _, _ = select.select([fd], [], [], 240)
        os.close(fd)
        assert ready, "the gated job did not start within 240 s"


@pytest.fixture
def gate(tmp_path) -> Gate:
    return Gate(tmp_path)


def test_a_full_queue_refuses_at_once_and_refusals_spend_no_token(gate):
    settings = dataclasses.replace(Settings(), max_queue=2, max_jobs_per_minute=3)
    with Runner(settings=settings, timeout_s=240) as runner:
        listening = gate.listen()
        blocker = runner.submit(gate.spec())  # the CLI's own job: no owner, never rate-limited
        gate.wait_running(listening)  # out of the queue: the two places are for the jobs below
        alice = Owner("session-a", client="10.0.0.7")
        first = runner.submit(quick_spec(), owner=alice)
        second = runner.submit(quick_spec(), owner=Owner("session-b", client="10.0.0.7"))  # same client
        assert runner.queue_length() == 3
        with pytest.raises(BadInput, match=r"queue is full: 2 measurements are waiting.*would have waited about \d+"):
            runner.submit(quick_spec(), owner=alice)
        with pytest.raises(BadInput, match="square"):  # invalid: refused before any token is spent
            runner.submit(quick_spec(shape=(8, 9)), owner=alice)
        first.cancel()  # one place frees up at once
        third = runner.submit(quick_spec(), owner=alice)  # the third token: the refusals spent none
        third.cancel()
        with pytest.raises(BadInput, match="rate limit: at most 3 runs a minute"):
            runner.submit(quick_spec(), owner=Owner("session-c", client="10.0.0.7"))  # a new session, same client
        other = runner.submit(quick_spec(), owner=Owner("session-d", client="10.0.0.8"))
        gate.open()
        for job in (blocker, second, other):
            job.wait(240)
        assert [first.status, third.status] == ["cancelled", "cancelled"]


def test_stop_on_a_queued_job_frees_its_place_at_once(runner, gate):
    blocker = runner.submit(gate.spec())
    try:
        done_before = runner.submit(quick_spec())
        queued = [runner.submit(quick_spec()) for _ in range(3)]
        base = runner.position(queued[0])
        assert [runner.position(j) for j in queued] == [base, base + 1, base + 2]
        waits = [runner.estimate_wait_s(j) for j in queued]
        assert [runner.jobs_ahead(j) for j in queued] == [2, 3, 4]  # the gated job and done_before first
        queued[0].cancel()
        # No waiting on the dispatcher: the job is finished and out of the queue when cancel() returns.
        assert queued[0].done and queued[0].status == "cancelled"
        with pytest.raises(JobFailed, match="cancelled before it started"):
            queued[0].wait(0)
        assert [runner.position(j) for j in queued[1:]] == [base, base + 1]
        assert [runner.jobs_ahead(j) for j in queued] == [None, 2, 3]
        assert runner.estimate_wait_s(queued[2]) < waits[2]
        # A page's own environment job adds to the wait a newcomer is told, but is no one's measurement.
        wait, ahead = runner.queue_wait()
        assert ahead == 4 and wait > 0  # the gated job, done_before and the two still queued
        runner.submit_environment("x32")
        assert runner.queue_wait()[1] == ahead and runner.queue_wait()[0] > wait
        assert not blocker.done  # the running job was not disturbed
    finally:  # a failed assert above must not leave the gated job holding the module's runner
        gate.open()
    for job in (blocker, done_before, *queued[1:]):
        job.wait(240)
    assert runner.position(queued[2]) == -1


def test_each_device_has_its_own_queue_and_workers(gate):
    settings = dataclasses.replace(Settings(), devices=("cpu:0", "cpu:1"))
    env = {"XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    with Runner(settings=settings, worker_env=env, timeout_s=240) as runner:
        assert runner.devices == ["cpu:0", "cpu:1"]
        blocker = runner.submit(gate.spec(), owner="sweeper")
        other = runner.submit(quick_spec(), owner="visitor")
        result = other.wait(240)  # finishes while the first device is still held by the gate
        assert not blocker.done and runner.position(blocker) in (0, 1)
        assert {blocker.device, other.device} == {"cpu:0", "cpu:1"}
        assert result.jax.device == other.device  # measured on the device of its queue
        assert result.env["env_vars"]["JAXCOMPARE_WORKER_DEVICE"] == other.device
        # A sweep's later point stays on its owner's device, even with the other one idle.
        later = runner.submit(quick_spec(), owner="sweeper", rate_limited=False)
        assert later.device == blocker.device and runner.position(later) >= 1
        # So does a race's later port, which still counts as a run (sticky alone).
        port = runner.submit(quick_spec(), owner="sweeper", sticky=True)
        assert port.device == blocker.device and runner.position(port) >= 2
        gate.open()
        blocker.wait(240)
        assert later.wait(240).jax.device == blocker.device and port.wait(240).jax.device == blocker.device
        windows = {}
        for job in (blocker, other, later, port):
            windows.setdefault(job.device, []).append(job.window)
        for spans in windows.values():
            spans.sort()
            for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
                assert end <= start, f"two measurements overlapped on one device: {spans}"


def test_readers_and_the_dispatcher_race_without_harm(runner):
    """Pages read positions and waits while the dispatcher records durations and the worker
    streams progress: no reader may crash, and a finished job's phase stays its outcome."""
    # Every job its own timing settings, so each one that finishes adds a new duration entry.
    jobs = [runner.submit(Spec("matmul", (8, 8), timing=dataclasses.replace(QUICK, warmup_s=0.002 + i * 1e-4)))
            for i in range(4)]
    errors: list[BaseException] = []
    read_to_the_end: list[bool] = []
    stop = threading.Event()  # only if a job never finishes

    def read() -> None:
        try:
            while not stop.is_set():
                finished = 0
                for job in jobs:
                    runner.estimate_wait_s(job)
                    runner.position(job)
                    if job.done:
                        assert job.phase == job.status, (job.id, job.phase, job.status)
                        finished += 1
                if finished == len(jobs):  # a whole pass after the last job ended: it raced them all
                    read_to_the_end.append(True)
                    return
        except BaseException as exc:  # reported below
            errors.append(exc)

    readers = [threading.Thread(target=read) for _ in range(4)]
    for t in readers:
        t.start()
    try:
        for job in jobs:
            job.wait(240)
    except BaseException:
        stop.set()
        raise
    finally:
        for t in readers:
            t.join(60)
    assert not errors, errors
    assert len(read_to_the_end) == len(readers)
    assert all(job.phase == "done" and job.progress == 1.0 for job in jobs)


class _CtrlCWhileRelocking(threading.Event):
    """An Event whose wait meets Ctrl-C as CPython's Condition sometimes does: the KeyboardInterrupt lands while
    it takes its lock back, and the exit that releases the lock raises RuntimeError over it."""

    def wait(self, timeout=None):
        try:
            raise KeyboardInterrupt
        finally:
            raise RuntimeError("release unlocked lock")  # noqa: B012  # what threading.py raises there


def test_a_ctrl_c_that_lands_while_a_wait_relocks_is_a_keyboard_interrupt():
    # The TPU atlas's CLI printed the RuntimeError's traceback when its call's time ran out (SIGINT).
    from jaxcompare.engine.server.jobs import _interruptible

    with pytest.raises(KeyboardInterrupt):
        _interruptible(_CtrlCWhileRelocking(), 0.2)
    failing = threading.Event()
    failing.wait = lambda timeout=None: (_ for _ in ()).throw(RuntimeError("another"))  # not a Ctrl-C: as it is
    with pytest.raises(RuntimeError, match="another"):
        _interruptible(failing, 0.2)
