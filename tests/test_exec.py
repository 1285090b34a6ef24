# SPDX-License-Identifier: LGPL-2.1-or-later
"""exec keeps a program in the computation: a program that replaces
itself with an environment lacking LD_PRELOAD is still checkpointed after
the exec, restarts, and keeps the pid it saw before."""

import re

import pytest

from ckpt_harness import app, checkpoint_and_kill, numbers

S2 = r"^s2 (\d+) pid"


@pytest.mark.time_limit(300)
def test_exec_stays_in_the_computation(session):
    p = session.launch([app("exec_stages"), "5", "80"])
    first = p.wait_line(r"^s1 1 pid (\d+)$")
    pid = int(first.group(1))
    images, seen, before = checkpoint_and_kill(session, p, S2, 10)
    assert "ckpt_exec_stages_" in images[0]
    assert all(re.search(r"pid %d preload yes$" % pid, l)
               for l in p.lines() if l.startswith("s2 ")), p.lines()[-3:]
    r = session.restart(images)
    assert r.wait_exit() == 0, r.stderr_text()
    after = numbers(r.lines(), S2)
    assert after and after[0] > 1 and after[-1] == 80, after[:3]
    assert not any(l.startswith("s1 ") for l in r.lines())
    assert r.lines()[-1] == "done pid %d" % pid, (
        "after restart the program saw pid %r, before %d" % (
            r.lines()[-1], pid))
