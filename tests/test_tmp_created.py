# SPDX-License-Identifier: LGPL-2.1-or-later
"""Temporary files a process made exclusively (mkstemps, open with
O_CREAT|O_EXCL) and closed, still there at the checkpoint: their content
is saved, and a restart recreates them when the original run, which went
on after the checkpoint, removed them (a compiler driver between cc1 and
as)."""

import os
import re
import shutil
import tempfile
import time

import pytest

from ckpt_harness import BackgroundReference, app

ROUNDS, PAUSE_MS = 12, 1000
MADE = r"^made (\d+)$"


def checkpoint_in_round(s, proc, n):
    """Checkpoint once round n's file is made and closed, let the run go
    on until it has read and removed that file, then kill."""
    proc.wait_line(MADE, minimum=n)
    images = s.checkpoint()
    proc.wait_line(r"^checked (\d+) ", minimum=n)
    s.kill_all()
    proc.wait_exit(30)
    assert proc.out.wait_closed(15), "%s: stdout stayed open" % proc.name
    return images


def assert_continues_native(proc, native, n):
    """The restarted run resumes in round n's pause, finds its file, and
    prints what a native run prints from there on."""
    lines = proc.lines()
    start = native.index(next(l for l in native
                              if l.startswith("checked %d " % n)))
    assert lines[:len(native) - start] == native[start:len(lines) + start], (
        "%s printed %r, native from round %d: %r; stderr:\n%s" % (
            proc.name, lines[:4], n, native[start:start + 4],
            proc.stderr_text()))


def wait_connected(s, timeout=30):
    """Until the restarted process is connected to the coordinator."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = s.command("--list")
        if r.returncode == 0 and r.stdout.strip():
            return
        time.sleep(0.05)
    raise AssertionError("no process connected within %ds" % timeout)


def native_run(session, shm_tmpdir, rounds, pause_ms):
    """The uninterrupted run, beside the test (it mostly sleeps), in
    directories of its own: its files never meet the tested run's (the
    output names no file)."""
    own, own_tmp = session.path("native"), os.path.join(shm_tmpdir, "native")
    os.mkdir(own)
    os.mkdir(own_tmp)
    env = dict(session.env, TMPDIR=own_tmp)
    return BackgroundReference([app("tmp_created"), str(rounds),
                                str(pause_ms), own], env=env)


@pytest.fixture
def shm_tmpdir():
    """A TMPDIR on tmpfs outside /tmp (temporary storage found by statfs)."""
    root = "/dev/shm" if os.path.isdir("/dev/shm") else None
    d = tempfile.mkdtemp(prefix="ckt-tmpdir-", dir=root)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.mark.time_limit(600)
def test_closed_tmp_file_recreated_twice(session, shm_tmpdir):
    """Two cycles: round 3 (open O_EXCL in a /tmp directory) and round 8
    (mkstemps in $TMPDIR on /dev/shm) are checkpointed with their file
    closed."""
    tmp = session.path("work")
    os.mkdir(tmp)
    session.env["TMPDIR"] = shm_tmpdir
    argv = [app("tmp_created"), str(ROUNDS), str(PAUSE_MS), tmp]
    background = native_run(session, shm_tmpdir, ROUNDS, PAUSE_MS)

    p = session.launch(argv)
    images = checkpoint_in_round(session, p, 3)
    r1 = session.restart(images)
    r1.wait_line(MADE, minimum=8)
    images = checkpoint_in_round(session, r1, 8)
    native = background.lines()     # not before: r1 would go past 8
    assert native[-1].startswith("done %d " % ROUNDS), native[-3:]
    assert_continues_native(r1, native, 3)
    r2 = session.restart(images)
    rc = r2.wait_exit()
    assert rc == 0, "%s: exit %d; last lines %r; stderr:\n%s" % (
        r2.name, rc, r2.lines()[-3:], r2.stderr_text())
    assert_continues_native(r2, native, 8)
    assert r2.lines()[-1] == native[-1]
    for r, where in ((r1, tmp), (r2, shm_tmpdir)):
        assert re.search(r"ckpt_restart: %s/\S+ was gone; recreated from" %
                         re.escape(where), r.stderr_text()), (
            r.stderr_text())


@pytest.mark.time_limit(600)
def test_recreated_file_saved_again(session, shm_tmpdir):
    """Checkpointed again while still in the round the restart resumed
    in: the file the restart recreated (another inode) is the one saved
    the second time."""
    tmp = session.path("work")
    os.mkdir(tmp)
    session.env["TMPDIR"] = shm_tmpdir
    argv = [app("tmp_created"), "2", "6000", tmp]
    background = native_run(session, shm_tmpdir, 2, 6000)

    p = session.launch(argv)
    images = checkpoint_in_round(session, p, 2)
    r1 = session.restart(images)
    wait_connected(session)
    images = session.checkpoint()
    assert not any(l.startswith("checked 2 ") for l in r1.lines()), (
        "round 2 ended before the second checkpoint: %r" % r1.lines())
    r1.wait_line(r"^checked (\d+) ", minimum=2)
    session.kill_all()
    r1.wait_exit(30)
    r2 = session.restart(images)
    rc = r2.wait_exit()
    assert rc == 0, "%s: exit %d; last lines %r; stderr:\n%s" % (
        r2.name, rc, r2.lines()[-3:], r2.stderr_text())
    native = background.lines()
    assert_continues_native(r2, native, 2)
    assert r2.lines()[-1] == native[-1]
    assert re.search(r"ckpt_restart: %s/\S+ was gone; recreated from" %
                     re.escape(shm_tmpdir), r2.stderr_text()), (
        r2.stderr_text())
