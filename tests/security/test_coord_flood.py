# SPDX-License-Identifier: LGPL-2.1-or-later
"""A local peer that holds connections open without authenticating, and
keeps opening more, must not make the checkpoints of the computation
fail: unauthenticated connections are capped per peer (uid on the Unix
socket, address on TCP) and in all, oldest evicted first, and time out
after 5 s (coordinator/conn_guard.c). Before, they took every fd of the
coordinator and a checkpoint waited for one to time out."""

import os
import socket
import time

import pytest

from hostile_peers import LimitedCoordinator, start_attacker, timed
from test_coordinator import (CMD_CHECKPOINT, FakeProcess, command, env,  # noqa: F401
                              free_port)

NOFILE = 200            # the coordinator's fd limit
HELD = 400              # idle connections the attacker keeps open
CHECKPOINT_LIMIT = 5.0  # seconds one checkpoint of two fake processes may take


def secret_of(env, addr):
    if addr.startswith("/"):
        return b""
    with open(os.path.join(env["HOME"], ".ckpt", "secret")) as f:
        return f.read().strip().encode()


@pytest.mark.time_limit(120)
@pytest.mark.parametrize("transport", ["unix", "tcp"])
def test_idle_connection_flood_does_not_fail_checkpoints(env, transport):
    addr = (env["CKPT_COORD"] if transport == "unix"
            else "127.0.0.1:%d" % free_port())
    c = LimitedCoordinator(addr, env, os.path.join(env["TESTDIR"], "c.log"),
                           nofile=NOFILE)
    procs, attacker = [], None
    try:
        secret = secret_of(env, addr)
        procs = [FakeProcess(addr, v, secret=secret) for v in (1, 2)]
        # on TCP from another uid; the Unix socket only takes ours
        attacker = start_attacker(addr, HELD, 30,
                                  other_user=transport == "tcp")
        time.sleep(3)           # the flood is on, every fd taken before
        assert attacker.poll() is None, attacker.stderr.read()
        for i in range(3):
            (status, text), took = timed(command, addr, CMD_CHECKPOINT,
                                         secret=secret, timeout=20)
            assert status == 0, "checkpoint %d under flood: %s" % (i, text)
            assert took < CHECKPOINT_LIMIT, (
                "checkpoint %d took %.1f s under a flood of idle "
                "connections" % (i, took))
            assert text.count(".img") == 2, text
        attacker.terminate()
        out, err = attacker.communicate(timeout=30)
        log = c.logtext()
        assert "closing an unauthenticated connection" in log, log[-2000:]
    finally:
        if attacker and attacker.poll() is None:
            attacker.kill()
            attacker.wait(10)
        for p in procs:
            p.close()
        c.stop()


@pytest.mark.time_limit(60)
def test_silent_connection_closed_after_handshake_deadline(env):
    c = LimitedCoordinator(env["CKPT_COORD"], env,
                           os.path.join(env["TESTDIR"], "c.log"))
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(15)
        s.connect(env["CKPT_COORD"])
        t0 = time.monotonic()
        assert s.recv(1) == b""
        took = time.monotonic() - t0
        s.close()
        assert 4 < took < 8, "closed after %.1f s, expected 5" % took
    finally:
        c.stop()
