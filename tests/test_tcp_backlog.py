# SPDX-License-Identifier: LGPL-2.1-or-later
"""TCP connections waiting in a listener's backlog (connected, not yet
accept()ed) at the checkpoint, their clients in the same computation.

tests/apps/tcp_backlog.c: a server listens on loopback (a port the
kernel chooses) and forks three clients; each closes the listener at
once (the server alone holds it), connects, sends a request (300 B,
200 KiB, 700 B), says "client i sent" and waits for its reply. The
server accepts nothing until the test creates WORKDIR/go, so the
checkpoint finds the three connections in the backlog with their bytes
queued. Then it accepts them (a blocking accept, poll, level- or
edge-triggered epoll), checks each request byte by byte and the peer's
address (loopback; while the computation goes on, the port the client
connected from; a restart gives connections new loopback ports, so
there the client checks that the port the server saw is its own end's),
replies, reads "BYE i" and end of file; nothing more waits on the
listener. Checkpointing must leave that intact (the computation going
on), and a restart from the images must bring the unaccepted
connections back with their bytes: the server accepts each after the
restart and every client gets its reply once (before, they were lost:
the client read end of file, the server's accept timed out). Not
covered (not expected to work): a listener several processes hold, a
client outside the computation, accept through io_uring."""

import re

import pytest

import ckpt_harness
from ckpt_harness import app, check_image

NCLIENTS = 3
SIZES = (300, 200 * 1024, 700)
READY = re.compile(r"^client (\d) (sent \d+ bytes|queued \d+ of \d+ bytes)$")


def expected_after_go(mode, peer, same_port):
    """Every line the computation prints once the go file exists; "done"
    comes last, the rest in any order (the accept order is the kernel's,
    the clients print as they get their replies)."""
    lines = ["server accepting (%s)" % mode,
             "server accepted %d connections, none left" % NCLIENTS,
             "server ok: %d connections, %d request bytes" % (
                 NCLIENTS, sum(SIZES))]
    for i in range(NCLIENTS):
        lines += ["server got client %d: %d bytes intact from %s%s" % (
                      i, SIZES[i], peer, ", port matches" if same_port
                      else ""),
                  "server got bye from client %d" % i,
                  "client %d got reply ok" % i]
    return sorted(lines + ["done"])


def before_go(lines):
    return [l for l in lines if READY.match(l) or l.startswith("listening ")]


def after_go(lines):
    return [l for l in lines if not (READY.match(l) or
                                     l.startswith("listening "))]


def start(s, mode, family, ports):
    """Launch the server and its clients; return once every client has
    sent its request (the server waits for the go file: the three
    connections sit in the backlog). ports: "same-port" (the server's
    peer is at the port the client connected from) or "any-port" (a
    restart gives connections new loopback ports: docs/resources.md; the
    client still checks that the server's peer is its own end)."""
    p = s.launch([app("tcp_backlog"), mode, family, s.path("go"), ports],
                 name="tcp_backlog %s %s" % (mode, family))
    try:
        p.wait_line(r"^listening \d+$", timeout=60)
    except AssertionError:
        if p.wait_exit(30) == 3:    # no such loopback address here
            pytest.skip(p.stderr_text())
        raise
    p.out.wait_for(
        lambda lines: len({READY.match(l).group(1) for l in lines
                           if READY.match(l)}) == NCLIENTS or
        any(l.startswith("FAIL") for l in lines),
        60, "the %d clients' requests sent" % NCLIENTS)
    assert not after_go(p.lines()), (
        "before the checkpoint: %r; stderr:\n%s" % (p.lines(),
                                                    p.stderr_text()))
    s.wait_members(1 + NCLIENTS)
    return p


def checkpoint(s):
    """One checkpoint of the server and its clients: it must succeed,
    write the four images and warn about nothing."""
    r = s.command("--checkpoint")
    assert r.returncode == 0, (
        "ckpt_command --checkpoint: exit %d; stderr:\n%s" % (
            r.returncode, r.stderr))
    images = [l.strip() for l in r.stdout.splitlines() if l.strip()]
    assert len(images) == 1 + NCLIENTS, (
        "the checkpoint printed %r, expected %d images" % (
            r.stdout, 1 + NCLIENTS))
    for img in images:
        check_image(img, s.ckptdir)
    assert "warning" not in r.stderr, (
        "the checkpoint says something is not restored:\n%s" % r.stderr)
    return images


def go(s):
    with open(s.path("go"), "w"):
        pass


def finish(proc, lines_after_go, mode, peer, same_port, timeout=60):
    """proc ends with status 0; lines_after_go(proc's lines) must be
    exactly the expected lines, "done" last."""
    rc = proc.wait_exit(timeout)
    lines = proc.lines()
    after = lines_after_go(lines)
    want = expected_after_go(mode, peer, same_port)
    fails = [l for l in lines if l.startswith("FAIL")]
    assert sorted(after) == want and after[-1:] == ["done"] and rc == 0, (
        "%s: exit %s\n%safter the go file it printed:\n  %s\n"
        "expected (in any order, done last):\n  %s\nstderr:\n%s" % (
            proc.name, rc,
            "failures:\n  %s\n" % "\n  ".join(fails) if fails else "",
            "\n  ".join(after), "\n  ".join(want), proc.stderr_text()))


def continue_case(s, mode, family="v4", peer="127.0.0.1", checkpoints=1):
    p = start(s, mode, family, "same-port")
    for _ in range(checkpoints):
        checkpoint(s)
        assert p.alive(), "%s ended during the checkpoint: %r\n%s" % (
            p.name, p.lines(), p.stderr_text())
    go(s)
    finish(p, after_go, mode, peer, True)
    lines = p.lines()
    assert lines[0].startswith("listening "), lines
    assert sorted(READY.match(l).group(1) for l in before_go(lines)[1:]) \
        == [str(i) for i in range(NCLIENTS)], lines


def restart_case(s, mode, family="v4", peer="127.0.0.1", checkpoints=1):
    p = start(s, mode, family, "any-port")
    for _ in range(checkpoints):
        images = checkpoint(s)
        assert p.alive(), "%s ended during the checkpoint: %r\n%s" % (
            p.name, p.lines(), p.stderr_text())
    s.kill_all()
    p.wait_exit(30)
    assert not after_go(p.lines()), (
        "the server went on before the go file: %r" % p.lines())
    r = s.restart(images)
    go(s)
    # the restarted computation prints nothing but what follows the go
    finish(r, lambda lines: lines, mode, peer, False)
    err = r.stderr_text()
    assert "warning" not in err and "not restarted with it" not in err, (
        "the restart says a connection is not restored:\n%s" % err)


# (a) checkpoint, the computation goes on
@pytest.mark.time_limit(120)
@pytest.mark.parametrize("mode", ["blocking", "epoll-lt", "epoll-et", "poll"])
def test_backlog_kept_by_checkpoint(session, mode):
    continue_case(session, mode)


@pytest.mark.time_limit(120)
def test_backlog_kept_by_two_checkpoints(session):
    """The second checkpoint finds the queue as the first left it."""
    continue_case(session, "epoll-et", checkpoints=2)


# (b) checkpoint, kill, restart
@pytest.mark.time_limit(120)
@pytest.mark.parametrize("mode", ["blocking", "epoll-et"])
def test_backlog_restored_at_restart(session, mode):
    restart_case(session, mode)


# (c) two checkpoints while the connections wait, restart from the second
@pytest.mark.time_limit(150)
def test_backlog_restored_after_two_checkpoints(session):
    restart_case(session, "poll", checkpoints=2)


@pytest.mark.time_limit(120)
def test_backlog_restored_ipv6_loopback(session):
    restart_case(session, "epoll-lt", family="v6", peer="::1")


@pytest.mark.time_limit(120)
def test_backlog_restored_dual_stack_ipv4_clients(session):
    """A listener on [::] (IPV6_V6ONLY off) with IPv4 clients: the
    accepted socket is IPv6 with the v4-mapped address of its peer."""
    restart_case(session, "blocking", family="dual",
                 peer="::ffff:127.0.0.1")


# A listener several processes hold: a prefork server (the parent listens
# and never accepts, two workers accept), its three clients in the
# backlog at the checkpoint. Whichever holder claims the queue takes the
# connections (libckpt-preload/accept_queue.c); a worker that accepts a
# stand-in takes the connection from that holder's mailbox (pidfd_getfd
# when it is another process).
PREFORK = r"""
import os, socket, sys, time
go, nworkers = sys.argv[1], 2
ls = socket.socket()
ls.bind(("127.0.0.1", 0))
ls.listen(16)
port = ls.getsockname()[1]

def say(line):                                # one write: lines of
    os.write(1, (line + "\n").encode())     # 6 processes interleave

def wait_go():
    for _ in range(2400):                    # 120 s at most
        if os.path.exists(go):
            return
        time.sleep(0.05)
    say("FAIL no go file")
    os._exit(1)

def worker(w):
    wait_go()
    ls.settimeout(10)
    for _ in range(10):
        try:
            s, peer = ls.accept()
        except socket.timeout:
            os._exit(0)                      # the other worker took them
        req = b""
        while not req.endswith(b"\n"):
            chunk = s.recv(4096)
            if not chunk:
                say("FAIL worker %d: end of file after %r" % (w, req))
                os._exit(1)
            req += chunk
        if peer != s.getpeername() or peer[0] != "127.0.0.1":
            say("FAIL worker %d: peer %r, getpeername %r" %
                (w, peer, s.getpeername()))
        s.sendall(b"reply to " + req)
        s.close()

def client(i):
    ls.close()
    c = socket.create_connection(("127.0.0.1", port), timeout=60)
    c.sendall(b"request %d %s\n" % (i, b"x" * (1000 * i)))
    say("client %d sent" % i)
    got = b""
    while True:
        chunk = c.recv(65536)
        if not chunk:
            break
        got += chunk
    ok = got == b"reply to request %d %s\n" % (i, b"x" * (1000 * i))
    say("client %d %s" % (i, "got its reply" if ok else
                          "FAIL got %r" % got[:80]))
    os._exit(0 if ok else 1)

kids = []
for w in range(nworkers):
    pid = os.fork()
    if pid == 0:
        worker(w)
        os._exit(0)
    kids.append(pid)
for i in range(3):
    pid = os.fork()
    if pid == 0:
        client(i)
    kids.append(pid)
bad = 0
for pid in kids:
    bad |= os.waitpid(pid, 0)[1]
say("done" if not bad else "FAIL a process failed")
"""


def yama_restricts_ptrace():
    """Yama's ptrace_scope above 0: a worker may not take a connection
    from its master's mailbox (pidfd_getfd needs ptrace access; a
    documented limit), so going on after a checkpoint is not expected to
    work for a prefork server."""
    try:
        with open("/proc/sys/kernel/yama/ptrace_scope") as f:
            return int(f.read()) > 0
    except OSError:
        return False


def prefork_case(s, restart):
    if not restart and yama_restricts_ptrace():
        pytest.skip("Yama ptrace_scope > 0: pidfd_getfd between siblings "
                    "is refused (docs/resources.md)")
    p = s.launch(["/usr/bin/python3", "-c", PREFORK, s.path("go")],
                 name="prefork server")
    p.out.wait_for(lambda lines: len([l for l in lines
                                      if l.endswith(" sent")]) == 3, 60,
                   "the 3 clients' requests sent")
    s.wait_members(6)
    r = s.command("--checkpoint")
    assert r.returncode == 0, r.stderr
    assert "warning" not in r.stderr, r.stderr
    if restart:
        s.kill_all()
        p.wait_exit(30)
        p = s.restart(r.stdout.split())
    go(s)
    assert p.wait_exit(60) == 0, (p.lines(), p.stderr_text())
    got = [l for l in p.lines() if not l.endswith(" sent")]
    assert sorted(got) == ["client %d got its reply" % i for i in range(3)] \
        + ["done"], (got, p.stderr_text())


@pytest.mark.time_limit(120)
def test_backlog_of_prefork_listener_kept_by_checkpoint(session):
    prefork_case(session, restart=False)


@pytest.mark.time_limit(120)
def test_backlog_of_prefork_listener_restored_at_restart(session):
    prefork_case(session, restart=True)


@pytest.mark.time_limit(120)
def test_backlog_of_prefork_listener_unprivileged():
    """As nobody: a worker takes the connection from another process's
    mailbox with pidfd_getfd, which needs no privilege over a process of
    its own user."""
    s, _ = ckpt_harness.unprivileged_session()
    try:
        prefork_case(s, restart=False)
    finally:
        s.close()
