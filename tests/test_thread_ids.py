# SPDX-License-Identifier: LGPL-2.1-or-later
"""Locks that store their owner's thread id, held across two checkpoint ->
kill -> restart cycles: after each restart the owner has another kernel
tid and must still own them (recursive, error-checking, robust and PI
mutexes, rwlock writers, ld.so's own lock, sqlite3 under python3)."""

import os
import sqlite3
import sys

import pytest

from ckpt_harness import app, numbers

STEP_RX = r"^step (\d+)$"
STEPS = 400
WAIT = 40     # s: a thread that waits on itself never gets there


def progress_past(proc, regex, minimum):
    proc.wait_line(regex, timeout=WAIT, minimum=minimum)
    return max(numbers(proc.lines(), regex))


def checkpoint_kill(session, proc, regex, at, nproc):
    seen = progress_past(proc, regex, at)
    images = session.checkpoint(expect_images=nproc)
    assert proc.alive(), "%s exited during the checkpoint: %s" % (
        proc.name, proc.stderr_text())
    if nproc == 1:
        proc.sigkill()
    else:   # SIGKILL of the launched process would leave its child
        session.kill_all()
        proc.popen.wait(30)
    return seen, images


def two_restarts(session, argv, regex, first_at=20, gap=25, nproc=1):
    """Launch, then checkpoint -> kill -> restart twice; the second
    checkpoint is taken once the first restart went `gap` steps past the
    first checkpoint. Returns the three processes, the last finished."""
    p = session.launch(argv)
    seen, images = checkpoint_kill(session, p, regex, first_at, nproc)
    r1 = session.restart(images)
    seen, images = checkpoint_kill(session, r1, regex, seen + gap, nproc)
    r2 = session.restart(images)
    rc = r2.wait_exit(WAIT + 60)
    assert rc == 0, "%s: exit %d, last lines %r, stderr:\n%s" % (
        r2.name, rc, r2.lines()[-5:], r2.stderr_text())
    after = numbers(r2.lines(), regex)
    assert after and after[0] > seen - 1 and after[-1] == after[0] + len(
        after) - 1, "progress after the second restart: %r" % after[:10]
    return p, r1, r2


def results(proc):
    return [l for l in proc.lines() if l.startswith("result ")]


RESULTS = {
    "recursive-main": ["result released 1"],
    "recursive-thread": ["result released 1"],
    "errorcheck": ["result unlock 0"],
    "robust": ["result lock after owner died EOWNERDEAD"],
    # parent and child: the child's process rewrites the shared memory
    "pshared-robust": ["result lock after owner died EOWNERDEAD"],
    # 32 in the thread's table, the rest found on its robust list
    "robust-many": ["result 40 of 40 owner-died"],
    # the waiter may print before main does
    "pi": ["result PI unlock 0", "result waiter got the PI mutex"],
    "rwlock": ["result 3 readers shared the lock"],
    "loader-lock": ["result loader lock released"],
}


@pytest.mark.time_limit(300)
@pytest.mark.parametrize("mode", sorted(RESULTS))
def test_lock_held_across_two_restarts(session, mode):
    p, r1, r = two_restarts(session, [app("held_locks"), mode, str(STEPS)],
                            STEP_RX, nproc=2 if mode == "pshared-robust"
                            else 1)
    if mode == "robust-many":
        for proc in (p, r1):
            assert "holds more than 32 recursive" in proc.stderr_text()
    assert r.lines()[-1] == "done", r.lines()[-5:]
    assert sorted(results(r)) == RESULTS[mode], r.lines()[-5:]
    assert numbers(r.lines(), STEP_RX)[-1] == STEPS


SQLITE_WRITER = r"""
import sqlite3, sys, time
db, n = sys.argv[1], int(sys.argv[2])
conn = sqlite3.connect(db, isolation_level=None)
# time.sleep inside sqlite3_step: the connection's recursive mutex is
# held for most of the run, as in a program busy in its database
conn.create_function("pause", 1, lambda ms: time.sleep(ms / 1000.0) or ms)
conn.execute("CREATE TABLE IF NOT EXISTS t (k INTEGER PRIMARY KEY, v TEXT)")
for i in range(1, n + 1):
    conn.execute("INSERT OR REPLACE INTO t VALUES (?, ?)",
                 (i, "row %d square %d" % (i, i * i)))
    conn.execute("SELECT pause(20)").fetchall()
    print("row %d" % i, flush=True)
print("count %d sum %d" % conn.execute(
    "SELECT count(*), sum(k) FROM t").fetchone(), flush=True)
conn.close()
"""


@pytest.mark.time_limit(300)
def test_python_sqlite_file_db_across_two_restarts(session):
    rows = 300
    db = session.path("rows.db")
    script = session.path("writer.py")
    with open(script, "w") as f:
        f.write(SQLITE_WRITER)
    r = two_restarts(session, [sys.executable, script, db, str(rows)],
                     r"^row (\d+)$")[-1]
    assert r.lines()[-1] == "count %d sum %d" % (
        rows, rows * (rows + 1) // 2), r.lines()[-3:]
    assert os.path.exists(db)
    with sqlite3.connect(db) as conn:
        got = conn.execute("SELECT k, v FROM t ORDER BY k").fetchall()
        ok = conn.execute("PRAGMA integrity_check").fetchone()[0]
    assert ok == "ok"
    assert got == [(i, "row %d square %d" % (i, i * i))
                   for i in range(1, rows + 1)]
