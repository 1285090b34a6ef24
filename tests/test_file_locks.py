# SPDX-License-Identifier: LGPL-2.1-or-later
"""Locks on files come back (libckpt-preload/file_locks.c). A python3
program holds a POSIX write lock on bytes 10-109 of a database file
(lockf), a shared flock on a lock file and an open file description
(OFD) write lock on bytes 0-49 of a third file; the kill drops them
(checked: another process can take them then); after the restart the
restored program holds them again (another process cannot take them) and
goes on to the end.
A lock that another process took while the computation was down is
named on stderr, with its holder, and the program runs on without it."""

import fcntl
import os
import subprocess
import sys

import pytest

from ckpt_harness import checkpoint_and_kill, numbers

TICK = r"^tick (\d+)$"
OFD = r"""
import fcntl, os, struct
def ofd(f, how):    # struct flock: type, whence, start, len, pid
    fcntl.fcntl(f, how, struct.pack("hhxxxxqqixxxx", fcntl.F_WRLCK,
                                    os.SEEK_SET, 0, 50, 0))
"""
PROGRAM = OFD + r"""
import sys, time
db = open(sys.argv[1], "w")
fcntl.lockf(db, fcntl.LOCK_EX, 100, 10)
lk = open(sys.argv[2], "w")
fcntl.flock(lk, fcntl.LOCK_SH)
od = open(sys.argv[2] + ".ofd", "w")
ofd(od, fcntl.F_OFD_SETLK)
for k in range(1, int(sys.argv[3]) + 1):
    print("tick %d" % k, flush=True)
    time.sleep(0.05)
print("done", flush=True)
"""

# Run apart, so that its locks are another process's (a lock a process
# holds never conflicts with its own).
PROBE = OFD + r"""
import sys
db, lk, mode = open(sys.argv[1], "a"), open(sys.argv[2], "a"), sys.argv[3]
od = open(sys.argv[2] + ".ofd", "a")
try:
    fcntl.lockf(db, fcntl.LOCK_EX | fcntl.LOCK_NB, 100, 10)
    posix = "free"
except OSError:
    posix = "held"
try:
    fcntl.flock(lk, fcntl.LOCK_EX | fcntl.LOCK_NB)
    flock = "free"
except OSError:
    flock = "held"
try:
    ofd(od, fcntl.F_OFD_SETLK)
    held = "free"
except OSError:
    held = "held"
print(posix, flock, held, flush=True)
if mode == "keep":          # hold what it got until its stdin closes
    sys.stdin.read()
"""


def probe(db, lk):
    r = subprocess.run([sys.executable, "-c", PROBE, db, lk, "check"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


def launch(s, ticks):
    db, lk = s.path("data.db"), s.path("run.lock")
    p = s.launch(["/usr/bin/python3", "-c", PROGRAM, db, lk, str(ticks)])
    return p, db, lk


@pytest.mark.time_limit(200)
def test_locks_are_held_again_after_restart(session):
    s = session
    p, db, lk = launch(s, 200)
    p.wait_line(TICK, minimum=3)
    assert probe(db, lk) == ["held", "held", "held"], "the program holds none"
    images, seen, before = checkpoint_and_kill(s, p, TICK, 3)
    assert probe(db, lk) == ["free", "free", "free"], "the kill left the locks"
    r = s.restart(images)
    r.wait_line(TICK, minimum=before[-1] + 2)
    assert probe(db, lk) == ["held", "held", "held"], \
        "the restored program holds its locks no more: " + r.stderr_text()
    assert r.wait_exit() == 0, r.stderr_text()
    assert r.lines()[-1] == "done"
    ticks = numbers(r.lines(), TICK)
    assert ticks and ticks[0] <= before[-1] + 1 and ticks[-1] == 200


@pytest.mark.time_limit(200)
def test_lock_taken_meanwhile_is_named_and_the_program_goes_on(session):
    s = session
    p, db, lk = launch(s, 120)
    images, seen, before = checkpoint_and_kill(s, p, TICK, 3)
    other = subprocess.Popen([sys.executable, "-c", PROBE, db, lk, "keep"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
    try:
        assert other.stdout.readline().split() == ["free", "free", "free"]
        r = s.restart(images)
        assert r.wait_exit() == 0, r.stderr_text()
    finally:
        other.stdin.close()
        other.wait(30)
    err = r.stderr_text()
    assert "cannot take back its POSIX write lock on bytes 10 to 109: " \
        "pid %d (outside the restarted computation) holds a conflicting " \
        "one" % other.pid in err, err
    assert "cannot take back its flock shared lock" in err, err
    assert "cannot take back its OFD write lock on bytes 0 to 49" in err, err
    assert r.lines()[-1] == "done"
