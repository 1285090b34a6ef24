# SPDX-License-Identifier: LGPL-2.1-or-later
"""UDP sockets come back bound to their address and port and connected to
their peer, with the datagrams waiting in their queues delivered exactly
once, in order, from their source address: a parent and its child play
UDP ping-pong over IPv4 (connected sockets) and IPv6 (sendto/recvfrom)
with 4 rounds in flight; checkpointed several times mid-run, killed and
restarted (twice), the sequence goes on exactly; a lost or doubled
datagram is a gap or a repeat the program reports as FAIL. A multicast
group joined on loopback is joined again."""

import re

import pytest

from ckpt_harness import (app, assert_resumed, checkpoint_and_kill, numbers,
                          reference_output, restart_to_end)

ROUNDS = 500
ARGV = [app("udp_pingpong"), str(ROUNDS), "4", "15"]
ROUND = r"^round (\d+)$"
TICK = r"^tick (\d+)$"


def no_fail(lines):
    assert not [l for l in lines if l.startswith("FAIL")], lines[-10:]


def datagrams_saved(s, images):
    total = 0
    for img in images:
        total += sum(int(n) for n in re.findall(
            r"bound-socket .*, (\d+) datagrams saved\)", s.inspect(img)))
    return total


def checkpoint_while_running(s, proc, times):
    """Checkpoint `times` times, each after a few more rounds; the last
    images and the round seen before they were taken."""
    for _ in range(times):
        seen = max(numbers(proc.lines(), ROUND))
        images = s.checkpoint(expect_images=2)
        proc.wait_line(ROUND, minimum=seen + 8)
        no_fail(proc.lines())
    return images, seen


@pytest.mark.time_limit(600)
def test_udp_pingpong_continues_exactly(session):
    s = session
    ref = reference_output(ARGV)
    assert ref[-1] == "OK udp_pingpong %d" % ROUNDS, ref[-5:]
    p = s.launch(ARGV)
    ports = p.wait_line(r"^ports (\d+) (\d+) (\d+) (\d+)$")
    p.wait_line(ROUND, minimum=20)
    images, seen = checkpoint_while_running(s, p, 3)
    shown = s.inspect(images[0])
    p4, c4, p6, c6 = (int(x) for x in ports.groups())
    assert re.search(r"bound-socket .* \(127\.0\.0\.1:%d to 127\.0\.0\.1:%d"
                     % (p4, c4), shown), shown
    assert re.search(r"bound-socket .* \(\[::1\]:%d[,)]" % c6, shown), shown
    assert datagrams_saved(s, images) > 0, "no datagram was waiting"
    s.kill_all()
    p.popen.wait(30)
    before = numbers(p.lines(), ROUND)
    no_fail(p.lines())

    r = s.restart(images)
    r.wait_line(ROUND, minimum=seen + 40)
    no_fail(r.lines())
    after = numbers(r.lines(), ROUND)
    assert seen < after[0] <= before[-1] + 1, (seen, after[:5], before[-5:])
    assert after == list(range(after[0], after[-1] + 1)), after
    images, seen = checkpoint_while_running(s, r, 2)
    s.kill_all()
    r.popen.wait(30)
    before = numbers(r.lines(), ROUND)

    r2 = s.restart(images)
    rc = r2.wait_exit()
    lines = r2.lines()
    assert rc == 0, "exit %d, last lines %r, stderr:\n%s" % (
        rc, lines[-5:], r2.stderr_text())
    no_fail(lines)
    assert lines[-1] == ref[-1], lines[-5:]
    assert_resumed(before, numbers(lines, ROUND), ROUND, ROUNDS, seen)
    assert "could not be put back" not in r2.stderr_text()


@pytest.mark.time_limit(400)
def test_multicast_membership_is_joined_again(session):
    """A socket of the computation joined a multicast group on loopback
    (IP_MULTICAST_ALL off: only members receive); after the restart it
    still receives what is sent to the group, tick after tick."""
    s = session
    ticks = 80
    p = s.launch([app("udp_multicast"), str(ticks), "100"])
    p.wait_line(r"^group ")
    images, seen, before = checkpoint_and_kill(s, p, TICK, 5)
    shown = s.inspect(images[0])
    assert re.search(r"bound-socket .*, 1 multicast groups\)", shown), shown
    assert re.search(r"IP_MULTICAST_ALL 0", shown), shown
    r, first = restart_to_end(s, images, TICK, ticks, seen, before)
    assert r.lines()[-1] == "OK udp_multicast %d" % ticks, r.lines()[-5:]
    assert "multicast" not in r.stderr_text(), r.stderr_text()
