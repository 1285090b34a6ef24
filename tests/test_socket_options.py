# SPDX-License-Identifier: LGPL-2.1-or-later
"""Socket options come back after a restart: a TCP connection inside the
computation (both ends), a TCP listener, UDP over IPv4 and IPv6 and a
Unix socket pair with unusual TCP_NODELAY, keepalive times, SO_LINGER,
timeouts, buffer sizes, SO_BROADCAST, multicast TTL/loop, O_NONBLOCK and
FD_CLOEXEC read the same with getsockopt/fcntl after each of two
checkpoint/kill/restart cycles (the program compares them every tick)."""

import re

import pytest

from ckpt_harness import app, checkpoint_and_kill, numbers, assert_resumed

TICKS = 60
ARGV = [app("sock_options"), str(TICKS), "100"]
TICK = r"^tick (\d+)$"


def options_line(lines, word):
    found = [l for l in lines if l.startswith(word + " ")]
    assert len(found) == 1, lines[-5:]
    return found[0][len(word) + 1:]


@pytest.mark.time_limit(400)
def test_socket_options_survive_two_restarts(session):
    s = session
    p = s.launch(ARGV)
    p.wait_line(r"^options ")
    first = options_line(p.lines(), "options")
    # the values set are the ones read back (the test proves something)
    for want in ("nodelay=1", "keepidle=77", "keepintvl=13", "keepcnt=5",
                 "linger=1,7", "rcvtimeo=3.500000", "sndtimeo=4.500000",
                 "rcvbuf=100000", "sndbuf=120000", "broadcast=1",
                 "mttl=7", "mloop=0", "mhops=9", "mloop6=0",
                 "rcvtimeo=5.500000", "nonblock=1", "cloexec=1"):
        assert re.search(r":%s( |$)" % re.escape(want), first), (want, first)
    images, seen, before = checkpoint_and_kill(s, p, TICK, 5)
    shown = s.inspect(images[0])
    assert re.search(r"options .*TCP_NODELAY 1 .*TCP_KEEPIDLE 77 .*"
                     r"SO_LINGER 1,7 SO_RCVTIMEO 3,500000", shown), shown
    assert re.search(r"options .*SO_BROADCAST 1 IP_MULTICAST_TTL 7 "
                     r"IP_MULTICAST_LOOP 0", shown), shown

    r = s.restart(images)
    r.wait_line(TICK, minimum=seen + 5)
    assert not [l for l in r.lines() if l.startswith("FAIL")], r.lines()
    seen2 = max(numbers(r.lines(), TICK))
    images = s.checkpoint()
    r.wait_line(TICK, minimum=seen2 + 2)
    s.kill_all()
    r.popen.wait(30)
    before2 = numbers(r.lines(), TICK)
    assert not [l for l in r.lines() if l.startswith("FAIL")], r.lines()

    r2 = s.restart(images)
    rc = r2.wait_exit()
    lines = r2.lines()
    assert rc == 0, "exit %d, last lines %r, stderr:\n%s" % (
        rc, lines[-5:], r2.stderr_text())
    assert lines[-1] == "OK sock_options %d" % TICKS, lines[-5:]
    assert options_line(lines, "final") == first
    assert_resumed(before2, numbers(lines, TICK), TICK, TICKS, seen2)
    assert "setting" not in r2.stderr_text(), r2.stderr_text()
