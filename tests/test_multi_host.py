# SPDX-License-Identifier: LGPL-2.1-or-later
"""A computation spanning hosts (docs/multi-host.md), each host a network
namespace of this machine (tests/netns_hosts.py): one coordinator over
TCP, one checkpoint of every host at once, each host's images in its own
directory, and ckpt_restart_script.sh restarting each host's images on
that host."""

import os
import re
import time

import pytest

from ckpt_harness import (app, assert_resumed, numbers, Proc,
                          reference_output, run, tool)
from netns_hosts import hosts_fixture

PROGRESS = r"^count (\d+) "
LAST = 300
ARGV = [app("counter"), str(LAST), "30"]


@pytest.fixture
def hosts():
    yield from hosts_fixture(2)


def file_numbers(path, progress):
    with open(path, "rb") as f:
        text = f.read().replace(b"\0", b"").decode()
    return numbers(text.splitlines(), progress)


def wait_progress(path, progress, minimum, proc, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = file_numbers(path, progress)
        if got and got[-1] >= minimum:
            return got[-1]
        assert proc.alive(), "%s exited: %s" % (proc.name,
                                                proc.stderr_text())
        time.sleep(0.05)
    raise AssertionError("%s: no progress %d in %s within %ds: %r" % (
        proc.name, minimum, path, timeout,
        file_numbers(path, progress)[-3:]))


def checkpoint_and_kill_hosts(h, argvs, progress, at):
    """Launch argvs[host] on each host (stdout to a file there), wait for
    progress >= at everywhere, checkpoint once, kill everything and empty
    the output files (a restart from scratch would write at offset 0).
    Returns (images, outs, seen, before), the last three per host."""
    outs, procs, seen, before = {}, {}, {}, {}
    h.start_coordinator()
    for name, argv in argvs.items():
        outs[name] = os.path.join(h.dir_of(name), "out")
        with open(outs[name], "wb") as f:
            procs[name] = h.launch(name, argv, stdout=f)
    for name in argvs:
        seen[name] = wait_progress(outs[name], progress[name], at,
                                   procs[name])
    r = h.command("--checkpoint")
    images = r.stdout.split()
    assert len(images) == len(argvs), "image paths: %r" % r.stdout
    for name in argvs:
        mine = [i for i in images if i.startswith(h.dir_of(name) + "/")]
        assert len(mine) == 1, "host %s: not one image in %s: %r" % (
            name, h.dir_of(name), images)
    for name in argvs:
        assert procs[name].alive(), procs[name].stderr_text()
        procs[name].sigkill()
        before[name] = file_numbers(outs[name], progress[name])
        os.truncate(outs[name], 0)
    return images, outs, seen, before


def checkpoint_kill_restart(h, argvs, progress, at):
    """checkpoint_and_kill_hosts, then ckpt_restart_script.sh with
    CKPT_HOST_CMD; checks each host's images came back on that host.
    Returns (outs, seen, before, the script's Proc)."""
    _, outs, seen, before = checkpoint_and_kill_hosts(h, argvs, progress, at)
    script = os.path.join(h.dir_of(h.names[0]), "ckpt_restart_script.sh")
    text = open(script).read()
    for name in argvs:
        assert re.search(r"^h\d+='%s' " % re.escape(name), text, re.M), text
    env = dict(h.env, CKPT_HOST_CMD=h.host_cmd())
    del env["CKPT_COORD"]       # the script names the coordinator
    s = Proc([script], env, "ckpt_restart_script.sh", preexec_fn=os.setsid)
    h.procs.append(s)
    assert s.wait_exit(120) == 0, "%s\n%s" % (s.stderr_text(), text)
    log = h.coordinator.stderr_text()
    for name, addr in zip(h.names, h.addrs):
        assert re.search(r"host %s\) joined from %s:\d+, restarted" % (
            re.escape(name), re.escape(addr)), log), (
            "%s was not restarted on its host (%s):\n%s" % (name, addr, log))
    return outs, seen, before, s


def last_line(path):
    with open(path, "rb") as f:
        return f.read().replace(b"\0", b"").rstrip(b"\n").split(
            b"\n")[-1].decode()


@pytest.mark.time_limit(200)
def test_two_hosts_checkpoint_together_and_restart_on_their_hosts(hosts):
    h = hosts
    argvs = {n: ARGV for n in h.names}
    progress = {n: PROGRESS for n in h.names}
    outs, seen, before, _ = checkpoint_kill_restart(h, argvs, progress, 30)
    for name in h.names:
        after = file_numbers(outs[name], PROGRESS)
        assert_resumed(before[name], after, PROGRESS, LAST, seen[name])
        assert last_line(outs[name]) == reference_output(ARGV)[-1]


def conversation(h, n):
    where = [h.addrs[0], "7000", str(n), "30"]
    conv = app("tcp_conversation")
    server, caller = h.names
    return ({server: [conv, "serve"] + where, caller: [conv, "call"] + where},
            {server: r"^served (\d+)$", caller: r"^reply (\d+) "})


@pytest.mark.time_limit(200)
def test_tcp_conversation_between_hosts_continues_exactly(hosts):
    """A caller on host b keeps 4 requests in flight to a server on host
    a; checkpointed mid-conversation, killed, restarted on the same hosts
    by the script: every byte arrives exactly once, in order (each side
    checks every number and hash it gets)."""
    h = hosts
    server, caller = h.names
    n = 300
    argvs, progress = conversation(h, n)
    outs, seen, before, s = checkpoint_kill_restart(h, argvs, progress, 40)
    assert "its other end" not in s.stderr_text(), s.stderr_text()
    for name in argvs:
        after = file_numbers(outs[name], progress[name])
        assert_resumed(before[name], after, progress[name], n, seen[name])
    done_call = last_line(outs[caller])
    done_serve = last_line(outs[server])
    assert done_call.startswith("done call %d " % n), done_call
    assert done_serve == done_call.replace("call", "serve"), (
        done_serve, done_call)


@pytest.mark.time_limit(200)
def test_partner_host_not_restarted_reads_as_closed(hosts):
    """Only the server's host is restarted: its connection to the caller's
    host waits for the caller's ckpt_restart (--meet-timeout 6 s; 30 s by
    default), then reads as closed, named on stderr; the restart does not
    hang."""
    h = hosts
    server, caller = h.names
    argvs, progress = conversation(h, 300)
    images, outs, _, _ = checkpoint_and_kill_hosts(h, argvs, progress, 20)
    mine = [i for i in images if i.startswith(h.dir_of(server) + "/")]
    t0 = time.monotonic()
    r = h.start(server, [tool("ckpt_restart"), "--coord", h.coord,
                         "--meet-timeout", "6", "--peer-hosts",
                         h.addrs[1]] + mine,
                "ckpt_restart on " + server)
    rc = r.wait_exit(90)
    took = time.monotonic() - t0
    err = r.stderr_text()
    assert rc != 0, "the server finished without its caller: %s" % err
    assert re.search(r"the TCP connection %s:7000 to %s:\d+: .*its other "
                     r"end failed: .*it reads as closed by the peer" % (
                         re.escape(h.addrs[0]), re.escape(h.addrs[1])),
                     err), err
    assert "FAIL serve: EOF before request" in err, err
    assert took < 50, "the restart took %.0f s" % took


@pytest.mark.parametrize("bad", ["foo", "", "10.0.0.1,,", "10.0.0.256"])
def test_bad_peer_hosts_is_a_clear_error(bad):
    r = run([tool("ckpt_restart"), "--peer-hosts", bad, "/nonexistent.img"],
            30)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert "is not a numeric IPv4 or IPv6 address" in r.stderr, r.stderr
