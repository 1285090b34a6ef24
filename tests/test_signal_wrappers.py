# SPDX-License-Identifier: LGPL-2.1-or-later
"""sigaction and sigprocmask under ckpt cost no system call of their own:
instead of blocking every signal around their work (two more system
calls), they run in a section that the checkpoint signal, when it comes,
waits for (libckpt-preload/threads.c, threads_critical_begin). These
tests storm those calls from two threads while a third sends the program
SIGUSR1 (its handler runs inside the sections) and the program takes the
checkpoint signal twice (ckpt moves): every checkpoint must complete, the
program must read back every mask and action as it set them, and the
computation must continue exactly after a restart and a second one."""

import pytest

from ckpt_harness import (app, checkpoint_and_kill, checkpoint_silently,
                          numbers, restart_and_checkpoint_again,
                          restart_to_end)

STEPS = 100
PROGRESS = r"^step (\d+)$"


@pytest.mark.time_limit(400)
def test_checkpoints_through_a_storm_of_signal_calls(session):
    p = session.launch([app("signal_wrapper_storm"), str(STEPS)])
    # before, between and after the two moves of the checkpoint signal
    for step in (10, 30, 55):
        p.wait_line(PROGRESS, minimum=step)
        checkpoint_silently(session, expect_images=1)
    images, seen, before = checkpoint_and_kill(session, p, PROGRESS, 60)
    r1, seen, images = restart_and_checkpoint_again(session, images,
                                                    PROGRESS, 75)
    before = numbers(r1.lines(), PROGRESS)
    r2, _ = restart_to_end(session, images, PROGRESS, STEPS, seen, before)
    assert r2.lines()[-1] == "done %d rt 2" % STEPS, r2.lines()[-3:]
