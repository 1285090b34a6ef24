# SPDX-License-Identifier: LGPL-2.1-or-later
"""getpid(), gettid() and pthread_self() stay the same across restarts."""

import re

import pytest

from ckpt_harness import app, checkpoint_and_kill, numbers, reference_output

ITER = 800
PROGRESS = r"^iter (\d+)/"
STEP = 10
ARGV = [app("pid_check"), str(ITER), "10"]


def test_pid_check_reference(apps_only):
    ref = reference_output(ARGV)
    assert ref[-1] == "OK pid stable"


@pytest.mark.time_limit(600)
def test_pid_stable_across_two_restarts(session):
    p = session.launch(ARGV)
    start = p.wait_line(r"^start pid (\d+) tid (\d+) thread_tid (\d+)$")
    pid = int(start.group(1))
    assert pid == int(start.group(2))
    images, seen, before = checkpoint_and_kill(session, p, PROGRESS, 100)

    r1 = session.restart(images)
    # The kernel gave the restarted process another PID (the original's
    # is not reused this soon): the program must still see its own.
    assert r1.pid != pid, "the restart got the original PID %d by chance" % (
        pid)
    r1.wait_line(PROGRESS, minimum=before[-1] + 10 * STEP)
    after1 = numbers(r1.lines(), PROGRESS)
    assert seen + STEP <= after1[0] <= before[-1] + STEP, (
        "first restart resumed at %d, checkpoint was after %d" % (
            after1[0], seen))
    images2, seen2, before2 = checkpoint_and_kill(session, r1, PROGRESS,
                                                  after1[0] + 10 * STEP,
                                                  kill="command")
    assert not any(l.startswith("FAIL") for l in r1.lines()), r1.lines()

    r2 = session.restart(images2)
    rc = r2.wait_exit()
    lines = r2.lines()
    assert rc == 0 and lines[-1] == "OK pid stable", (
        "exit %d, last lines %r, stderr:\n%s" % (rc, lines[-3:],
                                                r2.stderr_text()))
    after2 = numbers(lines, PROGRESS)
    assert seen2 + STEP <= after2[0] <= before2[-1] + STEP
    assert after2 == list(range(after2[0], ITER + 1, STEP))
    assert not any(re.match(r"^start ", l) for l in r1.lines() + lines), (
        "a restarted process ran pid_check from the start")
