# SPDX-License-Identifier: LGPL-2.1-or-later
"""A Unix stream socketpair whose queue holds more than a new pair does
(docs/resources.md, "Unix stream socket pairs"): the writer raised its
SO_SNDBUF, as far as net.core.wmem_max lets it (twice that), and filled
the pair; the reader reads only later. The restart used to fail with
"recreating the connected pair failed: No buffer space available"; it now
raises the new pair's send buffer first, and the reader reads every byte
once, in order, also after a second checkpoint and restart."""

import re

import pytest

import ckpt_harness
from ckpt_harness import (app, assert_resumed, numbers,
                          restart_and_checkpoint_again)

TICK = r"^tick (\d+)$"
TICKS = 80
NEW_PAIR_HOLDS = 212992     # Debian's net.core.wmem_default


def checkpoint_and_kill(s, p, mode):
    """At tick 5 (the pair full): one checkpoint, then everything killed.
    Returns (images, tick seen, ticks printed, bytes queued)."""
    p.wait_line(TICK, minimum=5)
    seen = max(numbers(p.lines(), TICK))
    images = s.checkpoint(expect_images=2 if mode == "fork" else 1)
    s.kill_all()
    p.wait_exit(30)
    return images, seen, numbers(p.lines(), TICK), queued_before(p.lines())


def queued_before(lines):
    m = [re.match(r"^queued (\d+)$", l) for l in lines]
    got = [int(x.group(1)) for x in m if x]
    assert got, lines[:5]
    return got[0]


def run_and_restart(s, prog, mode):
    p = s.launch([prog, mode, str(TICKS), "50"])
    images, seen, before, queued = checkpoint_and_kill(s, p, mode)
    assert queued > NEW_PAIR_HOLDS, (
        "only %d bytes queued: a new pair holds that, nothing is tested" %
        queued)
    r = s.restart(images)
    assert r.wait_exit() == 0, (r.lines()[-3:], r.stderr_text())
    assert "read %d ok" % queued in r.lines(), (r.lines()[-3:],
                                                 r.stderr_text())
    assert_resumed(before, numbers(r.lines(), TICK), TICK, TICKS, seen)


@pytest.mark.time_limit(240)
@pytest.mark.parametrize("mode", ["fork", "self"])
def test_big_queue_of_a_socketpair_comes_back(session, mode):
    run_and_restart(session, app("unix_big_queue"), mode)


@pytest.mark.time_limit(240)
def test_big_queue_comes_back_unprivileged():
    """As nobody: no SO_SNDBUFFORCE on either side, the program's queue
    and the restart's room both bounded by net.core.wmem_max."""
    s, (prog,) = ckpt_harness.unprivileged_session([app("unix_big_queue")])
    try:
        run_and_restart(s, prog, "fork")
    finally:
        s.close()


@pytest.mark.time_limit(300)
def test_big_queue_survives_a_second_restart(session):
    s = session
    p = s.launch([app("unix_big_queue"), "fork", str(TICKS), "50"])
    images, _, _, queued = checkpoint_and_kill(s, p, "fork")
    _, _, images2 = restart_and_checkpoint_again(s, images, TICK, 20)
    r2 = s.restart(images2)
    assert r2.wait_exit() == 0, (r2.lines()[-3:], r2.stderr_text())
    assert "read %d ok" % queued in r2.lines(), (r2.lines()[-3:],
                                                  r2.stderr_text())
