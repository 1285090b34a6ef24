# SPDX-License-Identifier: LGPL-2.1-or-later
"""pytest fixtures for the end-to-end tests.

`session` gives each test its own coordinator address and checkpoint
directory (tests/ckpt_harness.py) and cleans up after it. Every test also
runs under a hard time limit (CKPT_TEST_TIMEOUT seconds, default 900, or
@pytest.mark.time_limit(N)) enforced with SIGALRM, so a hang fails the test
with a traceback instead of stalling the suite; the helpers' own waits are
bounded well below it.
"""

import os
import signal
import sys

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


@pytest.fixture(autouse=True)
def _time_limit(request):
    marker = request.node.get_closest_marker("time_limit")
    limit = marker.args[0] if marker else DEFAULT_TIME_LIMIT

    def expired(signum, frame):
        raise TimeLimitExceeded("test exceeded its %d s time limit" % limit)

    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(limit)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


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
