# SPDX-License-Identifier: LGPL-2.1-or-later
"""Pids the kernel writes for a program name the processes as the program
knows them after a restart: the sender of a signal read from a signalfd
(ssi_pid), the sender of a datagram received with recvmmsg
(SCM_CREDENTIALS) and the peer of a Unix connection (SO_PEERCRED, on
both ends of a connection made with connect/accept)."""

import re

import pytest

from ckpt_harness import app

ROUND = r"^round (\d+)$"
ROUNDS = 120


def restart_until_done(session, images):
    r = session.restart(images)
    assert r.wait_exit() == 0, "%r %s" % (r.lines()[-3:], r.stderr_text())
    return r


@pytest.mark.time_limit(120)
def test_pids_seen_after_restart_are_virtual(session):
    """Checkpointed mid-run, killed and restarted: both processes have new
    real pids, and every round still reads the pid fork() returned (the
    child checks the parent's); then checkpointed and restarted again."""
    p = session.launch([app("peer_pids"), str(ROUNDS)])
    p.wait_line(ROUND, minimum=20)
    images = session.checkpoint(expect_images=2)
    session.kill_all()
    p.popen.wait(30)
    r = session.restart(images)
    r.wait_line(ROUND, minimum=60)
    images = session.checkpoint(expect_images=2)
    session.kill_all()
    r.popen.wait(30)
    r = restart_until_done(session, images)
    wrong = [line for line in r.lines() if line.startswith("wrong")]
    assert not wrong, wrong[:5]
    assert r.lines()[-1] == "done rounds %d wrong 0 child 0" % ROUNDS, \
        r.lines()[-3:]
