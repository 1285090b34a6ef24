# SPDX-License-Identifier: LGPL-2.1-or-later
"""A program that confines itself (tests/apps/sandboxed.c: no_new_privs
and a seccomp filter, as man, file or openssh's privilege separation
do). no_new_privs comes back with the process (libckpt-preload/
process.c): the program checks it every round. The seccomp filter does
not (no unprivileged process can read one back): the checkpoint says so
for the thread, and the restarted program runs without it (its mode
reads 0), which the test sees, rather than a silent loss."""

import re

import pytest

from ckpt_harness import app, numbers

ROUND = r"^round (\d+)$"
ROUNDS = 120


@pytest.mark.time_limit(200)
def test_no_new_privs_kept_and_seccomp_loss_said(session):
    s = session
    p = s.launch([app("sandboxed"), str(ROUNDS)])
    p.wait_line(ROUND, minimum=3)
    assert "seccomp 2" in p.lines(), p.lines()[:3]
    r = s.command("--checkpoint")
    assert r.returncode == 0, r.stderr
    assert re.search(r"thread \d+: a seccomp filter \(1 filter\): not "
                     r"restored, the restarted thread runs without it",
                     r.stderr), r.stderr
    images = r.stdout.split()
    before = numbers(p.lines(), ROUND)
    s.kill_all()
    p.wait_exit(30)
    rs = s.restart(images)
    assert rs.wait_exit() == 0, rs.stderr_text()
    out = rs.lines()
    assert not [l for l in out if "FAIL" in l], out
    assert out[-1] == "done", out[-3:]
    assert "seccomp 0" in out, out      # said, and so it is
    rounds = numbers(out, ROUND)
    assert rounds[0] <= before[-1] + 1 and rounds[-1] == ROUNDS
