# SPDX-License-Identifier: LGPL-2.1-or-later
"""Helpers for the tests of the coordinator under hostile or broken peers
(tests/security, tests/faults): a coordinator started with a low fd limit
and a log file, its CPU time, and an attacker process that floods it."""

import os
import resource
import subprocess
import sys
import time

from test_coordinator import Coordinator

ATTACKER = r'''
import os, resource, select, socket, sys, time
addr, want, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
resource.setrlimit(resource.RLIMIT_NOFILE, (want + 100, want + 100))
def dial():
    if addr.startswith("/"):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        target = addr
    else:
        host, port = addr.rsplit(":", 1)
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        target = (host, int(port))
    s.setblocking(False)
    try:
        s.connect(target)
    except (BlockingIOError, InterruptedError):
        pass
    except OSError:
        s.close()
        return None
    return s
held, made = [], 0
end = time.monotonic() + seconds
while time.monotonic() < end:
    while len(held) < want:
        s = dial()
        if s is None:
            break
        held.append(s)
        made += 1
    ready, _, _ = select.select(held, [], [], 0.05)
    for s in ready:
        try:
            gone = s.recv(1) == b""
        except OSError:
            gone = True
        if gone:
            held.remove(s)
            s.close()
print(made, flush=True)
'''


class LimitedCoordinator(Coordinator):
    """ckpt_coordinator with RLIMIT_NOFILE `nofile` and its log in a file."""

    def __init__(self, addr, env, log, nofile=None, extra_env=None):
        e = dict(env)
        e.update(extra_env or {})

        def limit():
            if nofile:
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
        super().__init__(addr, e, log=log, start_timeout=10,
                         preexec_fn=limit)

    def logtext(self):
        with open(self.log, errors="replace") as f:
            return f.read()

    def log_bytes(self):
        return os.path.getsize(self.log)

    def cpu_seconds(self):
        """User + system CPU time the coordinator has used so far."""
        with open("/proc/%d/stat" % self.proc.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


def as_other_user():
    """argv prefix running a step as nobody when we are root."""
    if os.geteuid() != 0:
        return []
    return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
            "--"]


def start_attacker(addr, connections, seconds, other_user=False):
    """A process that holds `connections` idle connections to addr for
    `seconds`, opening a new one as soon as one is closed."""
    prefix = as_other_user() if other_user else []
    return subprocess.Popen(
        prefix + [sys.executable, "-c", ATTACKER, addr, str(connections),
                  str(seconds)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def timed(fn, *args, **kw):
    t0 = time.monotonic()
    r = fn(*args, **kw)
    return r, time.monotonic() - t0
