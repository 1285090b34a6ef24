# SPDX-License-Identifier: LGPL-2.1-or-later
"""One open file description shared by several processes (one offset)
stays shared across checkpoint and restart: ckpt_restart opens the file
once at the saved offset and hands it to all. A parent and its forked
child; two siblings, one of which passed the fd to the other over a Unix
socket (SCM_RIGHTS), at other fd numbers, the parent's copy closed."""

import os
import re

import pytest

from ckpt_harness import PROGRESS_TIMEOUT, app, numbers, reference_output

TURNS = 300
TURN = r"^turn (\d+)$"


def shared_groups(session, images, name, between=r"\d+ bytes saved"):
    """The share group of every fd record on a file called name (an
    optional "(...)" matching between before it)."""
    return [g for img in images for g in re.findall(
        re.escape(name) + r"(?: \(%s\))?" % between +
        r" \(shared description (\d+)\)",
        session.inspect(img))]


def checkpoint_turns(session, argv, minimum):
    """Launch a parent and child, checkpoint after `minimum` turns, kill
    them: the last turn seen before the checkpoint, the images and every
    turn before the kill."""
    p = session.launch(argv)
    p.wait_line(TURN, minimum=minimum)
    seen = max(numbers(p.lines(), TURN))
    images = session.checkpoint(expect_images=2)
    session.kill_all()
    p.popen.wait(30)
    before = numbers(p.lines(), TURN)
    assert not any(l.startswith("FAIL") for l in p.lines()), p.lines()[-3:]
    return seen, images, before


@pytest.mark.time_limit(300)
def test_shared_offset_after_fork(session):
    out = session.path("shared.txt")
    seen, images, before = checkpoint_turns(
        session, [app("shared_offset"), out, str(TURNS), "10"], 40)

    shared = shared_groups(session, images, "shared.txt")
    assert len(shared) == 2 and len(set(shared)) == 1, "the images do not " \
        "record one shared description: %r" % shared

    r = session.restart(images)
    rc = r.wait_exit()
    lines = r.lines()
    assert rc == 0 and lines[-1] == "OK shared %d" % (TURNS * 16), (
        "exit %d, last lines %r, stderr:\n%s" % (rc, lines[-5:],
                                                r.stderr_text()))
    assert not any(l.startswith("FAIL") for l in lines), lines
    after = numbers(lines, TURN)
    assert seen < after[0] <= before[-1] + 1
    assert after == list(range(after[0], TURNS + 1))


@pytest.mark.time_limit(300)
def test_shared_offset_siblings_scm_rights(session):
    turns = 300
    ref = reference_output([app("shared_sibling"), session.path("ref.txt"),
                            str(turns), "10"], cache=False)
    assert ref[-1].startswith("OK shared ")
    out = session.path("siblings.txt")
    p = session.launch([app("shared_sibling"), out, str(turns), "10"])
    p.wait_line(TURN, minimum=60)
    seen = max(numbers(p.lines(), TURN))
    images = session.checkpoint(expect_images=3)
    p.wait_line(TURN, minimum=seen + 20)
    session.kill_all()
    p.popen.wait(30)
    before = numbers(p.lines(), TURN)
    assert not any(l.startswith("FAIL") for l in p.lines()), p.lines()[-3:]
    shared = shared_groups(session, images, "siblings.txt")
    assert len(shared) == 2 and len(set(shared)) == 1, "the siblings' " \
        "images do not record one shared description: %r" % shared

    r = session.restart(images)
    rc = r.wait_exit()
    lines = r.lines()
    assert rc == 0 and lines[-1] == ref[-1], (
        "exit %d, last lines %r, want %r; stderr:\n%s" % (
            rc, lines[-3:], ref[-1], r.stderr_text()))
    after = numbers(lines, TURN)
    assert seen < after[0] <= before[-1] + 1
    assert after == list(range(after[0], turns + 1))


@pytest.mark.time_limit(300)
def test_event_fds_shared_after_fork(session):
    """An eventfd, an epoll instance and a timerfd inherited across fork
    come back as one description each: after the restart the child still
    sees the parent's epoll changes and eventfd writes, the parent the
    child's timer."""
    turns = 400
    seen, images, before = checkpoint_turns(
        session, [app("shared_event_fds"), str(turns), "5"], 40)
    for img in images:
        assert "own copy" not in session.inspect(img)
    for name in ("eventfd", "eventpoll", "timerfd"):
        shared = shared_groups(session, images, "anon_inode:[%s]" % name,
                               between=r"[^)]*")
        assert len(shared) == 2 and len(set(shared)) == 1, "the images do " \
            "not record one shared %s: %r" % (name, shared)

    r = session.restart(images)
    rc = r.wait_exit()
    lines = r.lines()
    assert rc == 0 and lines[-1] == "OK shared events %d" % turns, (
        "exit %d, last lines %r, failures %r, before the kill %r, "
        "stderr:\n%s" % (rc, lines[-2:],
                         [l for l in lines if l.startswith("FAIL")],
                         before[-2:], r.stderr_text()))
    assert not any(l.startswith("FAIL") for l in lines), lines
    after = numbers(lines, TURN)
    assert seen < after[0] <= before[-1] + 1
    assert after == list(range(after[0], turns + 1))


@pytest.mark.time_limit(300)
@pytest.mark.parametrize("writer", ["parent", "child"])
def test_shared_event_state_changed_after_the_other_stopped(session, writer):
    """One holder of a shared eventfd and epoll changes them in its
    before-checkpoint hook, 300 ms after the checkpoint stopped the other
    holder: the image holds the state of the moment every process was
    stopped, whichever holder's record the restart puts in (the writer
    is the parent in one case, the child in the other)."""
    work = session.path("work")
    os.mkdir(work)
    p = session.launch([app("shared_event_hook"), writer, work])
    p.out.wait_for(lambda lines: lines.count("ready") >= 2 or None,
                   PROGRESS_TIMEOUT, "both processes ready")
    images = session.checkpoint(expect_images=2)
    session.kill_all()
    p.popen.wait(30)

    r = session.restart(images)
    open(os.path.join(work, "go"), "w").close()
    rc = r.wait_exit()
    lines = r.lines()
    assert rc == 0 and lines[-2:] == ["data 7 count 7", "OK"], (
        "exit %d, last lines %r, stderr:\n%s" % (rc, lines[-3:],
                                                r.stderr_text()))
