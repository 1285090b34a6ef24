# SPDX-License-Identifier: LGPL-2.1-or-later
"""Restarting many TCP connections stays cheap (issue 9's benchmark,
docs/performance.md "TCP connections and redis"): build/bench/tcp_conns
with N connections between its two processes is checkpointed, killed and
restarted under `strace -f -c`, counting the descriptor and socket system
calls of ckpt_restart and both restored processes until both answer; the
same with no connections gives the fixed part. The count added per
connection is bounded (it was 46: a listener, a socket pair moved twice
and each end moved out of the way in both processes), and every
connection carries its bytes exactly once afterwards (tcp_conns "check").
A count, not a time: the machine's load does not change it."""

import os
import re
import shutil
import subprocess
import time

import pytest

from ckpt_harness import ROOT

TCP_CONNS = os.path.join(ROOT, "build", "bench", "tcp_conns")
N = 300
# descriptor and socket calls only: the idle loops' poll and the
# coordinator's messages do not depend on N
TRACED = ("socket,connect,accept,accept4,bind,listen,getsockname,"
          "getpeername,getsockopt,setsockopt,fcntl,dup,dup2,dup3,close,"
          "close_range,pread64,newfstatat,fstat")
PER_CONNECTION_MAX = 20


def traced_calls(path):
    """The total of strace -c's summary."""
    with open(path) as f:
        for line in f:
            m = re.match(r"^100\.00\s+\S+\s+\S+\s+(\d+)\s+(\d+\s+)?total",
                         line.strip())
            if m:
                return int(m.group(1))
    raise AssertionError("no total in strace summary %s:\n%s" % (
        path, open(path).read()))


def wait_restarted(session, nprocs, timeout=60):
    deadline = time.monotonic() + timeout
    while True:
        r = session.command("--list")
        if r.stdout.count("restarted=yes") >= nprocs:
            return
        assert time.monotonic() < deadline, (
            "%d processes did not rejoin within %ds: %s" % (
                nprocs, timeout, r.stdout))
        time.sleep(0.05)


def check(p, n):
    before = len(p.lines())
    p.popen.stdin.write(b"check\n")
    p.popen.stdin.flush()
    p.wait_line(r"^(checked|error)", timeout=120)
    new = p.lines()[before:]
    assert "checked %d connections" % n in new, (new, p.stderr_text())


def restart_counted(session, n):
    """Calls traced over a restart of tcp_conns with n connections."""
    p = session.launch([TCP_CONNS, str(n), "4"], stdin=subprocess.PIPE)
    p.wait_line(r"^ready")
    check(p, n)
    images = session.checkpoint(expect_images=2)
    session.kill_all()
    p.popen.wait(30)
    out = session.path("strace-%d" % n)
    r = session.start(["strace", "-f", "-c", "-o", out, "-e",
                       "trace=" + TRACED, session.tool("ckpt_restart")]
                      + images, "strace restart %d" % n,
                      stdin=subprocess.PIPE)
    r.popen.stdin.write(b"ping\n")
    r.popen.stdin.flush()
    r.wait_line(r"^pong")
    wait_restarted(session, 2)
    check(r, n)
    session.kill_all()
    r.wait_exit(60)     # strace writes its summary when they are gone
    return traced_calls(out)


@pytest.mark.time_limit(600)
@pytest.mark.skipif(not shutil.which("strace"), reason="needs strace")
@pytest.mark.skipif(not os.path.exists(TCP_CONNS),
                    reason="build/bench/tcp_conns not built")
def test_tcp_connections_restart_calls(session):
    fixed = restart_counted(session, 0)
    many = restart_counted(session, N)
    per = (many - fixed) / N
    print("traced calls: %d with none, %d with %d connections: %.1f each"
          % (fixed, many, N, per))
    assert per <= PER_CONNECTION_MAX, (
        "%d connections added %.1f descriptor and socket calls each to "
        "the restart (at most %d): %d against %d" % (
            N, per, PER_CONNECTION_MAX, many, fixed))
