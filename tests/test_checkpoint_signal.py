# SPDX-License-Identifier: LGPL-2.1-or-later
"""The checkpoint signal stays out of the program's way: ckpt takes a
real-time signal the program does not use and moves to another one when
the program installs a handler for it (the JDK takes SIGRTMAX-2), across
checkpoints and restarts; SIG_DFL and SIG_IGN on it are accepted without
a word (git resets every signal before an exec); nothing is said on
stderr."""

import os
import re
import shutil
import subprocess

import pytest

from ckpt_harness import (app, checkpoint_and_kill, numbers,
                          reference_output, run, tail_after_progress)

ITER = 240
ITER_RX = r"^iter (\d+)$"


def assert_quiet(proc):
    err = proc.stderr_text()
    assert "reserved" not in err and "signal" not in err, (
        "%s said on stderr:\n%s" % (proc.name, err))


def two_cycles(session, argv, progress, last, gap=25):
    """Run argv under ckpt, checkpoint -> kill -> restart twice; return
    the last restarted process, finished, and the progress it printed."""
    p = session.launch(argv)
    images, seen, before = checkpoint_and_kill(session, p, progress, gap)
    assert_quiet(p)
    r = session.restart(images)
    r.wait_line(progress, minimum=seen + 2 * gap)
    images, seen2, before2 = checkpoint_and_kill(session, r, progress,
                                                 seen + 2 * gap)
    assert_quiet(r)
    assert before2[-1] < last, "the first restart ran to the end: %r" % (
        before2[-3:])
    r2 = session.restart(images)
    rc = r2.wait_exit()
    assert rc == 0, "%s: exit %d, last lines %r, stderr:\n%s" % (
        r2.name, rc, r2.lines()[-5:], r2.stderr_text())
    assert_quiet(r2)
    after = numbers(r2.lines(), progress)
    assert after and seen2 < after[0] <= before2[-1] + 1, (after[:3],
                                                          seen2)
    assert after == list(range(after[0], last + 1)), after[:5]
    return r2


@pytest.mark.time_limit(300)
def test_program_takes_the_signals_ckpt_wanted(session):
    """Handlers on SIGRTMAX-2, SIGRTMAX, SIGRTMAX-1, ... (the one ckpt
    uses at start among them, and one more every 20 iterations after
    each restart), every delivery counted, a worker thread with every
    signal blocked: restarted twice, the output ends exactly as a run
    without ckpt."""
    argv = [app("signal_claims"), str(ITER)]
    want = reference_output(argv)
    r = two_cycles(session, argv, ITER_RX, ITER)
    assert tail_after_progress(r.lines(), ITER_RX) == \
        tail_after_progress(want, ITER_RX), r.lines()[-4:]
