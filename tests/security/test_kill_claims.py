# SPDX-License-Identifier: LGPL-2.1-or-later
"""--kill signals only processes whose pid the kernel vouches for
(coordinator/peer_pid.c): on the Unix socket the pid SO_PEERCRED gives,
on TCP a local process that holds the other end of the connection. A pid
a client merely claims in HELLO gets DO_KILL, never a signal: before, a
client could make --kill SIGKILL any process of the coordinator's uid."""

import os
import signal
import socket
import subprocess
import threading
import time

import pytest

from ckpt_harness import app
from test_coordinator import (COMMAND, FakeProcess, env, free_port,  # noqa: F401
                              run, wait_for)
from hostile_peers import LimitedCoordinator
import ckpt_wire as w


class AuthenticatedLiar:
    """A client over TCP that knows the secret (so it is let in) and
    claims another process's pid in its HELLO."""

    def __init__(self, addr, secret, real_pid):
        self.killed = threading.Event()
        self.conn = w.Conn(w.connect_tcp(addr))
        self.conn.client_handshake(secret)
        hello = w.HELLO.pack(real_pid, 5, 1, w.HELLO_F_RESUME_BARRIER, 0,
                             b"liar", b"uid-5",
                             socket.gethostname().encode(), b"", b"", 0)
        self.conn.send(w.MSG_HELLO, hello)
        assert self.conn.recv()[0] == w.MSG_WELCOME
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        try:
            while self.conn.recv()[0] != w.MSG_DO_KILL:
                pass
            self.killed.set()
            self.conn.sock.shutdown(socket.SHUT_RDWR)  # "exits"
        except (OSError, AssertionError):
            pass

    def close(self):
        self.conn.close()
        self.thread.join(10)


@pytest.fixture
def bystander():
    """An unrelated process of our uid, with no children."""
    p = subprocess.Popen(["sleep", "120"])
    yield p
    p.kill()
    p.wait(10)


@pytest.mark.time_limit(60)
@pytest.mark.parametrize("transport", ["unix", "tcp"])
def test_kill_spares_a_claimed_pid(env, bystander, transport):
    addr = (env["CKPT_COORD"] if transport == "unix"
            else "127.0.0.1:%d" % free_port())
    e = dict(env, CKPT_COORD=addr)
    c = LimitedCoordinator(addr, env, os.path.join(env["TESTDIR"], "c.log"))
    liar = None
    try:
        if transport == "tcp":
            liar = AuthenticatedLiar(addr, w.read_secret(env["HOME"]),
                                     bystander.pid)
        else:
            liar = FakeProcess(addr, 5, program="liar",
                               hostname=socket.gethostname().encode(),
                               real_pid=bystander.pid)
        r = run([COMMAND, "--kill"], env=e)
        assert r.returncode == 0, r.stderr
        assert liar.killed.wait(10), "the client got no DO_KILL"
        time.sleep(0.5)
        assert bystander.poll() is None, (
            "--kill killed pid %d, which a client only claimed"
            % bystander.pid)
        state = open("/proc/%d/stat" % bystander.pid).read().rsplit(
            ")", 1)[1].split()[0]
        assert state != "T", "--kill left pid %d stopped" % bystander.pid
        assert "claims pid %d" % bystander.pid in c.logtext() or \
            transport == "tcp"
    finally:
        if liar:
            liar.close()
        os.kill(bystander.pid, signal.SIGCONT)
        c.stop()


@pytest.mark.time_limit(180)
def test_tcp_local_process_is_verified(session):
    """A real process on this host over TCP: the coordinator finds the
    other end of its connection among its fds, so it may look at it (a
    stopped process fails the checkpoint at once) and signal it."""
    addr = "127.0.0.1:%d" % free_port()
    session.env["CKPT_COORD"] = addr
    p = session.launch([app("counter"), "600", "50"])
    p.wait_line(r"^count (\d+) ", minimum=3)
    os.kill(p.pid, signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        r = session.command("--checkpoint")
        took = time.monotonic() - t0
    finally:
        os.kill(p.pid, signal.SIGCONT)
    assert r.returncode != 0 and "is stopped" in r.stderr, r.stderr
    assert took < 20, "the failure took %.1f s" % took
    r = session.command("--kill")
    assert r.returncode == 0, r.stderr
    assert p.wait_exit(30) is not None
