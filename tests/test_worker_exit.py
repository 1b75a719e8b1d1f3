"""A worker whose parent has gone (the CLI stopped by Ctrl-C, a server shut down) ends quietly: no traceback,
exit status 0, whatever it was doing; and a terminal's Ctrl-C, which reaches the whole process group, leaves
the worker to its parent. A real worker process started as the runner starts one, JAX on the CPU."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from multiprocessing.connection import Connection

from jaxcompare.engine.server import process

TARGET = "worker_targets:wait_for_eof"


def start_worker(*fds: int) -> tuple[subprocess.Popen[str], Connection]:
    """A worker as engine/server/process.py starts one (its own entry line), its stderr kept; ``fds`` passed on."""
    ours, theirs = socket.socketpair()
    env = {**os.environ, "JAXCOMPARE_WORKER_PRECISION": "x32"}
    proc = subprocess.Popen([sys.executable, "-c", process._ENTRY, str(theirs.fileno()), json.dumps(sys.path)],
                            pass_fds=(theirs.fileno(), *fds), env=env, stdin=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    theirs.close()
    conn = Connection(ours.detach())
    assert conn.recv()[0] == "ready"
    return proc, conn


def ended(proc: subprocess.Popen[str]) -> tuple[int, str]:
    err = proc.stderr.read()  # to its end: the worker has closed it
    return proc.wait(timeout=60), err


def test_a_worker_whose_parent_goes_mid_step_ends_quietly():
    read_end, write_end = os.pipe()
    proc, conn = start_worker(read_end)
    os.close(read_end)
    conn.send(("run", "job-1", TARGET, (read_end,)))  # pass_fds keeps the number
    assert conn.recv()[:3] == ("progress", "job-1", "waiting for the test")  # the step runs
    conn.close()  # the parent goes...
    os.close(write_end)  # ...and only then the step goes on: its next word finds no one
    code, err = ended(proc)
    assert "Traceback" not in err and "Error" not in err, err
    assert "went on after its parent had gone" not in err, err  # it stopped at its progress report
    assert code == 0


def test_ctrl_c_leaves_the_worker_to_its_parent_and_an_idle_one_ends_quietly_when_the_parent_goes():
    read_end, write_end = os.pipe()
    proc, conn = start_worker(read_end)
    os.close(read_end)
    proc.send_signal(signal.SIGINT)  # a terminal's Ctrl-C reaches every process of its group
    os.close(write_end)  # the step will not wait
    conn.send(("run", "job-1", TARGET, (read_end,)))
    replies = [conn.recv() for _ in range(3)]
    assert [r[0] for r in replies] == ["progress", "progress", "done"], replies
    assert replies[-1][1]["result"] == "done"
    conn.close()  # idle, waiting for its next step
    code, err = ended(proc)
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert code == 0
