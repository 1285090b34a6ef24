# SPDX-License-Identifier: LGPL-2.1-or-later
"""Many TCP connections between two processes of the computation
(build/bench/tcp_conns: every tenth one holds bytes sent and not read
yet, both ways), checkpointed twice, killed and restarted each time:
each restart brings every connection back with its queued bytes
delivered first, exactly once. The checkpoint asks the bytes waiting on
all connections at once (io_uring, files.c): an empty queue must read as
empty and a queued one as queued, every round."""

import os
import subprocess

import pytest

from ckpt_harness import ROOT

TCP_CONNS = os.path.join(ROOT, "build", "bench", "tcp_conns")
CONNECTIONS = 60


def check(p):
    """tcp_conns's check: one byte both ways on every connection, after
    the bytes left queued; it queues new ones."""
    seen = len(p.lines())
    p.popen.stdin.write(b"check\n")
    p.popen.stdin.flush()
    p.wait_line(r"^(checked|error:)")
    answer = [l for l in p.lines()[seen:]
              if l.startswith(("checked", "error:"))]
    assert answer == ["checked %d connections" % CONNECTIONS], (
        answer, p.stderr_text())


@pytest.mark.time_limit(300)
def test_queued_and_empty_connections_survive_two_restarts(session):
    s = session
    p = s.launch([TCP_CONNS, str(CONNECTIONS), "1"], stdin=subprocess.PIPE)
    p.wait_line(r"^ready$")
    check(p)
    for _ in range(2):
        s.wait_members(2)   # its two processes start in a few ms
        images = s.checkpoint(expect_images=2)
        s.kill_all()
        p.popen.wait(30)
        p = s.restart(images, stdin=subprocess.PIPE)
        check(p)
