# SPDX-License-Identifier: LGPL-2.1-or-later
"""Listening sockets come back at their address: a line server listening
on 127.0.0.1, [::1] and a Unix path answers new clients after a restart
with its counter continued exactly; a client connected at the checkpoint
is seen by the restarted server as closed by its peer (read returns 0),
and the restart names that connection; an address taken at restart is a
clear error naming it and the process, with nothing restarted."""

import os
import re
import socket
import time

import pytest

from ckpt_harness import app, checkpoint_and_kill, numbers

LISTENING = r"^listening tcp (\d+) tcp6 (\d+) unix (\S+) udp (\d+)$"


def ask(family, addr, lines, timeout=60):
    """Send lines on a new connection; the replies as integers. A refused
    connection is tried again (a restart is on its way) until timeout."""
    end = time.monotonic() + timeout
    while True:
        with socket.socket(family, socket.SOCK_STREAM) as c:
            c.settimeout(timeout)
            try:
                c.connect(addr)
            except (ConnectionRefusedError, FileNotFoundError):
                assert time.monotonic() < end, "%r refused" % (addr,)
                time.sleep(0.1)
                continue
            return talk(c, lines)


def talk(c, lines):
    f = c.makefile("r")
    out = []
    for line in lines:
        c.sendall(line.encode() + b"\n")
        out.append(int(f.readline()))
    return out


def quit_server(r, port):
    with socket.create_connection(("127.0.0.1", port), timeout=60) as c:
        c.sendall(b"quit\n")
        assert r.wait_exit() == 0, r.stderr_text()


def start_server(s):
    path = s.path("srv.sock")
    p = s.launch([app("tcp_server"), "0", path])
    m = p.wait_line(LISTENING)
    s.udp_port = int(m.group(4))
    return p, int(m.group(1)), int(m.group(2)), path


def addresses(port, port6, path):
    return [(socket.AF_INET, ("127.0.0.1", port)),
            (socket.AF_INET6, ("::1", port6)),
            (socket.AF_UNIX, path),
            (socket.AF_UNIX, "\0" + path)]


def ask_udp(port, timeout=60):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
        u.settimeout(timeout)
        u.sendto(b"x", ("127.0.0.1", port))
        return int(u.recv(64))


@pytest.mark.time_limit(300)
def test_listeners_come_back_and_the_counter_goes_on(session):
    s = session
    p, port, port6, path = start_server(s)
    where = addresses(port, port6, path)
    assert ask(*where[0], ["a", "b"]) == [1, 2]
    assert ask(*where[1], ["c"]) == [3]
    assert ask(*where[2], ["d"]) == [4]
    assert ask(*where[3], ["d2"]) == [5]
    assert ask_udp(s.udp_port) == 6
    # clients still connected at the checkpoint, over TCP and Unix
    held = socket.create_connection(("127.0.0.1", port), timeout=60)
    assert talk(held, ["e"]) == [7]
    held_unix = socket.socket(socket.AF_UNIX)
    held_unix.settimeout(60)
    held_unix.connect(path)
    assert talk(held_unix, ["e2"]) == [8]
    p.wait_line(r"^served (\d+)$", minimum=8)
    images = s.checkpoint()
    shown = s.inspect(images[0])
    assert re.search(r"listen-socket .* \(127\.0\.0\.1:%d, backlog 16, "
                     r"SO_REUSEADDR\)" % port, shown), shown
    assert re.search(r"listen-socket .* \(\[::1\]:%d, backlog 16, "
                     r"SO_REUSEADDR, IPV6_V6ONLY\)" % port6, shown), shown
    assert re.search(r"listen-socket .* \(%s, backlog 16\)" % re.escape(
        path), shown), shown
    assert re.search(r"listen-socket .* \(@%s, backlog 16\)" % re.escape(
        path), shown), shown
    assert re.search(r"bound-socket .* \(127\.0\.0\.1:%d\)" % s.udp_port,
                     shown), shown
    assert re.search(r"outside-socket .* \(127\.0\.0\.1:%d to "
                     r"127\.0\.0\.1:%d[,)]" % (port, held.getsockname()[1]),
                     shown), shown
    s.kill_all()
    p.popen.wait(30)
    held.close()
    held_unix.close()
    # the socket file is left behind by the killed server
    assert os.path.exists(path)

    r = s.restart(images)
    # the held client's connection reads as closed by its peer
    r.wait_line(r"^closed fd \d+ ")
    assert ask(*where[0], ["f"]) == [9]
    assert ask(*where[1], ["g", "h"]) == [10, 11]
    assert ask(*where[2], ["i"]) == [12]
    assert ask(*where[3], ["j"]) == [13]
    assert ask_udp(s.udp_port) == 14
    with socket.create_connection(("127.0.0.1", port), timeout=60) as c:
        c.sendall(b"quit\n")
        assert r.wait_exit() == 0, r.stderr_text()
    lines = r.lines()
    assert lines[-1] == "OK tcp_server 14", lines[-5:]
    # the two held connections first, each read as closed by the peer
    # (read returns 0) and failing a write with EPIPE
    assert sorted(lines[:2]) == ["closed fd 8 write Broken pipe",
                                 "closed fd 9 write Broken pipe"], lines
    assert not [l for l in lines if l.startswith("error")], lines
    err = r.stderr_text()
    assert re.search(r"tcp_server: fd \d+ \(socket:\[\d+\], 127\.0\.0\.1:%d "
                     r"to 127\.0\.0\.1:\d+\): its peer is not restarted "
                     r"with it; the connection reads as closed by the peer"
                     % port, err), err
    assert re.search(r"tcp_server: fd \d+ \(socket:\[\d+\], %s to an "
                     r"unnamed address\): its peer is not restarted with "
                     r"it" % re.escape(path), err), err
    assert "/dev/null" not in err, err


@pytest.mark.time_limit(300)
def test_port_taken_at_restart_is_a_clear_error(session):
    s = session
    p, port, port6, path = start_server(s)
    assert ask(socket.AF_INET, ("127.0.0.1", port), ["a"]) == [1]
    images = s.checkpoint()
    s.kill_all()
    p.popen.wait(30)
    with socket.socket() as taker:
        taker.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        taker.bind(("127.0.0.1", port))
        taker.listen(1)
        r = s.restart(images)
        rc = r.wait_exit()
        err = r.stderr_text()
        assert rc != 0, err
        assert re.search(r"tcp_server \(vpid %d\), fd \d+: cannot listen on "
                         r"127\.0\.0\.1:%d again: Address already in use"
                         % (p.pid, port), err), err
        assert r.lines() == [], r.lines()
    # with the port free again, the same images restart
    r = s.restart(images)
    assert ask(socket.AF_INET, ("127.0.0.1", port), ["b"]) == [2]
    quit_server(r, port)


@pytest.mark.time_limit(300)
def test_unix_path_held_by_a_file_or_a_listener_is_an_error(session):
    s = session
    p, port, port6, path = start_server(s)
    images = s.checkpoint()
    s.kill_all()
    p.popen.wait(30)
    os.unlink(path)
    with open(path, "w") as f:
        f.write("not a socket\n")
    r = s.restart(images)
    assert r.wait_exit() != 0
    assert re.search(r"cannot bind to %s again: it exists and is not a socket"
                     % re.escape(path), r.stderr_text()), r.stderr_text()
    os.unlink(path)
    with socket.socket(socket.AF_UNIX) as other:
        other.bind(path)
        other.listen(1)
        r = s.restart(images)
        assert r.wait_exit() != 0
        assert re.search(r"cannot bind to %s again: a program is listening on "
                         r"it" % re.escape(path), r.stderr_text()), (
                             r.stderr_text())
    assert os.path.exists(path)


@pytest.mark.time_limit(300)
def test_tcp_connection_inside_the_computation_reconnects(session):
    """A client process of the computation keeps 4 requests in flight to
    its server over TCP, as fast as they go (bytes are queued and in
    flight both ways at the checkpoint): after the restart every reply
    arrives once, in order, the counter continues exactly."""
    s = session
    total = 30000
    p = s.launch([app("tcp_server"), "0", s.path("srv.sock"), str(total),
                  "0"])
    p.wait_line(LISTENING)
    p.wait_line(r"^reply (\d+)$", minimum=2000)
    seen = max(numbers(p.lines(), r"^reply (\d+)$"))
    images = s.checkpoint(expect_images=2)
    p.wait_line(r"^reply (\d+)$", minimum=seen + 100)
    s.kill_all()
    p.popen.wait(30)
    before = numbers(p.lines(), r"^reply (\d+)$")
    assert not [l for l in p.lines() if l.startswith("FAIL")], p.lines()
    shown = "".join(s.inspect(i) for i in images)
    assert len(re.findall(r"outside-socket .*127\.0\.0\.1:\d+ to "
                          r"127\.0\.0\.1:\d+", shown)) >= 2, shown

    r = s.restart(images)
    assert r.wait_exit() == 0, r.stderr_text()
    lines = r.lines()
    assert not [l for l in lines if l.startswith("FAIL")], lines
    assert "OK client %d" % total in lines, lines[-5:]
    assert "OK tcp_server %d" % total in lines, lines[-5:]
    after = numbers(lines, r"^reply (\d+)$")
    assert seen < after[0] <= before[-1] + 1, (seen, after[:3], before[-3:])
    assert after == list(range(after[0], total + 1)), after[:10]
    assert "reads as closed" not in r.stderr_text(), r.stderr_text()


MODE_SERVER = r"""
import os, socket, sys, time
path, steps = sys.argv[1], int(sys.argv[2])
os.umask(0o022)
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
s.listen(4)
os.chmod(path, 0o600)   # screen: a detached session; the umask gave 0755
for k in range(1, steps + 1):
    print("count %d mode %o" % (k, os.stat(path).st_mode & 0o7777),
          flush=True)
    if k == steps // 2:
        os.chmod(path, 0o700)   # attached, as screen says it
    time.sleep(0.02)
print("done", flush=True)
"""


@pytest.mark.time_limit(300)
def test_unix_socket_file_keeps_its_mode(session):
    """A program that changed the mode of its listening socket's file
    after the bind (screen keeps a session's state in it, and `screen
    -ls` shows a file of another mode as "Unknown") finds the mode it
    set at the checkpoint after the restart, not the one the umask
    gives a new bind; and can still change it."""
    s = session
    steps = 400
    p = s.launch(["/usr/bin/python3", "-c", MODE_SERVER, s.path("m.sock"),
                  str(steps)])
    images, _, _ = checkpoint_and_kill(s, p, r"^count (\d+) ", 10)
    r = s.restart(images)
    assert r.wait_exit() == 0, r.stderr_text()
    modes = {}
    for line in r.lines():
        m = re.match(r"^count (\d+) mode (\d+)$", line)
        if m:
            modes[int(m.group(1))] = m.group(2)
    assert modes, r.lines()[-5:]
    first = min(modes)
    assert modes[first] == "600", (
        "after the restart the socket file's mode is %s, not 600" %
        modes[first])
    assert modes[steps] == "700", modes[steps]


NOT_YET = r"""
import os, socket, sys, time
steps, path = int(sys.argv[1]), sys.argv[2]
client = socket.socket()                      # made, connected later
client.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
server = socket.socket()                      # bound, listening later
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", 0))
port = server.getsockname()[1]
unix = socket.socket(socket.AF_UNIX)          # made, connected later
userver = socket.socket(socket.AF_UNIX)       # bound, listening later
userver.bind(path)
for k in range(1, steps + 1):
    print("count %d" % k, flush=True)
    time.sleep(0.02)
server.listen(4)
client.connect(("127.0.0.1", port))
peer, _ = server.accept()
client.sendall(b"tcp")
assert peer.recv(16) == b"tcp"
assert client.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
assert server.getsockname()[1] == port
userver.listen(4)
unix.connect(path)
upeer, _ = userver.accept()
unix.sendall(b"unix")
assert upeer.recv(16) == b"unix"
print("done", flush=True)
"""


@pytest.mark.time_limit(300)
def test_sockets_made_but_not_yet_connected_or_listening(session):
    """A socket made and not yet connected (a client between socket()
    and connect()) or bound and not yet listening (a server between bind
    and listen), TCP or Unix, comes back as a new socket, bound to its
    address again, with its options: the program connects and listens
    after the restart. Before, each was /dev/null ("not restored yet",
    and connect() failed with ENOTSOCK; mosquitto keeps such a socket)."""
    s = session
    p = s.launch(["/usr/bin/python3", "-c", NOT_YET, "200",
                  s.path("later.sock")])
    images, _, _ = checkpoint_and_kill(s, p, r"^count (\d+)", 10)
    r = s.restart(images)
    assert r.wait_exit() == 0, r.stderr_text()
    assert r.lines()[-1] == "done", r.lines()[-3:]
    assert "/dev/null" not in r.stderr_text(), r.stderr_text()
