# SPDX-License-Identifier: LGPL-2.1-or-later
"""The program break is restored exactly: after a restart the kernel's
break is the saved one, so malloc keeps growing the same heap in place
(no PR_SET_MM needed: see docs/restart.md)."""

import pytest

from ckpt_harness import app, checkpoint_and_kill, numbers

ARGV = [app("brk_grow"), "60", "40"]
STEP = r"^step (\d+) brk"


@pytest.mark.time_limit(300)
def test_heap_grows_in_place_after_restart(session):
    p = session.launch(ARGV)
    images, seen, before = checkpoint_and_kill(session, p, STEP, 10)
    r = session.restart(images)
    assert r.wait_exit() == 0, r.stderr_text()
    after = numbers(r.lines(), STEP)
    assert after and after[0] > 1 and after[-1] == 60, after[:3]
    assert r.lines()[-1] == "contiguous yes", r.lines()[-3:]


@pytest.mark.time_limit(300)
def test_heap_grows_in_place_after_two_restarts(session):
    p = session.launch(ARGV)
    images, seen, before = checkpoint_and_kill(session, p, STEP, 10)
    r1 = session.restart(images)
    r1.wait_line(STEP, minimum=before[-1] + 10)
    images2, _, _ = checkpoint_and_kill(session, r1, STEP, before[-1] + 10)
    r2 = session.restart(images2)
    assert r2.wait_exit() == 0, r2.stderr_text()
    assert r2.lines()[-1] == "contiguous yes", r2.lines()[-3:]


@pytest.mark.time_limit(300)
def test_malloc_still_works_without_the_exact_break(session):
    """CKPT_RESTART_ASLR=1 keeps the restored process's mmap layout
    randomized and gives up the exact break: the first sbrk fails and
    glibc's malloc carries on with mmap'd memory (no abort)."""
    p = session.launch(ARGV)
    images, seen, before = checkpoint_and_kill(session, p, STEP, 10)
    session.env["CKPT_RESTART_ASLR"] = "1"
    r = session.restart(images)
    assert r.wait_exit() == 0, r.stderr_text()
    after = numbers(r.lines(), STEP)
    assert after and after[-1] == 60, after[-3:]
    assert r.lines()[-1].startswith("contiguous"), r.lines()[-3:]


@pytest.mark.time_limit(300)
def test_heap_grown_after_fork(session):
    """A child that grows its heap after fork has it listed as two [heap]
    areas (the part inherited and the part grown since cannot merge):
    saved as one heap, restarted, grown in place (restarting failed with
    "a second heap region" before)."""
    p = session.launch(ARGV + ["fork"])
    p.wait_line(STEP, minimum=10)
    images = session.checkpoint(expect_images=2)
    session.kill_all()
    p.wait_exit(30)
    before = numbers(p.lines(), STEP)
    r = session.restart(images)
    assert r.wait_exit() == 0, r.stderr_text()
    after = numbers(r.lines(), STEP)
    assert after and after[0] > 1 and after[-1] == 60, after[:3]
    assert before and after[0] <= before[-1] + 1, (before[-3:], after[:3])
    assert r.lines()[-1] == "contiguous yes", r.lines()[-3:]
