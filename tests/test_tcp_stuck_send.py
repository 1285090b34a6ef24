# SPDX-License-Identifier: LGPL-2.1-or-later
"""Bytes a TCP sender could not get to a slow reader before a checkpoint
(they wait in the sender's send queue, which no unprivileged call reads)
are moved by the reader's checkpoint and put back before the sender runs
again (libckpt-preload/tcp_refill.c): the program that goes on after the
checkpoint reads every byte once, in order, and so does a restart."""

import re

import pytest

from ckpt_harness import app, reference_output

ARGV = [app("tcp_slow_reader"), "24", "12"]
PROGRESS = r"^read (\d+) MiB$"
STUCK_WARNING = "sent and not yet received"


def checkpoint_with_stuck_bytes(session):
    """Checkpoint while the reader lags; returns the images, after
    checking that the reader's image holds more than its receive queue
    could (the sender's queue was moved into it)."""
    r = session.command("--checkpoint")
    assert r.returncode == 0, "checkpoint failed: %s" % r.stderr
    assert STUCK_WARNING not in r.stderr, r.stderr
    images = [l.strip() for l in r.stdout.splitlines() if l.strip()]
    assert len(images) == 2, r.stdout
    saved = 0
    for img in images:
        saved += sum(int(n) for n in re.findall(
            r"(\d+) bytes queued saved", session.inspect(img)))
    return images, saved


@pytest.mark.time_limit(300)
def test_stuck_bytes_reach_the_running_reader(session):
    ref = reference_output(ARGV)
    assert ref[-1].startswith("OK ")
    p = session.launch(ARGV)
    p.wait_line(PROGRESS, minimum=2)
    images, saved = checkpoint_with_stuck_bytes(session)
    assert saved > 0, "nothing queued was saved: the reader did not lag"
    rc = p.wait_exit()
    lines = p.lines()
    assert rc == 0 and lines[-1] == ref[-1], (rc, lines[-4:],
                                              p.stderr_text())
    assert "sent %d" % (24 << 20) in lines


@pytest.mark.time_limit(300)
def test_stuck_bytes_survive_two_restarts(session):
    ref = reference_output(ARGV)
    p = session.launch(ARGV)
    p.wait_line(PROGRESS, minimum=2)
    images, saved = checkpoint_with_stuck_bytes(session)
    # more than a full receive queue: the sender's queue came too (a
    # receive buffer of this connection never grows past a few MiB here
    # while the reader lags; the send queue adds as much again)
    assert saved > 1 << 20, "only %d bytes saved" % saved
    session.kill_all()
    p.popen.wait(30)
    r = session.restart(images)
    r.wait_line(PROGRESS, minimum=int(re.match(
        PROGRESS, [l for l in p.lines() if re.match(PROGRESS, l)][-1])
        .group(1)) + 1)
    images, _ = checkpoint_with_stuck_bytes(session)
    session.kill_all()
    r.popen.wait(30)
    r2 = session.restart(images)
    rc = r2.wait_exit()
    lines = r2.lines()
    assert not any(l.startswith("FAIL") for l in r.lines() + lines), (
        r.lines()[-3:], lines[-3:])
    assert rc == 0 and lines[-1] == ref[-1], (rc, lines[-4:],
                                              r2.stderr_text())


@pytest.mark.time_limit(300)
def test_both_directions_stuck_keep_running(session):
    """Each process is a stuck sender and a lagging reader: neither takes
    the other's bytes (each would wait for the other to read what it puts
    back), the checkpoint says what a restart would lose, and the running
    program is untouched."""
    argv = ARGV + ["both"]
    p = session.launch(argv)
    p.wait_line(PROGRESS, minimum=2)
    r = session.command("--checkpoint")
    assert r.returncode == 0, "checkpoint failed: %s" % r.stderr
    assert "is such a sender itself" in r.stderr, r.stderr
    rc = p.wait_exit()
    oks = [l for l in p.lines() if l.startswith("OK ")]
    assert rc == 0 and len(oks) == 2 and oks[0] == oks[1], (
        rc, p.lines()[-6:], p.stderr_text())
    assert "putting back" not in p.stderr_text()
