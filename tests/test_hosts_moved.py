# SPDX-License-Identifier: LGPL-2.1-or-later
"""A computation restarted on other hosts than it ran on
(docs/multi-host.md, "Restarting on other hosts"): two network-namespace
hosts (tests/netns_hosts.py) hold a TCP conversation and a UDP ping-pong,
checkpointed together, killed, and restarted by ckpt_restart_script.sh
--host OLD=NEW[@ADDR] with the hosts swapped, or one host moved to a third
namespace with another address: both conversations continue exactly,
between the new addresses. A bad map stops the script before anything
starts. A listener moved to a third host accepts a new client from
another host at its new address."""

import os
import re
import time

import pytest

from ckpt_harness import app, assert_resumed, Proc, tool
from netns_hosts import hosts_fixture
from test_multi_host import file_numbers, last_line, wait_progress

N = 150
DELAY = "30"
TCP_PORT, UDP_PORT = "7000", "7001"


@pytest.fixture
def hosts():
    yield from hosts_fixture(3)


def programs(h, udp_call="call"):
    """(host, tag, argv, progress) of the two conversations: servers on
    host a, callers on host b, all talking to host a's address; the UDP
    caller connected ("call") or sending to the address it was given
    ("callto")."""
    a, b = h.names[:2]
    tcp, udp = app("tcp_conversation"), app("udp_conversation")
    at = [h.addrs[0]]
    return [
        (a, "tcp-serve", [tcp, "serve"] + at + [TCP_PORT, str(N), DELAY],
         r"^served (\d+)$"),
        (b, "tcp-call", [tcp, "call"] + at + [TCP_PORT, str(N), DELAY],
         r"^reply (\d+) "),
        (a, "udp-serve", [udp, "serve"] + at + [UDP_PORT, str(N), DELAY],
         r"^served (\d+)$"),
        (b, "udp-call", [udp, udp_call] + at + [UDP_PORT, str(N), DELAY],
         r"^reply (\d+) "),
    ]


def checkpoint_and_kill(h, progs, at=30):
    """Every program launched on its host (stdout to a file there), one
    checkpoint once each printed progress `at`, then all killed and their
    outputs emptied. Returns {tag: (out, seen, before)}."""
    h.start_coordinator()
    runs = {}
    for host, tag, argv, _ in progs:
        out = os.path.join(h.dir_of(host), tag)
        with open(out, "wb") as f:
            runs[tag] = (out, h.launch(host, argv, stdout=f))
    seen = {tag: wait_progress(runs[tag][0], prog, at, runs[tag][1])
            for _, tag, _, prog in progs}
    r = h.command("--checkpoint")
    assert len(r.stdout.split()) == len(progs), r.stdout
    result = {}
    for _, tag, _, prog in progs:
        out, p = runs[tag]
        assert p.alive(), p.stderr_text()
        p.sigkill()
        result[tag] = (out, seen[tag], file_numbers(out, prog))
        os.truncate(out, 0)
    return result


def start_script(h, args):
    """ckpt_restart_script.sh ARGS with CKPT_HOST_CMD, started (a
    coordinator started again first: the computation was killed)."""
    h.fresh_coordinator()
    script = os.path.join(h.dir_of(h.names[0]), "ckpt_restart_script.sh")
    env = dict(h.env, CKPT_HOST_CMD=h.host_cmd())
    del env["CKPT_COORD"]
    s = Proc([script] + args, env, "ckpt_restart_script.sh",
             preexec_fn=os.setsid)
    h.procs.append(s)
    return s


def run_script(h, args, timeout=120):
    """start_script, waited for: (exit status, its Proc)."""
    s = start_script(h, args)
    return s.wait_exit(timeout), s


def checkpoint_again_and_kill(h, progs, s, runs):
    """The restarted computation (script s) checkpointed once each
    program printed 20 more numbers, then killed; returns the runs as
    checkpoint_and_kill does, for the next restart."""
    seen = {}
    for _, tag, _, prog in progs:
        out, was, _ = runs[tag]
        seen[tag] = wait_progress(out, prog, was + 20, s)
    h.command("--checkpoint")
    h.command("--kill")
    s.wait_exit(60)
    again = {}
    for _, tag, _, prog in progs:
        out = runs[tag][0]
        again[tag] = (out, seen[tag], file_numbers(out, prog))
        os.truncate(out, 0)
    return again


def images_of(h, host, addr):
    """The programs whose images the script in host a's directory lists
    under host (at addr), from host a's directory."""
    with open(os.path.join(h.dir_of(h.names[0]),
                           "ckpt_restart_script.sh")) as f:
        text = f.read()
    k = re.search(r"^h(\d+)='%s' a\d+='%s' " % (
        re.escape(host), re.escape(addr)), text, re.M)
    assert k, text
    body = re.search(r"^images%s\(\) \{(.*?)^\}" % k.group(1), text,
                     re.M | re.S).group(1)
    return sorted(re.findall(r"'%s/(ckpt_[a-z]+_[a-z]+)_" % re.escape(
        h.dir_of(h.names[0])), body))


def assert_continued(progs, runs):
    for _, tag, _, prog in progs:
        out, seen, before = runs[tag]
        assert_resumed(before, file_numbers(out, prog), prog, N, seen)
    for kind in ("tcp", "udp"):
        done_call = last_line(runs[kind + "-call"][0])
        done_serve = last_line(runs[kind + "-serve"][0])
        assert done_call.startswith("done call %d " % N), done_call
        assert done_serve == done_call.replace("call", "serve"), (
            kind, done_serve, done_call)


def assert_came_back_on(h, program, host, addr):
    log = h.coordinator.stderr_text()
    assert re.search(r"%s \(vpid \d+, pid \d+, host %s\) joined from %s:\d+, "
                     r"restarted" % (program, re.escape(host),
                                     re.escape(addr)), log), (
        "%s did not come back on %s (%s):\n%s" % (program, host, addr, log))


@pytest.mark.time_limit(120)
def test_hosts_swapped_both_conversations_continue_exactly(hosts):
    """Host a's images restart on b and b's on a: the TCP connection and
    the UDP sockets follow the new addresses (the servers' address is now
    host b's). Checkpointed there and swapped back the same way (the next
    script knows where each process ran last): both conversations end as
    an uninterrupted run would."""
    h = hosts
    a, b = h.names[:2]
    progs = programs(h)
    runs = checkpoint_and_kill(h, progs)
    swap = ["--host", "%s=%s" % (a, b), "--host=%s=%s" % (b, a)]
    s = start_script(h, swap)
    runs = checkpoint_again_and_kill(h, progs, s, runs)
    err = s.stderr_text()
    assert "its other end" not in err and "could not" not in err, err
    assert_came_back_on(h, "tcp_conversation", b, h.addrs[1])
    assert_came_back_on(h, "tcp_conversation", a, h.addrs[0])
    # the next script: host a's images (the servers) ran last on b
    assert images_of(h, b, h.addrs[1]) == sorted(
        "ckpt_%s_conversation" % k for k in ("tcp", "udp")), images_of(
        h, b, h.addrs[1])
    rc, s = run_script(h, swap)
    assert rc == 0, s.stderr_text()
    assert_continued(progs, runs)


@pytest.mark.time_limit(120)
def test_one_host_moved_to_a_third_host_with_another_address(hosts):
    """Host a's images (the servers) restart on host c, at c's address;
    host b's stay. The TCP connection follows the map; the UDP caller is not connected: it sends
    every number to the address it was given at the start, host a's,
    which libckpt passes to c's, and takes each answer from host a's
    address (recvfrom: c's given back as a's); the TCP ends see the
    addresses of the start (getsockname, getpeername)."""
    h = hosts
    a, b, c = h.names
    progs = programs(h, "callto")
    # the TCP ends and the UDP caller check that what the kernel gives
    # (getsockname, getpeername, recvfrom) names the hosts as at the start
    h.env["TCP_CONVERSATION_CHECK_NAMES"] = "1"
    runs = checkpoint_and_kill(h, progs)
    rc, s = run_script(h, ["--host", "%s=%s@%s" % (a, c, h.addrs[2])])
    assert rc == 0, s.stderr_text()
    assert_continued(progs, runs)
    assert_came_back_on(h, "udp_conversation", c, h.addrs[2])
    assert_came_back_on(h, "udp_conversation", b, h.addrs[1])


@pytest.mark.time_limit(120)
def test_bad_host_maps_are_clear_errors_and_restart_nothing(hosts):
    """An unknown old host, a new host without an address, and an address
    that is not on the new host: each a clear error before any process
    starts; the images still restart afterwards with a good map."""
    h = hosts
    a, b, c = h.names
    progs = programs(h)
    runs = checkpoint_and_kill(h, progs)
    bad = [
        (["--host", "nosuch=%s" % b],
         r"--host nosuch=%s: nosuch is not a host of the computation "
         r"\(its hosts: (%s %s|%s %s)\)" % (b, a, b, b, a)),
        (["--host", "%s=%s" % (b, c)],
         r"%s is not a host of the computation: give its address" % c),
        (["--host", "%s=%s@10.77.0.99" % (b, c)],
         r"(tcp|udp)_conversation \(vpid \d+\), fd \d+: --host-map %s="
         r"10.77.0.99: its socket at %s:\d+ cannot be at 10.77.0.99:\d+ on "
         r"this host: Cannot assign requested address: the new address is "
         r"not one of this host's \(nothing was restarted\)" % (
             re.escape(h.addrs[1]), re.escape(h.addrs[1]))),
        (["--host"], r"--host : expected OLD=NEW or OLD=NEW@ADDR"),
    ]
    for args, why in bad:
        rc, s = run_script(h, args, 60)
        err = s.stderr_text()
        assert rc != 0 and re.search(why, err), (args, rc, err)
        assert "restarted" not in h.coordinator.stderr_text(), (
            args, h.coordinator.stderr_text())
    rc, s = run_script(h, [])
    assert rc == 0, s.stderr_text()
    assert_continued(progs, runs)


# A server outside any test app: accepts clients one after another on
# HOST:PORT, answers each one's line with "LINE N" (N counts the clients
# served, so a restart must continue it) and prints the client's address
# and the address it was reached at (as the program sees them).
ACCEPT_SERVER = r"""
import socket, sys
l = socket.socket()
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind((sys.argv[1], int(sys.argv[2])))
l.listen(8)
print("listening", flush=True)
n = 0
while True:
    c, peer = l.accept()
    line = c.makefile("rb").readline().strip()
    n += 1
    c.sendall(line + b" %d\n" % n)
    print("served %d from %s at %s" % (n, peer[0], c.getsockname()[0]),
          flush=True)
    c.close()
"""

# A client outside the computation: connects to HOST:PORT (retrying while
# nothing listens there yet, 30 s at most), sends LINE, prints the answer.
ACCEPT_CLIENT = r"""
import socket, sys, time
deadline = time.monotonic() + 30
while True:
    try:
        c = socket.create_connection((sys.argv[1], int(sys.argv[2])), 5)
        break
    except OSError as e:
        if time.monotonic() > deadline:
            sys.exit("no server at %s:%s: %s" % (sys.argv[1],
                                                  sys.argv[2], e))
        time.sleep(0.1)
c.settimeout(20)
c.sendall(sys.argv[3].encode() + b"\n")
print(c.makefile("rb").readline().decode().strip(), flush=True)
"""

ACCEPT_PORT = "7002"


def client_answer(h, host, addr, line, server):
    """ACCEPT_CLIENT run on host against addr: the server's answer (server:
    the Proc whose stderr tells why there was none)."""
    p = h.start(host, ["/usr/bin/python3", "-c", ACCEPT_CLIENT, addr,
                       ACCEPT_PORT, line], "client on %s" % host)
    assert p.wait_exit(60) == 0, "%s\n%s:\n%s\ncoordinator:\n%s" % (
        p.stderr_text(), server.name, server.stderr_text(),
        h.coordinator.stderr_text())
    return "\n".join(p.lines()).strip()


def wait_line(path, pattern, proc, timeout=60):
    """The first line of path matching pattern, waited for."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(path, "rb") as f:
            text = f.read().replace(b"\0", b"").decode()
        m = re.search(pattern, text, re.M)
        if m:
            return m
        assert proc.alive(), "%s exited: %s" % (proc.name,
                                                proc.stderr_text())
        time.sleep(0.05)
    raise AssertionError("%s: no line %r in %s within %ds" % (
        proc.name, pattern, path, timeout))


@pytest.mark.time_limit(150)
def test_listener_moved_to_another_host_accepts_new_clients(hosts):
    """A server on host a, listening on a's address, serves a client from
    host b; checkpointed while it waits in accept(), killed, and
    restarted on host c at c's address: a new client from host b
    connects to c's address and is served, the server's count of
    clients continues (2), and the server sees b's address as its
    client's and a's (the address it bound) as the one it was reached
    at."""
    h = hosts
    a, b, c = h.names
    h.start_coordinator()
    out = os.path.join(h.dir_of(a), "accept-server")
    with open(out, "wb") as f:
        server = h.launch(a, ["/usr/bin/python3", "-c", ACCEPT_SERVER,
                              h.addrs[0], ACCEPT_PORT], stdout=f)
    wait_line(out, r"^listening$", server)
    assert client_answer(h, b, h.addrs[0], "before", server) == "before 1"
    wait_line(out, r"^served 1 ", server)
    r = h.command("--checkpoint")
    assert len(r.stdout.split()) == 1, r.stdout
    server.sigkill()
    os.truncate(out, 0)
    # one host's computation: ckpt_restart on the new host, given the map
    # (the script says so for --host)
    h.fresh_coordinator()
    s = h.start(c, [tool("ckpt_restart"), "--coord", h.coord, "--host-map",
                    "%s=%s" % (h.addrs[0], h.addrs[2])] + r.stdout.split(),
                "ckpt_restart on %s" % c,
                env=dict(h.env, CKPT_DIR=h.dir_of(a)))
    assert client_answer(h, b, h.addrs[2], "after", s) == "after 2"
    m = wait_line(out, r"^served 2 from (\S+) at (\S+)$", s)
    assert m.groups() == (h.addrs[1], h.addrs[0]), m.group(0)
    assert_came_back_on(h, "python3", c, h.addrs[2])
    h.command("--kill")
    s.wait_exit(60)
