# SPDX-License-Identifier: LGPL-2.1-or-later
"""Checkpoints every 100 ms of a program that forks in a tight loop and
whose children only compute between their fork and their exit (no call
ckpt wraps: tests/apps/fork_compute_loop.c). Every checkpoint must
succeed, several of them must hold a child (the program and a child in
flight: two images), and the last set restarts and the program carries
on from where it was, each child's result and status checked by its
parent. This is the case a child whose manager thread is started lazily
must still get right: a round that comes while the child has made no
call since its fork (docs/performance.md, "Page faults at every start
and fork")."""

import time

import pytest

from ckpt_harness import (app, checkpoint_while_running, numbers,
                          restart_to_end)

N = 400
CHECKPOINTS = 20
ROUND = r"^round (\d+) ok$"


@pytest.mark.time_limit(300)
def test_checkpoints_of_children_that_only_compute(session):
    p = session.launch([app("fork_compute_loop"), str(N)])
    p.wait_line(ROUND, minimum=3)
    images, with_child = None, 0
    for _ in range(CHECKPOINTS):
        seen = max(numbers(p.lines(), ROUND))
        images = checkpoint_while_running(session, p)
        assert 1 <= len(images) <= 2, images
        with_child += len(images) == 2
        time.sleep(0.1)
    session.kill_all()
    p.popen.wait(30)
    assert not any(l.startswith("FAIL") for l in p.lines()), p.lines()[-3:]
    # a child computes for most of each round: most sets hold one
    assert with_child >= 2, (
        "only %d of %d checkpoints found a child" % (with_child, CHECKPOINTS))

    r, _ = restart_to_end(session, images, ROUND, N, seen,
                          numbers(p.lines(), ROUND))
    assert not any(l.startswith("FAIL") for l in r.lines()), r.lines()[-3:]
    assert r.lines()[-1] == "done", r.lines()[-3:]
