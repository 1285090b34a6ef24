# SPDX-License-Identifier: LGPL-2.1-or-later
"""Unix stream connections waiting in a listener's accept queue at the
checkpoint, their clients in the same computation (issue 9: a listening
Unix socket comes back with its backlog).

A python3 server listens on a path or an abstract name and forks three
clients; each closes the listener, connects, sends a request (the second
one 100 KiB) and waits for its reply. The server accepts nothing until
the test creates the go file, so the checkpoint finds the three
connections queued with their bytes. Then it accepts them (a blocking
accept, or an edge-triggered epoll on a nonblocking listener), checks
each request and replies. After one or two checkpoints the computation
goes on; after a kill, the restart queues the connections again
(libckpt-preload/accept_queue.c, restart/restart_sockets.c): each
client gets its reply once. Going on, accept gives the name each client
bound (after a restart the clients' new sockets are unnamed: a limit).
Before, the client read end of file and the server's accept waited in
vain."""

import pytest

PROGRAM = r"""
import os, select, socket, sys, time
mode, where, go = sys.argv[1], sys.argv[2], sys.argv[3]
check_names = sys.argv[4] == "names"
addr = "\0" + where if mode.endswith("abstract") else where
ls = socket.socket(socket.AF_UNIX)
ls.bind(addr)
ls.listen(8)

def say(line):                      # one write: 4 processes share stdout
    os.write(1, (line + "\n").encode())

def request(i):
    return b"request %d %s\n" % (i, b"y" * (100 * 1024 if i == 1 else 10))

def client_addr(i):                 # each client binds a name of its own
    return addr + ".c%d" % i

def client(i):
    ls.close()
    c = socket.socket(socket.AF_UNIX)
    c.bind(client_addr(i))
    c.settimeout(60)
    c.connect(addr)
    c.sendall(request(i))
    say("client %d sent" % i)
    got = b""
    while True:
        chunk = c.recv(65536)
        if not chunk:
            break
        got += chunk
    ok = got == b"reply %d\n" % len(request(i))
    say("client %d %s" % (i, "got its reply" if ok else "FAIL %r" % got))
    os._exit(0 if ok else 1)

def accept_all():
    if not mode.startswith("epoll"):
        ls.settimeout(10)
        return [ls.accept() for _ in range(3)]
    ls.setblocking(False)
    ep = select.epoll()
    ep.register(ls.fileno(), select.EPOLLIN | select.EPOLLET)
    conns, deadline = [], time.monotonic() + 10
    while len(conns) < 3 and time.monotonic() < deadline:
        if not ep.poll(1):
            continue
        while True:                 # edge triggered: accept until EAGAIN
            try:
                conns.append(ls.accept())
            except BlockingIOError:
                break
    return conns

kids = []
for i in range(3):
    pid = os.fork()
    if pid == 0:
        client(i)
    kids.append(pid)
for _ in range(2400):               # 120 s at most
    if os.path.exists(go):
        break
    time.sleep(0.05)
conns = accept_all()
if len(conns) != 3:
    say("FAIL server: %d of 3 connections accepted" % len(conns))
for s, peer in conns:
    s.setblocking(True)
    s.settimeout(10)
    req = b""
    while not req.endswith(b"\n"):
        chunk = s.recv(65536)
        if not chunk:
            break
        req += chunk
    i = int(req.split()[1]) if req.startswith(b"request ") else -1
    if i < 0 or req != request(i):
        say("FAIL server: request %r..." % req[:40])
    elif check_names and peer != client_addr(i) and not (
            mode.endswith("abstract") and peer == client_addr(i).encode()):
        say("FAIL server: accept gave client %d's address as %r" % (i, peer))
    s.sendall(b"reply %d\n" % len(req))
    s.close()
bad = 0
for pid in kids:
    bad |= os.waitpid(pid, 0)[1]
say("done" if not bad and len(conns) == 3 else "FAIL a client failed")
"""


def run(s, mode, restart, checkpoints=1):
    where = s.path("srv.sock") if mode.endswith("path") else \
        "ckpt-test-backlog-%d" % id(s)
    p = s.launch(["/usr/bin/python3", "-c", PROGRAM, mode, where,
                  s.path("go"), "any" if restart else "names"],
                 name="unix backlog " + mode)
    p.out.wait_for(lambda lines: len([l for l in lines
                                      if l.endswith(" sent")]) == 3, 60,
                   "the 3 clients' requests sent")
    s.wait_members(4)
    for _ in range(checkpoints):
        r = s.command("--checkpoint")
        assert r.returncode == 0, r.stderr
        assert "warning" not in r.stderr, r.stderr
    if restart:
        s.kill_all()
        p.wait_exit(30)
        p = s.restart(r.stdout.split())
    open(s.path("go"), "w").close()
    assert p.wait_exit(60) == 0, (p.lines(), p.stderr_text())
    got = sorted(l for l in p.lines() if not l.endswith(" sent"))
    assert got == ["client %d got its reply" % i for i in range(3)] + \
        ["done"], (got, p.stderr_text())
    if restart:
        assert "warning" not in p.stderr_text(), p.stderr_text()


@pytest.mark.time_limit(120)
@pytest.mark.parametrize("mode", ["blocking-path", "epoll-abstract"])
def test_unix_backlog_kept_by_two_checkpoints(session, mode):
    run(session, mode, restart=False, checkpoints=2)


@pytest.mark.time_limit(120)
@pytest.mark.parametrize("mode", ["blocking-path", "epoll-abstract"])
def test_unix_backlog_restored_at_restart(session, mode):
    run(session, mode, restart=True)
