# SPDX-License-Identifier: LGPL-2.1-or-later
"""A process stopped for a checkpoint runs again on its own when its
coordinator stalls (here: SIGSTOP while the round waits in the suspend
phase): it waits no longer than the coordinator's own phase bounds (sent
in WELCOME) plus a little, instead of 120 s, and says FAILED. Once the
coordinator runs again, checkpoints work."""

import os
import re
import signal
import subprocess
import time

import pytest

from ckpt_harness import app
from fault_util import CountWatch, SilentFake

PHASE_S = 2
# after SUSPENDED: 2 phase timeouts + the 3 s wait for forked members +
# 2 s of slack (libckpt-preload/manager.c, order_wait_ms)
RESUME_BOUND_S = 2 * PHASE_S + 3 + 2
ARGV = [app("counter"), "1000000", "20"]


def wait_still(watch, still_s, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        now = time.monotonic()
        if watch.longest_gap(now - still_s, now) >= still_s - 0.02:
            return now - still_s
        time.sleep(0.05)
    raise AssertionError("the counter never stopped for the checkpoint")


@pytest.mark.time_limit(120)
def test_process_resumes_when_the_coordinator_stalls(session):
    session.env["CKPT_PHASE_TIMEOUT"] = str(PHASE_S)
    p = session.launch(ARGV)
    p.wait_line(r"^count (\d+) ", minimum=3)
    st = session.command("--status", timeout=30).stdout
    coord_pid = int(re.search(r"\(pid (\d+),", st).group(1))
    watch = CountWatch(p)
    fake = SilentFake(session.coord, 9002, program="mute",
                      behaviour="silent")
    cmd = subprocess.Popen([session.tool("ckpt_command"), "--checkpoint"],
                           env=session.env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        stopped_at = wait_still(watch, 0.3, PHASE_S)
        os.kill(coord_pid, signal.SIGSTOP)
        try:
            before = watch.last_count()
            deadline = time.monotonic() + RESUME_BOUND_S + 10
            while watch.last_count() == before and \
                    time.monotonic() < deadline:
                time.sleep(0.05)
            frozen = time.monotonic() - stopped_at
            assert watch.last_count() > before, (
                "still stopped %.1f s after the checkpoint stopped it"
                % frozen)
        finally:
            os.kill(coord_pid, signal.SIGCONT)
        cmd.communicate(timeout=60)
    finally:
        watch.close()
        fake.close()
        if cmd.poll() is None:
            cmd.kill()
    assert frozen < RESUME_BOUND_S + 3, frozen
    assert cmd.returncode == 1
    assert "no word from the coordinator" in p.stderr_text()
    images = session.checkpoint()
    assert len(images) == 1
