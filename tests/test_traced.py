# SPDX-License-Identifier: LGPL-2.1-or-later
"""A program traced from inside the computation (`ckpt_launch strace -f
PROG`, `ckpt_launch gdb PROG`) cannot be checkpointed: the checkpoint
would stop the tracer too, which then leaves its tracee in a tracing
stop at the checkpoint signal, and no trace could be restored. The
coordinator refuses the round at once, before any process is stopped,
naming tracer and tracee, and both run on to their end (before, the
round timed out with a guess, and gdb was left waiting for ever)."""

import os
import re
import shutil

import pytest

from ckpt_harness import app, numbers

COUNT = r"^count (\d+) "
STEPS = 150
PAUSE_MS = 20
REFUSED = (r"process \d+ \(counter\) is traced by PID \d+ \(%s\), a process "
           r"of this computation")


def refused_at_once(session, tracer):
    r = session.command("--checkpoint", timeout=60)
    assert r.returncode != 0, r.stdout
    assert re.search(REFUSED % tracer, r.stderr), r.stderr
    assert not [n for n in os.listdir(session.ckptdir)
                if n.endswith(".img")], "images were written"


def traced(session, argv, tracer):
    if not shutil.which(tracer):
        pytest.skip("%s not installed" % tracer)
    p = session.launch(argv + [app("counter"), str(STEPS), str(PAUSE_MS)])
    p.wait_line(COUNT, minimum=5, timeout=60)
    session.wait_members(2)
    refused_at_once(session, tracer)
    assert p.wait_exit(120) == 0, p.stderr_text()
    assert numbers(p.lines(), COUNT)[-1] == STEPS


@pytest.mark.time_limit(180)
def test_strace_in_the_computation_is_refused(session):
    traced(session, ["strace", "-f", "-o", "/dev/null"], "strace")


@pytest.mark.time_limit(180)
def test_gdb_in_the_computation_is_refused(session):
    # gdb stops at the checkpoint signal by default: the round must not
    # send it
    traced(session, ["gdb", "-q", "-batch", "-ex", "run", "--args"], "gdb")
