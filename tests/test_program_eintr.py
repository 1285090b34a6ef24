# SPDX-License-Identifier: LGPL-2.1-or-later
"""The program's own EINTR survives a checkpoint in the same interruption
(docs/resources.md, signals). The wrappers retry a sleep or wait that the
checkpoint signal alone interrupted; one that a handler of the program
interrupted too must return, as without ckpt. tests/apps/sleep_alarms
sleeps 1 s at a time, cut short each time by a one-shot SIGALRM 4 ms
ahead (handler without SA_RESTART). A round stops the thread inside its
sleep for milliseconds, with every signal blocked; the alarm falls due
meanwhile and its handler runs as the checkpoint signal's returns, in the
same interruption. Before the fix the sleep went on to its end ("FAIL
round K: the alarm's handler ran ... into the sleep")."""

import pytest

from ckpt_harness import app, checkpoint_silently, numbers

STEP = r"^step (\d+)$"
ROUNDS = 3000


@pytest.mark.time_limit(300)
def test_sleep_returns_for_the_programs_alarm_during_checkpoints(session):
    s = session
    p = s.launch([app("sleep_alarms"), str(ROUNDS), "4000"])
    p.wait_line(STEP, minimum=40)
    for _ in range(20):
        checkpoint_silently(s, expect_images=1)
        assert p.alive(), (p.lines()[-3:], p.stderr_text())
    images = checkpoint_silently(s, expect_images=1)
    assert not [l for l in p.lines() if l.startswith("FAIL")], p.lines()[-3:]
    s.kill_all()
    p.wait_exit(30)
    r = s.restart(images)
    assert r.wait_exit() == 0, (r.lines()[-3:], r.stderr_text())
    assert r.lines()[-1] == "ok %d" % ROUNDS, r.lines()[-3:]
    assert numbers(r.lines(), STEP)
