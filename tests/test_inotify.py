# SPDX-License-Identifier: LGPL-2.1-or-later
"""inotify watches survive a restart (libckpt-preload/inotify.c,
wrappers/inotify.c): a program watching two directories (one by a
relative path, with a removed watch between them, so the watch
descriptors are 1 and 3) creates files in both across a checkpoint, kill
and restart, and after the restart sees the IN_CREATE event of every new
file with the watch descriptor it holds. Events queued at the checkpoint
are lost (said at the checkpoint): at most the tick of the checkpoint
misses its events."""

import os
import re

import pytest

from ckpt_harness import (app, assert_resumed, checkpoint_and_kill, numbers,
                          restart_to_end)

TICKS = 80
TICK = r"^tick (\d+)$"
QUEUED = re.compile(r": fd \d+: an inotify instance: \d+ bytes of events "
                    r"not yet read; a restart loses them$")


def lost(lines):
    return numbers(lines, r"^lost (\d+)$")


def run_to_checkpoint(s, workdir, at=15):
    p = s.launch([app("inotify_watch"), workdir, str(TICKS), "50"])
    assert p.wait_line(r"^wds (\d+) (\d+)$").groups() == ("1", "3")
    p.wait_line(TICK, minimum=at)
    seen = max(numbers(p.lines(), TICK))
    r = s.command("--checkpoint")
    assert r.returncode == 0, r.stderr
    # nothing unrestored but, maybe, the events of the tick in flight
    assert all(QUEUED.search(l) for l in r.stderr.splitlines()), r.stderr
    p.sigkill()
    p.popen.wait(30)
    return p, seen, r.stdout.split()


@pytest.mark.time_limit(300)
def test_inotify_watches_continue_after_restart(session, tmp_path):
    s = session
    work = str(tmp_path / "w")
    os.mkdir(work)
    p, seen, images = run_to_checkpoint(s, work)
    before = numbers(p.lines(), TICK)
    assert not lost(p.lines()), p.lines()
    shown = s.inspect(images[0])
    assert re.search(r" inotify .*anon_inode:inotify \(2 watches\)", shown), (
        shown)
    r = s.restart(images)
    rc = r.wait_exit()
    lines = r.lines()
    assert rc == 0 and lines[-1] == "OK inotify_watch", (
        "exit %d, last lines %r, stderr:\n%s" % (rc, lines[-5:],
                                                r.stderr_text()))
    first = assert_resumed(before, numbers(lines, TICK), TICK, TICKS, seen)
    # the events of every file made after the restart came, with the
    # right watch descriptors (the program checks each one)
    assert lost(lines) in ([], [first]), lines[:5]
    assert r.stderr_text().strip() == "", r.stderr_text()


@pytest.mark.time_limit(300)
def test_restarted_watcher_restarts_again(session, tmp_path):
    """The restored watches are saved like the first ones: a second
    checkpoint, kill and restart goes on too."""
    s = session
    work = str(tmp_path / "w")
    os.mkdir(work)
    p, seen, images = run_to_checkpoint(s, work, at=10)
    r1 = s.restart(images)
    r1.wait_line(TICK, minimum=30)
    seen = max(numbers(r1.lines(), TICK))
    cmd = s.command("--checkpoint")
    assert cmd.returncode == 0, cmd.stderr
    assert all(QUEUED.search(l) for l in cmd.stderr.splitlines()), (
        cmd.stderr)
    images = cmd.stdout.split()
    s.kill_all()
    r1.popen.wait(30)
    before = numbers(r1.lines(), TICK)
    r2 = s.restart(images)
    rc = r2.wait_exit()
    lines = r2.lines()
    assert rc == 0 and lines[-1] == "OK inotify_watch", (
        "exit %d, last lines %r, stderr:\n%s" % (rc, lines[-5:],
                                                r2.stderr_text()))
    first = assert_resumed(before, numbers(lines, TICK), TICK, TICKS, seen)
    assert lost(lines) in ([], [first]), lines[:5]


@pytest.mark.time_limit(240)
def test_watch_descriptors_of_ten_and_more(session, tmp_path):
    """Watch descriptors from 10 on: the kernel prints them in hex in
    fdinfo (`inotify wd:a`), and libckpt read them as decimal, so every
    watch from 10 up was left out at a restart ("its path is not known",
    or "now names another file") and its events never came again (node's
    fs.watch of many files, tsc --watch). 24 files watched, 3 watches
    removed; after the restart each still-watched file's event comes with
    its own watch descriptor."""
    workdir = tmp_path / "w"
    workdir.mkdir()
    p = session.launch([app("inotify_many"), str(workdir), "120", "30"])
    images, seen, before = checkpoint_and_kill(session, p, r"^tick (\d+) ",
                                               10)
    r, _ = restart_to_end(session, images, r"^tick (\d+) ", 120, seen,
                          before)
    assert r.lines()[-1] == "OK inotify_many", r.lines()[-3:]
    assert "leaves it out" not in r.stderr_text(), r.stderr_text()
