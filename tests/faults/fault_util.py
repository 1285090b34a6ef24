# SPDX-License-Identifier: LGPL-2.1-or-later
"""Helpers of the fault tests: fake participants that misbehave, speaking
the protocol of include/ckpt/protocol.h (FakeProcess of test_coordinator),
and a watch on a launched counter that tells how long it stood still."""

import os
import re
import socket
import subprocess
import sys
import threading
import time

from test_coordinator import (MSG_DO_ABORT, MSG_DO_SUSPEND, MSG_DO_WRITE,
                              FakeProcess)

COUNT = re.compile(r"^count (\d+) ")


class SilentFake(FakeProcess):
    """A participant that goes silent in a round.

    behaviour "silent_after_suspend": answers SUSPENDED, then nothing
    (DO_WRITE is never answered); "silent": never answers DO_SUSPEND."""

    def _on_suspend(self, g):
        if self.behaviour == "silent":
            return True
        self.result(2, g)  # SUSPENDED
        return True

    def _on_write(self, g):
        pass  # stuck: no WRITTEN, ever

    def _on_abort(self):
        pass


class VanishingFake(FakeProcess):
    """A participant on this host whose process (`child`, a real process
    it speaks for) exits when told DO_SUSPEND, closing the connection as
    an exiting libckpt process would."""

    def __init__(self, addr, vpid, child, **kw):
        self.child = child
        super().__init__(addr, vpid, real_pid=child.pid, sock=child.sock,
                         hostname=os.uname().nodename.encode(), **kw)

    def _on_suspend(self, g):
        self.child.kill()
        self.child.wait(10)  # reaped: gone
        return False  # closes the connection


# The child connects to the coordinator itself, hands the connection over
# (SCM_RIGHTS) and sleeps: the coordinator believes a pid claim only from
# the process that connected (coordinator/peer_pid.c), so the fake that
# speaks on this connection stands for the child, a real process that
# writes nothing.
CHILD = """
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(10)
s.connect(sys.argv[1])
socket.send_fds(socket.socket(fileno=int(sys.argv[2])), [b"c"], [s.fileno()])
time.sleep(600)
"""


def start_child(addr=None):
    """A sleeping process; with a Unix socket addr, its .sock is a
    connection to the coordinator it made."""
    if addr is None:
        child = subprocess.Popen(["sleep", "600"])
        child.sock = None
        return child
    mine, theirs = socket.socketpair()
    with mine, theirs:
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, addr, str(theirs.fileno())],
            pass_fds=[theirs.fileno()])
        mine.settimeout(10)
        _, fds, _, _ = socket.recv_fds(mine, 1, 1)
    child.sock = socket.socket(fileno=fds[0])
    child.sock.settimeout(10)
    return child


class CountWatch:
    """Samples the counter's last line every 10 ms; longest_gap() tells
    the longest time (s) in a window during which it did not move."""

    def __init__(self, proc):
        self.proc = proc
        self.samples = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def last_count(self):
        for line in reversed(self.proc.lines()):
            m = COUNT.match(line)
            if m:
                return int(m.group(1))
        return 0

    def _run(self):
        while not self.stop.is_set():
            self.samples.append((time.monotonic(), self.last_count()))
            time.sleep(0.01)

    def close(self):
        self.stop.set()
        self.thread.join(5)

    def longest_gap(self, t0, t1):
        gap, since, last = 0.0, None, None
        for t, n in self.samples:
            if t < t0 or t > t1:
                continue
            if n != last:
                if since is not None:
                    gap = max(gap, t - since)
                since, last = t, n
        if since is not None:
            gap = max(gap, t1 - since)
        return gap


__all__ = ["SilentFake", "VanishingFake", "CountWatch", "start_child",
           "MSG_DO_ABORT", "MSG_DO_SUSPEND", "MSG_DO_WRITE"]
