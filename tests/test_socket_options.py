# SPDX-License-Identifier: LGPL-2.1-or-later
"""Socket options come back after a restart: a TCP connection inside the
computation (both ends), a TCP listener, UDP over IPv4 and IPv6 and a
Unix socket pair with unusual TCP_NODELAY, keepalive times, SO_LINGER,
timeouts, buffer sizes, SO_BROADCAST, multicast TTL/loop, O_NONBLOCK and
FD_CLOEXEC read the same with getsockopt/fcntl after each of two
checkpoint/kill/restart cycles (the program compares them every tick).
Images of the first, shorter socket record layout still restart."""

import re
import struct

import pytest

from ckpt_harness import app, checkpoint_and_kill, numbers, assert_resumed
from ckpt_image import FD_FMT, Image, ckpt_hash64

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


CHUNK = 1 << 20
INFO_V1 = 296          # struct ckpt_socket_info before it grew
F_QUEUE_SAVED, F_QUEUE, F_DGRAMS = 0x8, 0x10, 0x20


def data_hash(data):
    h = 0
    for i in range(0, len(data), CHUNK):
        h = ckpt_hash64(bytes(data[i:i + CHUNK]), h)
    return h


def as_first_layout(path):
    """Rewrite every socket record of an image as an image written before
    ckpt_socket_info grew: 296 bytes, info_size 0, QUEUE_SAVED; the queue
    moved up behind it. Returns how many records were rewritten."""
    img = Image(path)
    n = 0
    for i, e in enumerate(img.table(FD_FMT, "fds_offset", "nfds")):
        kind, off, size = e[1], e[7], e[8]
        if kind not in (20, 21, 22) or size < INFO_V1:
            continue
        rec = img.data[off:off + size]
        flags, info_size = struct.unpack_from("<I", rec, 12)[0], \
            struct.unpack_from("<I", rec, 36)[0]
        assert info_size == 372, info_size
        tail = rec[info_size:] if flags & F_QUEUE else b""
        flags = (flags & ~(F_QUEUE | F_DGRAMS)) | (
            F_QUEUE_SAVED if flags & F_QUEUE else 0)
        new = bytearray(rec[:INFO_V1]) + tail
        struct.pack_into("<I", new, 12, flags)
        struct.pack_into("<I", new, 36, 0)
        img.data[off:off + len(new)] = new
        e[8], e[9] = len(new), data_hash(new)
        img.set_entry(FD_FMT, "fds_offset", i, e)
        n += 1
    img.rehash()
    img.write(path)
    return n


@pytest.mark.time_limit(400)
def test_images_of_the_first_socket_layout_restart(session):
    """Images written before ckpt_socket_info grew (296 bytes, info_size
    0, the TCP queue behind it with QUEUE_SAVED) still restart: a TCP
    client of the computation with requests in flight gets every reply
    once, in order."""
    s = session
    total = 20000
    p = s.launch([app("tcp_server"), "0", s.path("srv.sock"), str(total),
                  "0"])
    p.wait_line(r"^reply (\d+)$", minimum=1000)
    seen = max(numbers(p.lines(), r"^reply (\d+)$"))
    images = s.checkpoint(expect_images=2)
    s.kill_all()
    p.popen.wait(30)
    before = numbers(p.lines(), r"^reply (\d+)$")
    assert sum(as_first_layout(i) for i in images) >= 7
    shown = "".join(s.inspect(i) for i in images)
    assert "outside-socket" in shown and "SO_LINGER" not in shown, shown
    assert re.search(r"outside-socket .*, \d+ bytes queued saved\)",
                     shown), shown

    r = s.restart(images)
    assert r.wait_exit() == 0, r.stderr_text()
    lines = r.lines()
    assert not [l for l in lines if l.startswith("FAIL")], lines
    assert "OK client %d" % total in lines, lines[-5:]
    after = numbers(lines, r"^reply (\d+)$")
    assert seen < after[0] <= before[-1] + 1, (seen, after[:3], before[-3:])
    assert after == list(range(after[0], total + 1)), after[:10]
    assert "reads as closed" not in r.stderr_text(), r.stderr_text()
