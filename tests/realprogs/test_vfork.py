# SPDX-License-Identifier: LGPL-2.1-or-later
"""Programs that vfork: tests/apps/vfork_exec_loop (vfork, then in the
child what shells and debuggers do before exec: getpid(), setpgid() to a
group of its own; exec sh; waitpid), and python3's subprocess.run, whose
_posixsubprocess uses vfork() in Debian 12's Python 3.11."""

import pytest

from ckpt_harness import app
from realprogs.driver import Program, check_program, require

PYTHON = "/usr/bin/python3"
SUBPROCESS_SCRIPT = r"""
import subprocess, sys
total = 0
for i in range(1, int(sys.argv[1]) + 1):
    r = subprocess.run(["sh", "-c", "sleep 0.02; echo $(($1 * 7 % 101)); "
                        "exit $(($1 % 3))", "sh", str(i)],
                       stdout=subprocess.PIPE, text=True, process_group=0)
    total += int(r.stdout) + 1000 * r.returncode
    print("step %d %s %d %d" % (i, r.stdout.strip(), r.returncode, total),
          flush=True)
print("final", total)
"""


class VforkLoop(Program):
    name = "vfork-exec-loop"

    def argv(self, run):
        return [app("vfork_exec_loop"), "150"]

    def finished(self, run):
        return any(l.startswith("final ") for l in run.stdout_lines())


class PythonSubprocess(VforkLoop):
    name = "python3-subprocess-vfork"

    def argv(self, run):
        return [PYTHON, "-c", SUBPROCESS_SCRIPT, "150"]


@pytest.mark.time_limit(600)
def test_vfork_exec_loop(session):
    check_program(session, VforkLoop())


@pytest.mark.time_limit(600)
def test_python3_subprocess_vfork(session):
    require(PYTHON, "python3")
    check_program(session, PythonSubprocess())
