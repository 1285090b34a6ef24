# SPDX-License-Identifier: LGPL-2.1-or-later
"""Checkpoint numbers only grow, across restarts and coordinators, and
`ckpt_restart ckpt_*.img` restarts only the newest checkpoint of a
computation: the image a process left before it exited is never taken
for a current one (its output would come twice)."""

import glob
import os
import time
import re

import pytest

from ckpt_harness import Session, app, numbers

ITER = 400
DELAY_MS = "40"


def all_images(s):
    return sorted(glob.glob(os.path.join(s.ckptdir, "ckpt_*.img")))


def generation(s, img):
    m = re.search(r"^generation\s+(\d+)", s.inspect(img), re.M)
    assert m, "ckpt_inspect %s shows no generation" % img
    return int(m.group(1))


def computation(s, img):
    m = re.search(r"^computation\s+([0-9a-f]{16})$", s.inspect(img), re.M)
    assert m, "ckpt_inspect %s shows no computation" % img
    return m.group(1)


def quit_and_wait(s, proc):
    """Kill the computation and its coordinator: the restart starts a new
    one, which must number on from the images."""
    r = s.command("--quit")
    assert r.returncode == 0, "ckpt_command --quit: %s" % r.stderr
    proc.popen.wait(30)
    assert proc.out.wait_closed(15), "%s outlived --kill" % proc.name


@pytest.mark.time_limit(400)
def test_exited_child_does_not_come_back(session):
    s = session
    stop = s.path("stop")
    p = s.launch([app("child_leaves"), stop, str(ITER), DELAY_MS])
    p.wait_line(r"^child (\d+)$", minimum=3)
    p.wait_line(r"^parent (\d+)$", minimum=3)
    first = s.checkpoint(expect_images=2)
    quit_and_wait(s, p)
    gen1 = generation(s, first[0])
    comp = computation(s, first[0])

    # restart both, let the child leave, checkpoint the parent alone
    r1 = s.restart(all_images(s))
    r1.wait_line(r"^child (\d+)$")
    with open(stop, "w"):
        pass
    r1.wait_line(r"^reaped child, status 3$")
    seen = max(numbers(r1.lines(), r"^parent (\d+)$"))
    second = s.checkpoint(expect_images=1)
    quit_and_wait(s, r1)
    assert len([l for l in r1.lines() if l.startswith("child leaves")]) == 1
    gen2 = generation(s, second[0])
    assert gen2 > gen1, (
        "the checkpoint after the restart is numbered %d, the images it "
        "restarted from %d: numbers must grow" % (gen2, gen1))
    assert computation(s, second[0]) == comp, (
        "the restarted computation changed its id")
    before = numbers(r1.lines(), r"^parent (\d+)$")

    # both images are still there: only the parent's is current
    images = all_images(s)
    assert len(images) == 2, images
    stale = [i for i in images if i not in second]
    r2 = s.restart(images)
    rc = r2.wait_exit()
    lines = r2.lines()
    assert rc == 0 and lines[-1] == "OK child_leaves", (
        "exit %d, last lines %r, stderr:\n%s" % (rc, lines[-5:],
                                                r2.stderr_text()))
    assert not [l for l in lines if l.startswith("child")], (
        "the child that had exited came back: %r" % [
            l for l in lines if l.startswith("child")][:5])
    assert not [l for l in lines if l.startswith("reaped")], lines
    after = numbers(lines, r"^parent (\d+)$")
    assert seen < after[0] <= before[-1] + 1, (after[:3], seen, before[-1])
    assert after == list(range(after[0], ITER + 1)), after[:10]
    note = "leaving out %s: it is from checkpoint %d, the newest given is " \
           "%d" % (stale[0], gen1, gen2)
    assert note in r2.stderr_text(), r2.stderr_text()


@pytest.mark.time_limit(300)
def test_two_computations_in_one_directory(session):
    """Two computations (two coordinators) checkpoint into one directory,
    both as their checkpoint 1: ckpt_restart ckpt_*.img restarts only the
    one that checkpointed last and names the other's image."""
    s = session
    other = Session()
    try:
        other.env["CKPT_DIR"] = other.ckptdir = s.ckptdir
        a = s.launch([app("counter"), "100000", "20"], name="counter a")
        b = other.launch([app("counter"), "100000", "20"], name="counter b")
        a.wait_line(r"^count (\d+) ", minimum=3)
        b.wait_line(r"^count (\d+) ", minimum=3)
        older = s.checkpoint()
        newer = other.checkpoint()
        assert generation(s, older[0]) == generation(s, newer[0]) == 1
        assert computation(s, older[0]) != computation(s, newer[0])
        quit_and_wait(s, a)
        quit_and_wait(other, b)
    finally:
        other.close()
    r = s.restart(all_images(s))
    r.wait_line(r"^count (\d+) ")
    err = r.err.wait_for(lambda ls: [l for l in ls if "leaving out" in l],
                         30, "a note about the other computation")
    assert len(err) == 1 and err[0].startswith(
        "ckpt_restart: leaving out %s: it belongs to another computation"
        % older[0]), err
    # the restarted process joins its coordinator from its manager
    # thread, maybe after it printed: wait for it, then make sure no
    # second one comes
    deadline = time.monotonic() + 30
    listed = []
    while not listed and time.monotonic() < deadline:
        listed = s.command("--list").stdout.splitlines()
        time.sleep(0.1)
    time.sleep(1)
    listed = s.command("--list").stdout.splitlines()
    assert len(listed) == 1, "restarted %r" % listed
    r.sigkill()
