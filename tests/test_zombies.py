# SPDX-License-Identifier: LGPL-2.1-or-later
"""Children that exited before the checkpoint but were not reaped are
still reaped by their restored parent, by the pids it stored, with the
status they ended with (exit codes and a signal)."""

import time

import pytest

from ckpt_harness import app, checkpoint_and_kill, numbers

ITER = 200
ARGV = [app("zombie_wait"), str(ITER), "10"]
ITER_RX = r"^iter (\d+)$"


@pytest.mark.time_limit(300)
def test_zombies_reaped_after_restart(session):
    p = session.launch(ARGV)
    p.wait_line(r"^zombies \d+ \d+ \d+$")
    images, seen, before = checkpoint_and_kill(session, p, ITER_RX, 30)
    r = session.restart(images)
    rc = r.wait_exit()
    lines = r.lines()
    assert rc == 0 and lines[-1] == "OK zombies", (
        "exit %d, last lines %r, stderr:\n%s" % (rc, lines[-5:],
                                                r.stderr_text()))
    after = numbers(lines, ITER_RX)
    assert seen < after[0] <= before[-1] + 1
    assert after == list(range(after[0], ITER + 1))


@pytest.mark.time_limit(300)
def test_sigchld_of_a_child_ending_during_restore(session):
    """A parent with 200 unreaped children waits in sigsuspend for the
    SIGCHLD of one more child; that child ends right after the restart,
    while the parent is still recreating its zombies (whose own SIGCHLDs
    are taken away): its SIGCHLD still reaches the parent."""
    go = session.path("go")
    p = session.launch([app("sigchld_late"), go, "200"])
    p.wait_line(r"^waiting$")
    time.sleep(0.3)      # the 200 children have ended
    images = session.checkpoint(expect_images=2)
    session.kill_all()
    p.popen.wait(30)
    open(go, "w").close()
    r = session.restart(images)
    assert r.wait_exit(60) == 0, "%r %s" % (r.lines()[-3:],
                                            r.stderr_text())
    assert r.lines()[-1] == "reaped 7 zombies 200", r.lines()[-3:]
