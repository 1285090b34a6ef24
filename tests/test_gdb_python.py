# SPDX-License-Identifier: LGPL-2.1-or-later
"""The gdb extension (dist/gdb/ckpt-gdb.py) on a python3 interpreter
running a pure-Python program, with gdb's Python support (`py-bt`,
`py-print`: python3.11-dbg's python3.11-gdb.py and the interpreter's
debug info): a snapshot taken at a stop three Python calls deep, restored
after the program went on, shows the same Python frames and locals; a
`ckpt reverse-continue` to a breakpoint on the interpreter's C function
lands at the earlier step. Skipped without python3.11-dbg."""

import os
import re
import shutil

import pytest

from gdb_harness import SOURCES, gdb, line_of, needs_gdb
from gdb_harness import work  # noqa: F401 (the fixture)

PYTHON = "/usr/bin/python3.11"
GDB_HELPER = "/usr/share/gdb/auto-load/usr/bin/python3.11-gdb.py"

pytestmark = [
    needs_gdb,
    pytest.mark.skipif(not os.path.exists(PYTHON) or
                       not os.path.exists(GDB_HELPER),
                       reason="needs python3.11 and python3.11-dbg (the "
                       "py-bt helper and the interpreter's debug info)"),
]

# the Python frames of the selected stop, and its step
FRAMES = """
py-bt
py-print step
"""


def python_stops(text):
    """Each py-bt's frames (function, line), with the step printed after
    it."""
    stops = []
    for block in re.split(r"^Traceback \(most recent call first\):$",
                          text, flags=re.M)[1:]:
        frames = re.findall(r'^  File ".*py_descend\.py", line (\d+), in '
                            r'(\S+)$', block, re.M)
        step = re.search(r"^local 'step' = (\d+)$", block, re.M)
        stops.append((tuple((f, int(n)) for n, f in frames),
                      step and int(step.group(1))))
    return stops


@pytest.mark.time_limit(120)
def test_py_bt_after_restore_and_reverse_continue(work):
    script = os.path.join(work, "py_descend.py")
    shutil.copy(os.path.join(SOURCES, "py_descend.py"), script)
    text, program = gdb(work, PYTHON, """
break time_sleep
ckpt run
continue
continue
ckpt snapshot
""" + FRAMES + """
continue
continue
ckpt restore 1
""" + FRAMES + """
continue
ckpt reverse-continue
""" + FRAMES + """
delete
continue
""", args=[script])
    sleep = line_of("py_descend.py", "line: the sleep")
    call = line_of("py_descend.py", "line: the loop's call")
    recursion = sleep + 2
    at_step = ((("descend", sleep), ("descend", recursion),
                ("descend", recursion), ("descend", recursion),
                ("main", call), ("<module>", call + 4)))
    assert python_stops(text) == [(at_step, 2)] * 3, text
    assert "divergence" not in text, text
    assert program.strip().endswith("total %d" % sum(
        s * s + 6 for s in range(6))), (text, program)
