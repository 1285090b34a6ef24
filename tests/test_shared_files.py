# SPDX-License-Identifier: LGPL-2.1-or-later
"""One open file description shared by a parent and its forked child (one
offset) stays shared across checkpoint and restart: ckpt_restart opens the
file once at the saved offset and hands it to both."""

import re
import subprocess

import pytest

from ckpt_harness import app, numbers

TURNS = 300
TURN = r"^turn (\d+)$"


@pytest.mark.time_limit(300)
def test_shared_offset_after_fork(session):
    out = session.path("shared.txt")
    p = session.launch([app("shared_offset"), out, str(TURNS), "10"])
    p.wait_line(TURN, minimum=40)
    seen = max(numbers(p.lines(), TURN))
    images = session.checkpoint(expect_images=2)
    session.kill_all()
    p.popen.wait(30)
    before = numbers(p.lines(), TURN)
    assert not any(l.startswith("FAIL") for l in p.lines()), p.lines()[-3:]

    shared = []
    for img in images:
        r = subprocess.run([session.tool("ckpt_inspect"), img],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        shared += re.findall(r"shared\.txt \(shared with the parent's fd "
                             r"(\d+)\)", r.stdout)
    assert len(shared) == 1, "the child's image does not record the shared "
    "description: %r" % shared

    r = session.restart(images)
    rc = r.wait_exit()
    lines = r.lines()
    assert rc == 0 and lines[-1] == "OK shared %d" % (TURNS * 16), (
        "exit %d, last lines %r, stderr:\n%s" % (rc, lines[-5:],
                                                r.stderr_text()))
    assert not any(l.startswith("FAIL") for l in lines), lines
    after = numbers(lines, TURN)
    assert seen < after[0] <= before[-1] + 1
    assert after == list(range(after[0], TURNS + 1))
