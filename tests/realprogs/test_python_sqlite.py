# SPDX-License-Identifier: LGPL-2.1-or-later
"""python3's sqlite3 module writing a file database (default journal
mode and synchronous setting): 100 transactions of inserts, an update
and a delete each, with a count printed after every one. SQLite holds its
connection's recursive mutex across each call, so checkpoints land while
a thread owns it. The database is saved with the checkpoint
(`ckpt_launch --save-files`): the original process keeps committing
between the checkpoint and the kill, and a restart must run against the
database as it was at the checkpoint, or rows would be doubled."""

import hashlib
import os
import sqlite3

import pytest

from realprogs.driver import Program, check_program, require

PYTHON = "/usr/bin/python3"
SCRIPT = r"""
import hashlib, sqlite3, sys
txns, rows = int(sys.argv[1]), int(sys.argv[2])
db = sqlite3.connect("data.db")
db.execute("create table t(id integer primary key, k text, v integer)")
db.execute("create index t_k on t(k)")
db.commit()
x = 1
for i in range(1, txns + 1):
    with db:
        for _ in range(rows):
            x = (x * 1103515245 + 12345) % 2147483648
            db.execute("insert into t(k, v) values (?, ?)",
                       ("k%d" % (x % 997), x % 100000))
        db.execute("update t set v = v + 1 where k = ?", ("k%d" % (i % 997),))
        db.execute("delete from t where id % 7 = 0 and k = ?",
                   ("k%d" % (x % 997),))
    n, s = db.execute("select count(*), sum(v) from t").fetchone()
    print("step %d rows %d sum %d" % (i, n, s), flush=True)
h = hashlib.sha256()
for row in db.execute("select id, k, v from t order by id"):
    h.update(repr(row).encode())
print("final", h.hexdigest())
db.close()
"""


class PythonSqlite(Program):
    name = "python3-sqlite3"

    def argv(self, run):
        return [PYTHON, "-c", SCRIPT, "100", "1500"]

    def launch_options(self, run):
        return ["--save-files", os.path.join(run.work, "data.db*")]

    def finished(self, run):
        return any(l.startswith("final ") for l in run.stdout_lines())

    def files(self, work):
        """The database's content and health (its bytes may differ in
        free pages), and no journal left behind."""
        db = sqlite3.connect(os.path.join(work, "data.db"))
        try:
            dump = "\n".join(db.iterdump())
            check = db.execute("pragma integrity_check").fetchall()
        finally:
            db.close()
        return {"dump": hashlib.sha256(dump.encode()).hexdigest(),
                "integrity_check": check,
                "files": sorted(os.listdir(work))}


@pytest.mark.time_limit(600)
def test_python3_sqlite3_file_db(session):
    require(PYTHON, "python3")
    check_program(session, PythonSqlite())
