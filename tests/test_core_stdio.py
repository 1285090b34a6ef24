# SPDX-License-Identifier: LGPL-2.1-or-later
"""stdio across a restart: a program blocked reading stdin is restarted
with the stdin, stdout and stderr of the restarting side, both pipes and
a terminal."""

import os
import subprocess
import tty

import pytest

from ckpt_harness import Output, app

ECHO = r"^echo (\d+) "


def send(fd, text):
    os.write(fd, text.encode())


@pytest.mark.time_limit(300)
def test_stdio_pipes_reattached(session):
    p = session.launch([app("stdin_echo")], stdin=subprocess.PIPE)
    p.wait_line(r"^ready tty=0$")
    for i in range(1, 6):
        send(p.popen.stdin.fileno(), "line%d\n" % i)
    p.wait_line(ECHO, minimum=5)
    p.err.wait_for(lambda l: "err 5" in l, 30, "err 5")
    images = session.checkpoint()
    send(p.popen.stdin.fileno(), "lost\n")  # after the checkpoint: redone?
    p.wait_line(ECHO, minimum=6)
    p.sigkill()

    r = session.restart(images, stdin=subprocess.PIPE)
    send(r.popen.stdin.fileno(), "line6\nline7\nquit\n")
    rc = r.wait_exit()
    assert rc == 0, "restart exit %d; stderr:\n%s" % (rc, r.stderr_text())
    assert r.lines() == ["echo 6 line6", "echo 7 line7", "bye 7"], (
        "restarted output %r; stderr:\n%s" % (r.lines(), r.stderr_text()))
    errs = [l for l in r.err.snapshot() if l.startswith("err ")]
    assert errs == ["err 6", "err 7"], (
        "stderr of the restarted program: %r" % r.err.snapshot())


def open_pty():
    master, slave = os.openpty()
    tty.setraw(slave)
    return master, slave


@pytest.mark.time_limit(300)
def test_stdio_terminal_reattached(session):
    master, slave = open_pty()
    try:
        p = session.launch([app("stdin_echo")], stdin=slave, stdout=slave)
    finally:
        os.close(slave)
    out = Output(os.fdopen(master, "rb", buffering=0), "first terminal")
    out.wait_for(lambda l: "ready tty=1" in l, 60, "ready tty=1")
    send(master, "a1\na2\n")
    out.wait_for(lambda l: "echo 2 a2" in l, 60, "echo 2")
    images = session.checkpoint()
    p.sigkill()

    master2, slave2 = open_pty()
    try:
        r = session.restart(images, stdin=slave2, stdout=slave2)
    finally:
        os.close(slave2)
    out2 = Output(os.fdopen(master2, "rb", buffering=0), "second terminal")
    send(master2, "b3\nquit\n")
    rc = r.wait_exit()
    assert rc == 0, "restart exit %d; stderr:\n%s" % (rc, r.stderr_text())
    out2.wait_for(lambda l: "bye 3" in l, 30, "bye 3")
    lines = [l.strip("\r") for l in out2.snapshot()]
    assert lines == ["echo 3 b3", "bye 3"], lines
    assert not any("echo 3" in l for l in out.snapshot()), (
        "the restarted program wrote to the old terminal")
