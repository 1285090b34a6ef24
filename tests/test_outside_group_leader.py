# SPDX-License-Identifier: LGPL-2.1-or-later
"""A process group led by a process outside the computation: `timeout 60
ckpt_launch ...` makes timeout the leader. When the program reached its
place through a shell shim that execs, ckpt knows the leader as the parent
of the exec; the restart used to wait 2 s for that leader to come back and
blame "another restored process ... Connection timed out". It must resume
at once, say what it did, and continue exactly."""

import re
import time

import pytest

from ckpt_harness import (app, assert_resumed, checkpoint_and_kill,
                          numbers, tool)

N = 400
PROGRESS = r"^count (\d+) "


def launch_under_timeout(session, shim):
    counter = [app("counter"), str(N), "10"]
    argv = (["/bin/sh", "-c", "exec " + " ".join(counter)] if shim
            else counter)
    return session.start(["timeout", "60", tool("ckpt_launch"), "--"]
                         + argv, "timeout ckpt_launch")


def restart_timed(session, shim):
    """Launch, checkpoint, kill, restart; returns (seconds from starting
    ckpt_restart to the first progress line, its stderr)."""
    p = launch_under_timeout(session, shim)
    images, seen, before = checkpoint_and_kill(session, p, PROGRESS, 30,
                                               kill="command")
    t0 = time.monotonic()
    r = session.restart(images)
    r.wait_line(PROGRESS)
    elapsed = time.monotonic() - t0
    rc = r.wait_exit()
    assert rc == 0, "restart: exit %d; stderr:\n%s" % (rc, r.stderr_text())
    assert_resumed(before, numbers(r.lines(), PROGRESS), PROGRESS, N, seen)
    return elapsed, r.stderr_text()


@pytest.mark.time_limit(300)
def test_outside_leader_costs_no_wait(session):
    plain, plain_err = restart_timed(session, shim=False)
    shimmed, err = restart_timed(session, shim=True)
    print("restart to running: direct %.2f s, through a shim %.2f s"
          % (plain, shimmed))
    assert "Connection timed out" not in err, err
    assert "another restored process" not in err, err
    assert re.search(r"note: process group \d+ was led by process \d+, "
                     r"which is not restarted", err), (
        "no note says what became of the process group:\n%s" % err)
    # The wait was 2 s; the shim itself costs nothing at restart.
    assert shimmed < plain + 1.2, (
        "restart through the shim took %.2f s to run, a direct one %.2f s"
        % (shimmed, plain))
