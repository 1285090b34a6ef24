# SPDX-License-Identifier: LGPL-2.1-or-later
"""Children that exited before the checkpoint but were not reaped are
still reaped by their restored parent, by the pids it stored, with the
status they ended with (exit codes and a signal)."""

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
