# SPDX-License-Identifier: LGPL-2.1-or-later
"""8 threads with a mutex, condition variables and __thread data."""

import pytest

from ckpt_harness import (app, checkpoint_and_kill, numbers,
                          reference_output, restart_to_end,
                          tail_after_progress)

ROUNDS = 2000
PAUSE_US = 500
PROGRESS = r"^round (\d+)/"
STEP = 50  # threads_sync prints progress every 50 rounds
ARGV = [app("threads_sync"), str(ROUNDS), str(PAUSE_US)]


def test_threads_reference_is_deterministic(apps_only):
    argv = [app("threads_sync"), "200", "0"]
    a = reference_output(argv, cache=False)
    b = reference_output(argv, cache=False)
    assert a == b
    assert a[-1].startswith("checksum ")
    assert len([l for l in a if l.startswith("thread ")]) == 8


@pytest.mark.time_limit(600)
def test_threads_checkpoint_kill_restart(session):
    ref = reference_output(ARGV)
    p = session.launch(ARGV)
    images, seen, before = checkpoint_and_kill(session, p, PROGRESS, 200)
    r, first = restart_to_end(session, images, PROGRESS, ROUNDS, seen,
                              before, step=STEP)
    assert tail_after_progress(r.lines(), PROGRESS) == \
        tail_after_progress(ref, PROGRESS)


@pytest.mark.time_limit(600)
def test_threads_keep_running_after_checkpoints(session):
    """Checkpoints of a live process must not disturb it."""
    ref = reference_output(ARGV)
    p = session.launch(ARGV)
    for at in (200, 600, 1000):
        p.wait_line(PROGRESS, minimum=at)
        session.checkpoint()
    rc = p.wait_exit()
    assert rc == 0, "exit %d; stderr:\n%s" % (rc, p.stderr_text())
    assert numbers(p.lines(), PROGRESS) == numbers(ref, PROGRESS)
    assert tail_after_progress(p.lines(), PROGRESS) == \
        tail_after_progress(ref, PROGRESS)
