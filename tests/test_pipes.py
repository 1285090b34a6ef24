# SPDX-License-Identifier: LGPL-2.1-or-later
"""Pipes between the processes of a computation, and a pipe inside one
process, come back connected, with the bytes in flight at the checkpoint
neither lost nor doubled: a ring of processes passes tokens through pipes
while it is checkpointed, killed and restarted with one ckpt_restart."""

import os
import re

import pytest

from ckpt_harness import Proc, app, numbers, reference_output

NPROC = 3
ARGV = [app("pipe_ring"), str(NPROC), "8", "300", "3"]
ROUND = r"^round (\d+)$"


def test_pipe_ring_reference(apps_only):
    ref = reference_output(ARGV)
    assert ref[-1].startswith("OK ring ")


def checkpoint_ring(session, p, at):
    p.wait_line(ROUND, minimum=at)
    seen = max(numbers(p.lines(), ROUND))
    images = session.checkpoint(expect_images=NPROC)
    assert p.alive(), p.stderr_text()
    return images, seen


@pytest.mark.time_limit(300)
def test_pipe_ring_restart(session):
    ref = reference_output(ARGV)
    p = session.launch(ARGV)
    p.wait_line(r"^start ring")
    images, seen = checkpoint_ring(session, p, 40)
    # The computation goes on unchanged after the drain and refill.
    p.wait_line(ROUND, minimum=seen + 20)
    session.kill_all()
    p.popen.wait(30)
    assert p.out.wait_closed(15)
    before = numbers(p.lines(), ROUND)
    assert not any(l.startswith("FAIL") for l in p.lines()), p.lines()[-3:]

    saved = sum(int(m) for img in images for m in re.findall(
        r"pipe:\[\d+\] \((\d+) bytes saved\)", session.inspect(img)))
    assert saved >= 64, "no bytes in flight were saved: %d" % saved

    r = session.restart(images)
    rc = r.wait_exit()
    lines = r.lines()
    assert rc == 0, "exit %d, last lines %r, stderr:\n%s" % (
        rc, lines[-5:], r.stderr_text())
    assert lines[-1] == ref[-1], (
        "the restarted ring saw other records than an uninterrupted run: "
        "%r, want %r" % (lines[-1], ref[-1]))
    after = numbers(lines, ROUND)
    assert seen < after[0] <= before[-1] + 1, (after[0], seen, before[-1])
    assert after == list(range(after[0], 301)), after[:5]


@pytest.mark.time_limit(300)
def test_pipe_ring_two_restarts(session):
    """The restarted ring is checkpointed and restarted again."""
    ref = reference_output(ARGV)
    p = session.launch(ARGV)
    p.wait_line(r"^start ring")
    images, seen = checkpoint_ring(session, p, 30)
    session.kill_all()
    p.popen.wait(30)
    r1 = session.restart(images)
    images2, seen2 = checkpoint_ring(session, r1, seen + 40)
    session.kill_all()
    r1.popen.wait(30)
    assert not any(l.startswith("FAIL") for l in r1.lines()), r1.lines()
    r2 = session.restart(images2)
    rc = r2.wait_exit()
    lines = r2.lines()
    assert rc == 0 and lines[-1] == ref[-1], (
        "exit %d, last lines %r, stderr:\n%s" % (rc, lines[-5:],
                                                r2.stderr_text()))
    after = numbers(lines, ROUND)
    assert seen2 < after[0] and after == list(range(after[0], 301))


@pytest.mark.time_limit(300)
def test_pipe_ring_restart_script(session):
    """ckpt_restart_script.sh brings the whole ring back with one command."""
    ref = reference_output(ARGV)
    p = session.launch(ARGV)
    p.wait_line(r"^start ring")
    images, seen = checkpoint_ring(session, p, 30)
    session.kill_all()
    p.popen.wait(30)
    script = os.path.join(session.ckptdir, "ckpt_restart_script.sh")
    r = Proc([script], session.env, "ckpt_restart_script.sh")
    session.procs.append(r)
    rc = r.wait_exit()
    assert rc == 0 and r.lines()[-1] == ref[-1], (
        "exit %d, last lines %r, stderr:\n%s" % (rc, r.lines()[-5:],
                                                r.stderr_text()))
    after = numbers(r.lines(), ROUND)
    assert seen < after[0] and after == list(range(after[0], 301))
