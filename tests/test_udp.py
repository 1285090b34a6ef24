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
import socket
import struct

import pytest

from ckpt_harness import (BackgroundReference, app, assert_resumed,
                          checkpoint_and_kill, copy_image, numbers,
                          restart_to_end)
from ckpt_image import FD_FMT, Image, ckpt_hash64

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
    # beside the test: it mostly sleeps, on ports of its own (ephemeral)
    native = BackgroundReference(ARGV)
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
    ref = native.lines()
    assert ref[-1] == "OK udp_pingpong %d" % ROUNDS, ref[-5:]
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


def corrupt_datagram_count(path):
    """Claim more datagrams than a UDP record holds (hashes kept right)."""
    img = Image(path)
    for i, e in enumerate(img.table(FD_FMT, "fds_offset", "nfds")):
        off, size = e[7], e[8]
        if e[1] != 21 or size < 368:
            continue
        rec = img.data[off:off + size]
        if not struct.unpack_from("<I", rec, 12)[0] & 0x20:
            continue
        struct.pack_into("<I", rec, 296, 1000000)
        img.data[off:off + size] = rec
        h = 0
        for c in range(0, size, 1 << 20):
            h = ckpt_hash64(bytes(rec[c:c + (1 << 20)]), h)
        e[9] = h
        img.set_entry(FD_FMT, "fds_offset", i, e)
        img.rehash()
        img.write(path)
        return e[0]
    return None


@pytest.mark.time_limit(400)
def test_udp_bad_cases_are_clear_errors(session):
    """A UDP port taken at restart, and a record claiming more datagrams
    than it holds, each fail the restart with a message naming it, with
    nothing restarted; the intact images restart afterwards."""
    s = session
    p = s.launch(ARGV)
    ports = p.wait_line(r"^ports (\d+) (\d+) (\d+) (\d+)$")
    p.wait_line(ROUND, minimum=10)
    images = s.checkpoint(expect_images=2)
    s.kill_all()
    p.popen.wait(30)
    c4 = int(ports.group(2))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as taker:
        taker.bind(("127.0.0.1", c4))
        r = s.restart(images)
        rc = r.wait_exit()
        err = r.stderr_text()
        assert rc != 0, err
        assert re.search(r"udp_pingpong \(vpid \d+\), fd \d+: cannot bind to "
                         r"127\.0\.0\.1:%d again: Address already in use"
                         % c4, err), err
        assert r.lines() == [], r.lines()

    saved = [copy_image(i, s.path("good")) for i in images]
    assert any(corrupt_datagram_count(i) is not None for i in images)
    r = s.restart(images)
    rc = r.wait_exit()
    err = r.stderr_text()
    assert rc != 0, err
    assert re.search(r"fd \d+: datagram \d+ of 1000000 saved with the UDP "
                     r"socket is cut short", err), err
    assert r.lines() == [], r.lines()

    r = s.restart(saved)
    assert r.wait_exit() == 0, r.stderr_text()
    assert r.lines()[-1] == "OK udp_pingpong %d" % ROUNDS, r.lines()[-5:]
