# SPDX-License-Identifier: LGPL-2.1-or-later
"""The coordinator out of file descriptors, and its log under a flood of
events (coordinator/conn_guard.c, coordinator/coord_log.c). Before, an
EMFILE from accept() made it spin at 100% CPU writing thousands of log
lines a second, and its log grew without bound."""

import os
import socket
import struct
import time

import pytest

from hostile_peers import LimitedCoordinator
from test_coordinator import (CMD, CMD_STATUS, HEADER, HELLO, MAGIC,  # noqa: F401
                              MSG_CMD, MSG_HELLO, VERSION, command, env,
                              recv_msg, send_msg, wait_for)

NOFILE = 40
HELD = 70


def hello_connection(addr, vpid):
    """A process that said HELLO: authenticated, never evicted."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(addr)
    send_msg(s, MSG_HELLO, HELLO.pack(os.getpid(), vpid, 1, 0, 0, b"held",
                                      b"id-%d" % vpid, b"testhost", b"",
                                      b""))
    return s


@pytest.mark.time_limit(120)
def test_out_of_fds_backs_off(env):
    c = LimitedCoordinator(env["CKPT_COORD"], env,
                           os.path.join(env["TESTDIR"], "c.log"),
                           nofile=NOFILE)
    held = []
    try:
        # more than its fds: the rest wait in the listen backlog
        held = [hello_connection(c.addr, v) for v in range(1, HELD + 1)]
        time.sleep(1.5)
        cpu0, log0, t0 = c.cpu_seconds(), c.log_bytes(), time.monotonic()
        time.sleep(4)
        cpu = (c.cpu_seconds() - cpu0) / (time.monotonic() - t0)
        grew = c.log_bytes() - log0
        assert cpu < 0.2, "coordinator used %.0f%% CPU out of fds" % (
            cpu * 100)
        assert grew < 4096, "its log grew %d bytes in 4 s out of fds" % grew
        assert "not accepting for" in c.logtext()
        for s in held:
            s.close()
        # fds again: the coordinator serves a command
        status, text = command(c.addr, CMD_STATUS, timeout=15)
        assert status == 0 and "processes:" in text, text
        assert c.proc.poll() is None
    finally:
        for s in held:
            s.close()
        c.stop()


@pytest.mark.time_limit(90)
def test_idle_command_connection_times_out(env):
    c = LimitedCoordinator(env["CKPT_COORD"], env,
                           os.path.join(env["TESTDIR"], "c.log"))
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(60)
        s.connect(c.addr)
        send_msg(s, MSG_CMD, CMD.pack(CMD_STATUS, 0, b"", b""))
        assert recv_msg(s)[0] == 33
        t0 = time.monotonic()
        assert s.recv(1) == b"", "command connection kept open"
        took = time.monotonic() - t0
        s.close()
        assert 25 < took < 40, "idle command closed after %.1f s" % took
        assert "command connection idle for 30 s" in c.logtext()
    finally:
        c.stop()


def bad_header(addr, i):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(addr)
    s.sendall(HEADER.pack(0x1000 + i, VERSION, 1, 0, 0))
    s.recv(1)
    s.close()


@pytest.mark.time_limit(90)
def test_log_is_bounded_and_deduplicated(env):
    log = os.path.join(env["TESTDIR"], "c.log")
    c = LimitedCoordinator(env["CKPT_COORD"], env, log,
                           extra_env={"CKPT_COORD_LOG_MAX": "4096"})
    try:
        for i in range(150):      # 150 different lines of ~130 bytes
            bad_header(c.addr, i)
        for i in range(50):       # the same line 50 times
            bad_header(c.addr, 7)
        bad_header(c.addr, 999)   # another line: the repeats are counted
        assert wait_for(lambda: "repeated" in c.logtext(), 10), \
            c.logtext()[-1500:]
        text = c.logtext()
        assert os.path.getsize(log) < 4096 + 2048
        assert os.path.exists(log + ".1")
        assert "log reached" in text
        assert "last message repeated 49 times" in text or \
            "last message repeated 50 times" in text, text
        assert c.proc.poll() is None
    finally:
        c.stop()
