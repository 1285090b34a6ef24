# SPDX-License-Identifier: LGPL-2.1-or-later
"""python3's os.posix_spawnp in a loop: each child is a shell that
sleeps a moment, prints a number into a pipe and exits with a status the
parent adds up after waitpid. Children started after the first restart
must be the restarted parent's children at the second restart, or
waitpid fails."""

import pytest

from realprogs.driver import Program, check_program, require

PYTHON = "/usr/bin/python3"
SCRIPT = r"""
import os, sys
total = 0
for i in range(1, int(sys.argv[1]) + 1):
    r, w = os.pipe()
    pid = os.posix_spawnp(
        "sh", ["sh", "-c", "sleep 0.02; echo $(($1 * $1 % 1009)); "
               "exit $(($1 % 4))", "sh", str(i)], os.environ,
        file_actions=[(os.POSIX_SPAWN_DUP2, w, 1),
                      (os.POSIX_SPAWN_CLOSE, r)])
    os.close(w)
    with os.fdopen(r) as f:
        val = int(f.read())
    wpid, status = os.waitpid(pid, 0)
    assert wpid == pid, (wpid, pid)
    code = os.waitstatus_to_exitcode(status)
    total += val + 1000 * code
    print("step %d %d %d %d" % (i, val, code, total), flush=True)
print("final", total)
"""


class PosixSpawnLoop(Program):
    name = "posix-spawn-loop"

    def argv(self, run):
        return [PYTHON, "-c", SCRIPT, "150"]

    def finished(self, run):
        return any(l.startswith("final ") for l in run.stdout_lines())


@pytest.mark.time_limit(600)
def test_posix_spawn_loop(session):
    require(PYTHON, "python3")
    check_program(session, PosixSpawnLoop())
