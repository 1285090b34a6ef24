# SPDX-License-Identifier: LGPL-2.1-or-later
"""Text from processes (program and host names, failure messages, what a
restart will not restore) reaches the terminal through ckpt_command and
the coordinator's log: escape sequences in it must arrive inert, as
\\xHH, never as control characters."""

import os
import subprocess

import pytest

from hostile_peers import LimitedCoordinator
from test_coordinator import (COMMAND, MSG_FAILED, FakeProcess, env,  # noqa: F401
                              run)

EVIL = "\x1b]0;owned\x07\x1b[2J\x1b[31m"
CONTROL = [chr(i) for i in range(32) if chr(i) not in "\n\t"] + ["\x7f"]


class EvilProcess(FakeProcess):
    def _on_suspend(self, g):
        self.result(MSG_FAILED, g, error=5,
                    message="disk on fire" + EVIL + "\nforged line\r")
        return True


def assert_inert(text, where):
    bad = sorted({"%#x" % ord(ch) for ch in text if ch in CONTROL})
    assert not bad, "control characters %s in %s: %r" % (bad, where, text)


@pytest.mark.time_limit(60)
def test_peer_text_is_sanitized(env):
    log = os.path.join(env["TESTDIR"], "c.log")
    c = LimitedCoordinator(env["CKPT_COORD"], env, log)
    procs = []
    try:
        procs.append(EvilProcess(c.addr, 3, program="ev\x1b[2Jil",
                                 hostname=b"h\x1b[1;1Hst"))
        procs.append(FakeProcess(c.addr, 4, program="good",
                                 unrestored="fd 9: a\x1b[8m thing\n"))
        r = run([COMMAND, "--checkpoint"], env=env)
        assert r.returncode == 1
        assert_inert(r.stdout + r.stderr, "ckpt_command --checkpoint")
        assert "disk on fire" in r.stderr and "forged line" in r.stderr, \
            r.stderr
        for opt in ("--list", "--status"):
            r = run([COMMAND, opt], env=env)
            assert r.returncode == 0, r.stderr
            assert_inert(r.stdout + r.stderr, "ckpt_command " + opt)
        procs.pop(0).close()         # the rest checkpoints: warnings
        r = run([COMMAND, "--checkpoint"], env=env)
        assert r.returncode == 0, r.stderr
        assert_inert(r.stdout + r.stderr, "the warnings")
        assert "fd 9: a" in r.stderr and "[8m thing" in r.stderr, r.stderr
        text = c.logtext()
        assert "disk on fire" in text
        assert_inert(text.replace("\n", ""), "the coordinator's log")
        # one log line per event: the failure cannot forge a second one
        assert not any(l.startswith("forged line")
                       for l in text.splitlines()), text
    finally:
        for p in procs:
            p.close()
        c.stop()
