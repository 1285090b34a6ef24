# SPDX-License-Identifier: LGPL-2.1-or-later
"""The program break is restored exactly: after a restart the kernel's
break is the saved one, so malloc keeps growing the same heap in place
(no PR_SET_MM needed: see docs/restart.md)."""

import pytest

from ckpt_harness import app, checkpoint_and_kill, numbers

# 40 ms a step: the program must still run when a test's second
# checkpoint comes after a restart on a loaded machine (60 steps, 2.4 s,
# once ended first: "no processes are connected")
STEPS = 200
ARGV = [app("brk_grow"), str(STEPS), "40"]
STEP = r"^step (\d+) brk"


@pytest.mark.time_limit(300)
def test_heap_grows_in_place_after_restart(session):
    p = session.launch(ARGV)
    images, seen, before = checkpoint_and_kill(session, p, STEP, 10)
    r = session.restart(images)
    assert r.wait_exit() == 0, r.stderr_text()
    after = numbers(r.lines(), STEP)
    assert after and after[0] > 1 and after[-1] == STEPS, after[:3]
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
    assert after and after[-1] == STEPS, after[-3:]
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
    assert after and after[0] > 1 and after[-1] == STEPS, after[:3]
    assert before and after[0] <= before[-1] + 1, (before[-3:], after[:3])
    assert r.lines()[-1] == "contiguous yes", r.lines()[-3:]


def non_pie_brk_grow(session):
    """brk_grow linked as a fixed-address executable (as Debian's cc1, gcc
    and many system programs are): its heap starts at a random place less
    than 1 GiB above its data, far below where a PIE's is."""
    import os
    import subprocess
    here = os.path.dirname(os.path.abspath(__file__))
    exe = session.path("brk_grow_no_pie")
    r = subprocess.run(["gcc", "-O2", "-no-pie", "-I", os.path.join(here, "apps"),
                        os.path.join(here, "apps", "brk_grow.c"), "-o", exe],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        pytest.skip("gcc -no-pie failed: %s" % r.stderr)
    return exe


@pytest.mark.time_limit(300)
def test_heap_of_a_fixed_address_program_grows_in_place(session):
    """The break of a non-PIE program is restored exactly too, twice in a
    row. Its heap lies below 1 GiB, where the restart loader had no room
    under it; restored as plain memory, the heap's top pages that malloc
    had not been given back were lost and cc1 crashed in sysmalloc at the
    second restart of make -j2."""
    exe = non_pie_brk_grow(session)
    p = session.launch([exe, str(STEPS), "40"])
    images, seen, before = checkpoint_and_kill(session, p, STEP, 10)
    r1 = session.restart(images)
    r1.wait_line(STEP, minimum=before[-1] + 10)
    images = session.checkpoint()
    session.kill_all()
    r1.wait_exit(30)
    first = numbers(r1.lines(), STEP)
    r2 = session.restart(images)
    assert r2.wait_exit() == 0, r2.stderr_text()
    after = numbers(r2.lines(), STEP)
    assert after and after[0] <= first[-1] + 1 and after[-1] == STEPS, (
        first[-3:], after[:3])
    assert r2.lines()[-1] == "contiguous yes", r2.lines()[-3:]
    # the break stayed next to the heap (a break moved elsewhere shows as
    # an offset of terabytes: glibc was following the kernel's new one)
    for lines in (r1.lines(), r2.lines()):
        offsets = numbers(lines, r"^step \d+ brk \+(\d+)$")
        assert offsets and max(offsets) < 256 << 20, (
            "the break is no longer the heap's: %#x above its start" %
            max(offsets))
