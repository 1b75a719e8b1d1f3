"""Makes a Python process hold a device the way libtpu holds a TPU chip, for tests/test_one_holder.py:
with JAXCOMPARE_TEST_DEVICE_LOCK set, each process started with this folder on PYTHONPATH takes an
exclusive lock on that file for its whole life, and one that finds it taken fails when it imports
JAX, with libtpu's error (as a second process that opens a TPU does); the holder's import of JAX
warns as libtpu does where transparent hugepages are off. Each process appends its pid,
its kind and whether it got the lock to the lock's log."""

import fcntl
import os
import sys

_path = os.environ.get("JAXCOMPARE_TEST_DEVICE_LOCK")
if _path:
    _fd = os.open(_path, os.O_RDWR | os.O_CREAT, 0o600)
    with open("/proc/self/cmdline", "rb") as _cmd:
        _what = "restart" if b"jaxcompare.engine.worker.restart" in _cmd.read() else "worker"
    try:
        fcntl.flock(_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        _state = "refused"

        class _Held:
            """Any import of JAX fails as libtpu fails a second process."""

            def find_spec(self, name, path=None, target=None):
                if name == "jax":
                    raise RuntimeError("Unable to initialize backend 'tpu': ABORTED: Internal error when "
                                       "accessing libtpu multi-process lockfile")

        sys.meta_path.insert(0, _Held())
    else:
        _state = "holds"

        class _Opening:
            """The holder's JAX import warns as libtpu's does on a host without transparent hugepages."""

            def find_spec(self, name, path=None, target=None):
                if name == "jax":
                    import warnings

                    warnings.warn("Transparent hugepages are not enabled. TPU runtime startup and shutdown "
                                  "time should be significantly improved on TPU v5e and newer.", stacklevel=2)

        sys.meta_path.insert(0, _Opening())
    with open(_path + ".log", "a") as _log:
        _log.write(f"{os.getpid()} {_what} {_state}\n")
