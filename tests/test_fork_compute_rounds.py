# SPDX-License-Identifier: LGPL-2.1-or-later
"""Checkpoints every 100 ms of a program that forks in a tight loop and
whose children only compute between their fork and their exit (no call
ckpt wraps: tests/apps/fork_compute_loop.c). Every checkpoint must
succeed, until three of them held a child (two images: the program and a
child in flight); the last of those restarts, the child finishes its
computation and the program carries on from where it was, each child's
result and exit status checked by its parent. This is the case a child
whose manager thread is started lazily must still get right: a round
that comes while the child has made no call since its fork
(docs/performance.md, "Page faults at every start and fork")."""

import time

import pytest

from ckpt_harness import app, checkpoint_while_running, numbers

N = 10 ** 6             # never reached: the test kills the program
WANT_WITH_CHILD = 3     # sets that caught a child before the kill
MAX_CHECKPOINTS = 300   # bound: a child computes most of each round
ROUND = r"^round (\d+) ok$"


def checkpoint_until_children_caught(session, p):
    """Checkpoint every 100 ms until WANT_WITH_CHILD sets held the program
    and a child (two images). Returns the last images and the progress
    seen before that checkpoint."""
    with_child = 0
    for _ in range(MAX_CHECKPOINTS):
        seen = max(numbers(p.lines(), ROUND))
        images = checkpoint_while_running(session, p)
        assert 1 <= len(images) <= 2, images
        with_child += len(images) == 2
        if with_child == WANT_WITH_CHILD:
            return images, seen
        time.sleep(0.1)
    raise AssertionError("only %d of %d checkpoints found a child" % (
        with_child, MAX_CHECKPOINTS))


@pytest.mark.time_limit(300)
def test_checkpoints_of_children_that_only_compute(session):
    p = session.launch([app("fork_compute_loop"), str(N)])
    p.wait_line(ROUND, minimum=3)
    images, seen = checkpoint_until_children_caught(session, p)
    session.kill_all()
    p.popen.wait(30)
    before = numbers(p.lines(), ROUND)
    assert not any(l.startswith("FAIL") for l in p.lines()), p.lines()[-3:]

    # the set holds a child in the middle of its computation
    r = session.restart(images)
    r.wait_line(ROUND, minimum=before[-1] + 20)
    session.kill_all()
    r.popen.wait(30)
    after = numbers(r.lines(), ROUND)
    assert not any(l.startswith("FAIL") for l in r.lines()), r.lines()[-3:]
    assert after == list(range(after[0], after[-1] + 1)), (
        "rounds skipped or repeated after the restart: %r" % after[:20])
    assert seen + 1 <= after[0] <= before[-1] + 1, (
        "resumed at round %d; the checkpoint came after round %d and the "
        "kill after round %d" % (after[0], seen, before[-1]))
