# SPDX-License-Identifier: LGPL-2.1-or-later
"""Fixtures for tests/security: a Session whose coordinator listens on TCP
loopback with its own $HOME (so its own secret), started by the test so
its log can be read."""

import os
import secrets
import socket
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ckpt_harness  # noqa: E402
import ckpt_wire  # noqa: E402


def write_secret(home, value=None):
    d = os.path.join(home, ".ckpt")
    os.makedirs(d, mode=0o700, exist_ok=True)
    value = value or secrets.token_hex(16).encode()
    path = os.path.join(d, "secret")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.write(fd, value + b"\n")
    os.close(fd)
    return value


def wait_listening(addr, proc, timeout=20):
    host, port = addr.rsplit(":", 1)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.alive(), "coordinator exited: %s" % proc.stderr_text()
        try:
            socket.create_connection((host, int(port)), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError("coordinator at %s did not listen within %ds"
                         % (addr, timeout))


class TcpSession(ckpt_harness.Session):
    def __init__(self):
        super().__init__()
        self.env["HOME"] = self.dir
        self.secret = write_secret(self.dir)
        self.addr = "127.0.0.1:%d" % ckpt_wire.free_port()
        self.env["CKPT_COORD"] = self.addr
        self.coordinator = None

    def start_coordinator(self, addr=None):
        addr = addr or self.addr
        p = self.start([self.tool("ckpt_coordinator"), "--coord", addr],
                       "coordinator " + addr)
        wait_listening(addr, p)
        self.coordinator = p
        return p

    def log(self):
        return self.coordinator.stderr_text() if self.coordinator else ""


@pytest.fixture
def tcp_session():
    if ckpt_harness.missing_core():
        pytest.skip("ckpt core not built (run make)")
    s = TcpSession()
    try:
        yield s
    finally:
        s.close()
