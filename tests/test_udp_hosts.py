# SPDX-License-Identifier: LGPL-2.1-or-later
"""Datagrams queued between hosts (docs/multi-host.md, "Datagrams queued
between hosts"): a UDP sender on host a and a slower receiver on host b,
each socket connected to the other's, dozens of datagrams waiting in the
receiver's queue at the checkpoint. Every host's images restarted on that
host, or with the hosts swapped (--host-map through the script): each
ckpt_restart hands the datagrams whose source is on the other host to
that host's ckpt_restart, which sends them from the sender's restored
socket before any process runs. The receiver, which takes only its
connected peer's datagrams and checks each number and source, gets every
one once, in order, and the conversation ends as an uninterrupted run."""

import os
import re
import time

import pytest

from ckpt_harness import app, assert_resumed, run, tool
from netns_hosts import hosts_fixture
from test_hosts_moved import run_script
from test_multi_host import file_numbers, last_line, wait_progress

N = 150
DELAY = "20"
PORT = "7301"


@pytest.fixture
def hosts():
    yield from hosts_fixture(2)


def programs(h):
    """(host, tag, argv, progress): the receiver on b (started first),
    the sender on a."""
    a, b = h.names
    prog = app("udp_backlog")
    return [
        (b, "recv", [prog, "recv", h.addrs[1], PORT, h.addrs[0], str(N),
                     DELAY], r"^got (\d+)$"),
        (a, "send", [prog, "send", h.addrs[0], PORT, h.addrs[1], str(N),
                     DELAY], r"^sent (\d+)$"),
    ]


def wait_ready(path, proc):
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with open(path, "rb") as f:
            if f.read().startswith(b"ready"):
                return
        assert proc.alive(), proc.stderr_text()
        time.sleep(0.05)
    raise AssertionError("the receiver never said ready")


def queued_at_checkpoint(image):
    r = run([tool("ckpt_inspect"), image], 60)
    assert r.returncode == 0, r.stderr
    got = [int(n) for n in re.findall(r"(\d+) datagrams saved", r.stdout)]
    return sum(got)


def checkpoint_and_kill(h, progs):
    """Each program launched on its host, one checkpoint once the sender
    has sent 40 numbers, then all killed and
    their outputs emptied. Returns ({tag: (out, seen, before)}, the
    number of datagrams saved in the receiver's image, its path)."""
    h.start_coordinator()
    runs = {}
    for host, tag, argv, _ in progs:
        out = os.path.join(h.dir_of(host), tag)
        with open(out, "wb") as f:
            runs[tag] = (out, h.launch(host, argv, stdout=f))
        if tag == "recv":
            wait_ready(out, runs[tag][1])
    seen = {tag: wait_progress(runs[tag][0], prog, 40 if tag == "send"
                               else 5, runs[tag][1])
            for _, tag, _, prog in progs}
    images = h.command("--checkpoint").stdout.split()
    assert len(images) == len(progs), images
    result = {}
    for _, tag, _, prog in progs:
        out, p = runs[tag]
        assert p.alive(), p.stderr_text()
        p.sigkill()
        result[tag] = (out, seen[tag], file_numbers(out, prog))
        os.truncate(out, 0)
    recv_image = [i for i in images if i.startswith(h.dir_of(h.names[1]))]
    return result, queued_at_checkpoint(recv_image[0]), recv_image[0]


def assert_every_datagram_once(progs, runs, err):
    assert "could not be put back" not in err, err
    assert "warning: host" not in err, err
    for _, tag, _, prog in progs:
        out, seen, before = runs[tag]
        assert_resumed(before, file_numbers(out, prog), prog, N, seen)
    assert last_line(runs["send"][0]) == "done send %d" % N
    assert last_line(runs["recv"][0]) == "done recv %d" % N


@pytest.mark.time_limit(150)
@pytest.mark.parametrize("where", ["same hosts", "hosts swapped"])
def test_datagrams_queued_between_hosts_come_from_their_sender(hosts,
                                                                 where):
    h = hosts
    a, b = h.names
    progs = programs(h)
    runs, queued, _ = checkpoint_and_kill(h, progs)
    assert queued >= 5, "only %d datagrams waited at the receiver: the " \
        "test proves nothing" % queued
    args = [] if where == "same hosts" else [
        "--host", "%s=%s" % (a, b), "--host=%s=%s" % (b, a)]
    rc, s = run_script(h, args)
    assert rc == 0, s.stderr_text()
    assert_every_datagram_once(progs, runs, s.stderr_text())


@pytest.mark.time_limit(150)
def test_sender_host_not_restarted_is_named_and_bounded(hosts):
    """Only the receiver's host is restarted: its ckpt_restart waits for
    the sender host's (--meet-timeout 4 s; 15 s by default), names it
    and the datagrams it then sends from this host, and goes on."""
    h = hosts
    a, b = h.names
    runs, queued, image = checkpoint_and_kill(h, programs(h))
    t0 = time.monotonic()
    r = h.start(b, [tool("ckpt_restart"), "--coord", h.coord,
                    "--meet-timeout", "4", "--peer-hosts", h.addrs[0],
                    image],
                "ckpt_restart on " + b)
    want = re.compile(r"warning: host %s \(--peer-hosts\): its ckpt_restart "
                      r"did not connect; (\d+) datagrams from it waiting "
                      r"here are sent from this host instead" %
                      re.escape(h.addrs[0]))
    while not want.search(r.stderr_text()):
        assert time.monotonic() - t0 < 90, r.stderr_text()
        time.sleep(0.1)
    assert int(want.search(r.stderr_text()).group(1)) == queued, (
        queued, r.stderr_text())
    h.command("--kill", check=False, timeout=20)
