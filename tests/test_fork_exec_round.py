# SPDX-License-Identifier: LGPL-2.1-or-later
"""Checkpoints that land in the middle of fork, exec and exit: a program
forks (or posix_spawns) a child every few milliseconds, the child execs
twice and exits with a known status that the parent checks. Every
checkpoint taken back to back while this runs must succeed with a
consistent set of images (a forked or exec'd process joins the round, an
exiting one is left to its parent as a zombie); the last set restarts and
the program carries on from where it was, every child reaped with the
right status."""

import pytest

from ckpt_harness import app, checkpoint_while_running, numbers

N = 2000
ROUND = r"^round (\d+) ok$"


@pytest.mark.time_limit(300)
def test_checkpoints_during_fork_exec_and_exit(session):
    p = session.launch([app("fork_exec_storm"), str(N)])
    p.wait_line(ROUND, minimum=50)
    images = None
    for _ in range(8):
        images = checkpoint_while_running(session, p)
    session.kill_all()
    p.popen.wait(30)
    before = numbers(p.lines(), ROUND)
    assert not any(l.startswith("FAIL") for l in p.lines()), p.lines()[-3:]
    assert before[-1] < N, "the program finished before it was killed"
    # 1 to 3 processes: the parent, and a child or grandchild in flight
    assert 1 <= len(images) <= 3, images

    r = session.restart(images)
    rc = r.wait_exit()
    assert rc == 0, "exit %d; last lines %r; stderr:\n%s" % (
        rc, r.lines()[-3:], r.stderr_text())
    after = numbers(r.lines(), ROUND)
    assert not any(l.startswith("FAIL") for l in r.lines()), r.lines()[-3:]
    assert after and after[-1] == N and r.lines()[-1] == "done", (
        r.lines()[-3:])
    assert after == list(range(after[0], N + 1)), "rounds skipped or repeated"
    assert after[0] <= before[-1] + 1, (
        "resumed at round %d, but round %d was the last before the kill" % (
            after[0], before[-1]))
