# SPDX-License-Identifier: LGPL-2.1-or-later
"""One misbehaving participant cannot hold a checkpoint, or the healthy
processes, for long: every phase of a round is bounded (ckpt_coordinator
--phase-timeout / CKPT_PHASE_TIMEOUT). A fake participant that answers
SUSPENDED and then goes silent, or never answers at all, fails the round
within the bound, the command names it and its phase, the real program
(stopped for the round) runs again at once, and the stalled participant
is dropped: the next checkpoint succeeds without it."""

import os
import time

import pytest

from ckpt_harness import app
from fault_util import CountWatch, SilentFake, start_child

PHASE_S = 1          # CKPT_PHASE_TIMEOUT for these tests
ARGV = [app("counter"), "1000000", "20"]


def launch_counter(session, write_s=None):
    session.env["CKPT_PHASE_TIMEOUT"] = str(PHASE_S)
    if write_s:
        session.env["CKPT_WRITE_TIMEOUT"] = str(write_s)
    p = session.launch(ARGV)
    p.wait_line(r"^count (\d+) ", minimum=3)
    return p


def checkpoint_with_stalled(session, p, behaviour, phase, bound,
                            local=True):
    """With local, the fake speaks for a process on this host (a sleeping
    child, which writes nothing), so the coordinator can watch its
    progress; else for one on another host."""
    child = start_child(session.coord if local else None)
    watch = CountWatch(p)
    fake = SilentFake(session.coord, 9001, program="stuckfake",
                      behaviour=behaviour,
                      real_pid=child.pid if local else None,
                      sock=child.sock,
                      hostname=os.uname().nodename.encode() if local
                      else b"otherhost")
    try:
        t0 = time.monotonic()
        r = session.command("--checkpoint", timeout=60)
        took = time.monotonic() - t0
        time.sleep(0.5)
        # the round failed: the fake is dropped, the counter runs
        assert fake.closed.wait(10), "the stalled participant was kept"
        gap = watch.longest_gap(t0, time.monotonic())
    finally:
        watch.close()
        fake.close()
        child.kill()
        child.wait(10)
    assert r.returncode == 1, (r.stdout, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("stuckfake (vpid 9001, pid "), lines
    assert ": checkpoint 1 failed: stalled in the %s phase: " % phase \
        in lines[0], lines
    assert took < bound, "the failed checkpoint took %.1f s" % took
    # the counter stood still only while the round held it
    assert gap < bound, "the counter stood still for %.1f s" % gap
    return lines[0]


@pytest.mark.time_limit(120)
def test_participant_silent_after_suspended(session):
    p = launch_counter(session)
    line = checkpoint_with_stalled(session, p, "silent_after_suspend",
                                   "write", 2 * PHASE_S + 4)
    assert "no WRITTEN and no byte written for 2.0 s" in line, line
    # dropped: the next round is the real program's alone
    images = session.checkpoint()
    assert len(images) == 1 and "ckpt_counter_" in images[0]


@pytest.mark.time_limit(120)
def test_participant_that_never_answers(session):
    p = launch_counter(session)
    line = checkpoint_with_stalled(session, p, "silent", "suspend",
                                   PHASE_S + 4)
    assert "did not answer DO_SUSPEND within 1.0 s" in line, line
    images = session.checkpoint()
    assert len(images) == 1 and "ckpt_counter_" in images[0]


@pytest.mark.time_limit(120)
def test_remote_participant_silent_after_suspended(session):
    """Progress of a process on another host cannot be seen: only
    --write-timeout bounds its write."""
    p = launch_counter(session, write_s=3)
    line = checkpoint_with_stalled(session, p, "silent_after_suspend",
                                   "write", 3 + 4, local=False)
    assert "no WRITTEN within 3.0 s (ckpt_coordinator --write-timeout)" \
        in line, line
    images = session.checkpoint()
    assert len(images) == 1 and "ckpt_counter_" in images[0]
