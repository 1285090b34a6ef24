# SPDX-License-Identifier: LGPL-2.1-or-later
"""Timed waits on condition variables keep their clock (wrappers/
condvars.c). pthread_cond_timedwait measures its deadline on the clock
the condition variable was made with; the wrapper passed every deadline
to pthread_cond_clockwait as CLOCK_REALTIME, so a wait on a
CLOCK_MONOTONIC condvar (python's GIL, libuv, many thread pools) came
back at once with ETIMEDOUT: python3 with four threads ran 4.4x slower
under ckpt, nearly all of it in futex calls of the GIL. tests/apps/
cond_clocks waits on a monotonic condvar, a realtime one and through
pthread_cond_clockwait, from three threads at once, and fails on a wait
that ends before its deadline; checkpointed with threads inside the
waits, killed and restarted, every wait still ends on time."""

import pytest

from ckpt_harness import app, checkpoint_silently, numbers

ROUND = r"^round (\d+)$"
ROUNDS = 60


def no_failure(proc):
    return [l for l in proc.lines() if l.startswith("FAIL")] == []


@pytest.mark.time_limit(200)
def test_timed_waits_keep_their_clock_across_checkpoints(session):
    s = session
    p = s.launch([app("cond_clocks"), str(ROUNDS), "100"])
    p.wait_line(ROUND, minimum=5)
    for _ in range(3):
        checkpoint_silently(s, expect_images=1)
    images = checkpoint_silently(s, expect_images=1)
    assert no_failure(p), p.lines()[-3:]
    seen = max(numbers(p.lines(), ROUND))
    assert seen < ROUNDS, "the run ended before the checkpoint"
    s.kill_all()
    p.wait_exit(30)
    r = s.restart(images)
    assert r.wait_exit() == 0, (r.lines()[-3:], r.stderr_text())
    assert no_failure(r), r.lines()[-3:]
    assert r.lines()[-1] == "ok %d" % ROUNDS, r.lines()[-3:]
    rounds = numbers(r.lines(), ROUND)
    assert rounds and rounds[0] <= seen + 1 and rounds[-1] == ROUNDS, \
        (seen, rounds[:3])
