# SPDX-License-Identifier: LGPL-2.1-or-later
"""Meetings between hosts at restart (docs/security.md, "Meetings between
hosts at restart"): the ckpt_restarts of two hosts meet over TCP to
reconnect a connection between them and to hand over datagrams. Another
user's program (tests/security/meet_impostor.py, which does not know the
per-user secret) that listens where a ckpt_restart will connect, or
connects where one listens, gets nothing of the computation and hands
nothing in; the real meeting still happens when it can.

Each test failed before the meetings were authenticated: the connector
sent its saved bytes to whatever listened, the listener took the first
connection as its partner, and the datagram meeting took any connection
from a --peer-hosts address that said the computation id."""

import os
import re
import sys
import time

import pytest

from ckpt_harness import app, assert_resumed, run, tool
from netns_hosts import hosts_fixture
from test_multi_host import (checkpoint_and_kill_hosts, conversation,
                             file_numbers, last_line)

IMPOSTOR = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "meet_impostor.py")


@pytest.fixture
def hosts():
    yield from hosts_fixture(2)


def inspect(image):
    r = run([tool("ckpt_inspect"), image], 60)
    assert r.returncode == 0, r.stderr
    return r.stdout


def caller_port(h, server_image):
    """The caller's port of the saved connection (server a:7000 to caller
    b:PORT): the caller's end is the greater address, so its host's
    ckpt_restart listens there at the meeting."""
    m = re.search(r"%s:7000 to %s:(\d+)" % (re.escape(h.addrs[0]),
                                           re.escape(h.addrs[1])),
                  inspect(server_image))
    assert m, inspect(server_image)
    return int(m.group(1))


def image_of(h, images, host):
    mine = [i for i in images if i.startswith(h.dir_of(host) + "/")]
    assert len(mine) == 1, (host, images)
    return mine[0]


def impostor(h, host, mode, addr, port, seconds):
    out = os.path.join(h.dir, "impostor-%s-%s" % (mode, host))
    p = h.start(host, [sys.executable, IMPOSTOR, mode, addr, str(port), out,
                       str(seconds)], "impostor " + mode)
    return p, out


def impostor_conns(out):
    """[(bytes of the handshake's framing, bytes beyond)] per connection."""
    if not os.path.exists(out):
        return []
    with open(out) as f:
        return [tuple(int(x) for x in line.split()[1:3])
                for line in f if line.startswith("conn ")]


def wait_for(what, cond, proc=None, timeout=60):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "no %s within %ds" % (what,
                                                                 timeout)
        assert proc is None or proc.alive(), proc.stderr_text()
        time.sleep(0.05)


def restart_on(h, host, peer_addr, image):
    return h.start(host, [tool("ckpt_restart"), "--coord", h.coord,
                          "--peer-hosts", peer_addr, image],
                   "ckpt_restart on " + host)


def restart_past_impostor(h, images, port):
    """An impostor on host a connects to host b's address at port again
    and again; b's images restarted first, a's once b's ckpt_restart has
    answered the impostor. Both must end well; the impostor must have
    been given nothing. Returns the two ckpt_restarts (a's, b's)."""
    a, b = h.names
    h.fresh_coordinator()
    imp, out = impostor(h, a, "connect", h.addrs[1], port, 120)
    r_b = restart_on(h, b, h.addrs[0], image_of(h, images, b))
    wait_for("an impostor connection answered",
             lambda: any(c[0] for c in impostor_conns(out)), r_b)
    r_a = restart_on(h, a, h.addrs[1], image_of(h, images, a))
    for p in (r_a, r_b):
        assert p.wait_exit(150) == 0, p.stderr_text()
    imp.sigkill()
    conns = impostor_conns(out)
    assert conns and all(extra == 0 for _, extra in conns), (
        "the impostor was given bytes: %r" % conns)
    return r_a, r_b


@pytest.mark.time_limit(200)
def test_impostor_listening_where_the_partner_was_gets_nothing(hosts):
    """Only the server's host is restarted; a program listens at the
    caller's old address first. The server's ckpt_restart connects to it,
    finds it cannot prove it knows the secret, sends it nothing but the
    handshake's hello, and the connection reads as closed, named."""
    h = hosts
    server, caller = h.names
    argvs, progress = conversation(h, 300)
    images, _, _, _ = checkpoint_and_kill_hosts(h, argvs, progress, 20)
    mine = image_of(h, images, server)
    port = caller_port(h, mine)
    imp, out = impostor(h, caller, "listen", h.addrs[1], port, 90)
    wait_for("impostor listening", lambda: os.path.exists(out + ".ready"),
             imp)
    r = restart_on(h, server, h.addrs[1], mine)
    rc = r.wait_exit(90)
    err = r.stderr_text()
    assert rc != 0, "the server finished without its caller: %s" % err
    assert re.search(r"what listens at %s:%d is not its other end's "
                     r"ckpt_restart: it did not prove it knows this user's "
                     r"secret.*nothing was sent to it" % (
                         re.escape(h.addrs[1]), port), err), err
    assert "FAIL serve: EOF before request" in err, err
    wait_for("the impostor's record", lambda: impostor_conns(out), imp, 30)
    assert impostor_conns(out) == [(24, 0)], (
        "the impostor got more than the hello: %r" % impostor_conns(out))


@pytest.mark.time_limit(240)
def test_impostor_connecting_first_is_refused_and_the_partner_met(hosts):
    """Both hosts restarted, the caller's first; before the server's
    ckpt_restart connects, a program connects to the caller's meeting
    again and again. Each of its connections gets the listener's proof
    (useless without the secret) and is closed; the server's then meets
    the caller's, and the conversation continues exactly."""
    h = hosts
    server, caller = h.names
    n = 300
    argvs, progress = conversation(h, n)
    images, outs, seen, before = checkpoint_and_kill_hosts(h, argvs,
                                                           progress, 40)
    port = caller_port(h, image_of(h, images, server))
    rc_server, rc_caller = restart_past_impostor(h, images, port)
    err = rc_caller.stderr_text()
    assert re.search(r"closed \d+ connections? to %s:%d that did not prove "
                     r"to be the other end's ckpt_restart" % (
                         re.escape(h.addrs[1]), port), err), err
    assert "its other end" not in rc_server.stderr_text() + err
    for name in argvs:
        after = file_numbers(outs[name], progress[name])
        assert_resumed(before[name], after, progress[name], n, seen[name])
    done_call = last_line(outs[caller])
    assert done_call.startswith("done call %d " % n), done_call
    assert last_line(outs[server]) == done_call.replace("call", "serve")


def meeting_port(image):
    """The datagram meeting's port, derived from the computation id as
    restart/restart_udp_hosts.c does (meet_port)."""
    cid = int(re.search(r"^computation ([0-9a-f]+)$", inspect(image),
                        re.M).group(1), 16)
    x = (cid * 0x9e3779b97f4a7c15) % (1 << 64)
    return 49152 + ((x >> 32) % 16000)


@pytest.mark.time_limit(240)
def test_datagram_meeting_refuses_an_impostor_from_a_peer_host(hosts):
    """The UDP sender on host a, the receiver on b (whose address is the
    greater: its ckpt_restart listens on the meeting port). A program on
    host a, which has a --peer-hosts address, connects to that port first,
    again and again, saying the handshake's framing and then the
    meeting's: it is refused and given nothing, and the datagrams still
    come from their sender, each once."""
    from test_udp_hosts import (assert_every_datagram_once,
                                checkpoint_and_kill, programs)
    h = hosts
    a, b = h.names
    assert h.addrs[1] > h.addrs[0], h.addrs
    progs = programs(h)
    runs, queued, recv_image = checkpoint_and_kill(h, progs)
    assert queued >= 5, "only %d datagrams waited: proves nothing" % queued
    port = meeting_port(recv_image)
    images = [os.path.join(h.dir_of(host), f) for host in (a, b)
              for f in os.listdir(h.dir_of(host))
              if f.startswith("ckpt_") and f.endswith(".img")]
    r_a, r_b = restart_past_impostor(h, images, port)
    err_b = r_b.stderr_text()
    assert re.search(r"host %s \(--peer-hosts\): closed \d+ connections? "
                     r"from it that did not prove to be its ckpt_restart" %
                     re.escape(h.addrs[0]), err_b), err_b
    others = "".join(line for line in err_b.splitlines(True)
                     if "did not prove to be its ckpt_restart" not in line)
    assert_every_datagram_once(progs, runs, r_a.stderr_text() + others)
