# SPDX-License-Identifier: LGPL-2.1-or-later
"""pytest fixtures for the end-to-end tests.

`session` gives each test its own coordinator address and checkpoint
directory (tests/ckpt_harness.py) and cleans up after it. Every test also
runs under a hard time limit (CKPT_TEST_TIMEOUT seconds, default 900, or
@pytest.mark.time_limit(N)) enforced with SIGALRM (or, in a pytest-xdist
worker that runs its tests outside the main thread, a timer raising in the
test's thread), so a hang fails the test with a traceback instead of
stalling the suite; the helpers' own waits are bounded well below it.
"""

import ctypes
import os
import re
import signal
import subprocess
import sys
import threading

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ckpt_harness  # noqa: E402

DEFAULT_TIME_LIMIT = int(os.environ.get("CKPT_TEST_TIMEOUT", "900"))


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "time_limit(seconds): hard limit for one test")
    config.addinivalue_line(
        "markers", "needs_core: needs the built ckpt tools and libckpt.so")
    config.addinivalue_line(
        "markers", "mpi: an MPICH job (tests/test_mpi.py; needs mpich)")


class TimeLimitExceeded(Exception):
    pass


def _raise_in_thread(ident, limit):
    """Raise TimeLimitExceeded in the thread ident at its next Python
    instruction (every wait of the harness wakes at least once a
    second)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(ident), ctypes.py_object(TimeLimitExceeded))
    sys.stderr.write("test exceeded its %d s time limit\n" % limit)


@pytest.fixture(autouse=True)
def _time_limit(request):
    marker = request.node.get_closest_marker("time_limit")
    limit = marker.args[0] if marker else DEFAULT_TIME_LIMIT

    def expired(signum, frame):
        raise TimeLimitExceeded("test exceeded its %d s time limit" % limit)

    if threading.current_thread() is not threading.main_thread():
        # a pytest-xdist worker may run its tests in a thread of its own
        # (make test runs two workers), where no signal handler can be set
        timer = threading.Timer(limit, _raise_in_thread,
                                (threading.get_ident(), limit))
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            timer.cancel()
        return
    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(limit)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


# What the kernel logs when it kills a process: a restored program dying
# of SIGSEGV shows here with its faulting address and the object it ran
# in (two faults of libckpt were found this way, in CI logs that said
# only "status -11").
KERNEL_FAULT = re.compile(r"segfault at|trap |general protection|"
                          r"Out of memory|Killed process|BUG:|WARNING:")


def _uptime():
    with open("/proc/uptime") as f:
        return float(f.read().split()[0])


def _kernel_faults_since(start):
    try:
        out = subprocess.run(["dmesg"], capture_output=True, text=True,
                             timeout=5).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    lines = []
    for line in out.splitlines():
        m = re.match(r"\[\s*(\d+\.\d+)\]", line)
        if m and float(m.group(1)) >= start and KERNEL_FAULT.search(line):
            lines.append(line + _in_libckpt(line))
    return "\n".join(lines[-20:])


def _in_libckpt(line):
    """The function and source line of a fault inside this build's
    libckpt.so ("libckpt.so[2c3ee,..." is an offset in the file)."""
    m = re.search(r"libckpt\.so\[([0-9a-f]+),", line)
    if not m:
        return ""
    try:
        out = subprocess.run(["addr2line", "-f", "-i", "-e",
                              ckpt_harness.LIBCKPT, "0x" + m.group(1)],
                             capture_output=True, text=True,
                             timeout=10).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return ""
    return "\n    in libckpt: " + " ".join(out)


# libckpt.so runs inside every program the tests launch; whatever a test
# does to those programs, a fault in libckpt's own code is a bug, even
# when the test's program went on (a helper clone dies alone: ten such
# faults a run went unseen until the kernel log was read).
LIBCKPT_FAULT = re.compile(r"(segfault at|trap ).*libckpt\.so\[")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.when != "call" or rep.skipped:
        return
    text = _kernel_faults_since(item.stash.get(_STARTED, 0.0))
    if rep.failed and text:
        rep.sections.append(("kernel log during the test", text))
    elif rep.passed and LIBCKPT_FAULT.search(text):
        rep.outcome = "failed"
        rep.longrepr = "the kernel logged a fault inside libckpt.so " \
            "during the test:\n" + text


_STARTED = pytest.StashKey()


@pytest.fixture(autouse=True)
def _note_start(request):
    request.node.stash[_STARTED] = _uptime() - 1.0
    yield


def _require_core():
    missing = ckpt_harness.missing_core()
    if missing:
        msg = "ckpt core not built (run make): missing " + ", ".join(missing)
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)


def _require_apps():
    if not os.path.isdir(ckpt_harness.APPS):
        pytest.fail("test programs not built: run `make test-apps`")


@pytest.fixture
def session():
    """A fresh coordinator address and checkpoint directory for one test."""
    _require_apps()
    _require_core()
    s = ckpt_harness.Session()
    try:
        yield s
    finally:
        s.close()


@pytest.fixture
def apps_only():
    """For tests that only need the test programs (reference runs)."""
    _require_apps()
