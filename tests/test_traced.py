# SPDX-License-Identifier: LGPL-2.1-or-later
"""A program traced from inside the computation (`ckpt_launch strace -f
PROG`, `ckpt_launch gdb PROG`) cannot be checkpointed: the tracer is
stopped by the checkpoint too and holds its tracee in a tracing stop, or
the debugger stops the tracee at the checkpoint signal; and no trace
could be restored. The checkpoint must fail in bounded time, saying who
traces whom, and the program must run on to its end."""

import re
import shutil

import pytest

from ckpt_harness import app, numbers

COUNT = r"^count (\d+) "
STEPS = 150
PAUSE_MS = 20


def checkpoint_fails(session):
    r = session.command("--checkpoint", timeout=60)
    assert r.returncode != 0, r.stdout
    return r.stderr


@pytest.mark.time_limit(120)
def test_tracer_in_the_computation_is_named(session):
    if not shutil.which("strace"):
        pytest.skip("strace not installed")
    p = session.launch(["strace", "-f", "-o", "/dev/null", app("counter"),
                        str(STEPS), str(PAUSE_MS)])
    p.wait_line(COUNT, minimum=5, timeout=30)
    msg = checkpoint_fails(session)
    assert re.search(r"traced by PID \d+ \(strace\), which is itself in "
                     r"the computation", msg), msg
    assert p.wait_exit(120) == 0, p.stderr_text()
    assert numbers(p.lines(), COUNT)[-1] == STEPS


@pytest.mark.time_limit(120)
def test_debugger_stopping_at_the_signal_is_named(session):
    if not shutil.which("gdb"):
        pytest.skip("gdb not installed")
    p = session.launch(["gdb", "-q", "-batch", "-ex", "run", "--args",
                        app("counter"), str(STEPS), str(PAUSE_MS)])
    p.wait_line(COUNT, minimum=5, timeout=60)
    msg = checkpoint_fails(session)
    assert re.search(r"traced by pid \d+ \(gdb\), which holds it at each "
                     r"signal", msg), msg
    # gdb, itself stopped for the round, does not always take up its
    # inferior's stop after the round fails (docs/resources.md, "Traced
    # processes"): the test ends it
    session.kill_all()
    p.wait_exit(30)
