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
                          reference_output)
from netns_hosts import Hosts

PROGRESS = r"^count (\d+) "
LAST = 300
ARGV = [app("counter"), str(LAST), "30"]


@pytest.fixture
def hosts():
    why = Hosts.skip_reason()
    if why:
        pytest.skip(why)
    h = Hosts(2)
    try:
        yield h
    finally:
        h.close()


def file_numbers(path):
    with open(path, "rb") as f:
        text = f.read().replace(b"\0", b"").decode()
    return numbers(text.splitlines(), PROGRESS)


def wait_progress(path, minimum, proc, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = file_numbers(path)
        if got and got[-1] >= minimum:
            return got[-1]
        assert proc.alive(), "%s exited: %s" % (proc.name,
                                                proc.stderr_text())
        time.sleep(0.05)
    raise AssertionError("%s: no progress %d in %s within %ds: %r" % (
        proc.name, minimum, path, timeout, file_numbers(path)[-3:]))


@pytest.mark.time_limit(200)
def test_two_hosts_checkpoint_together_and_restart_on_their_hosts(hosts):
    h = hosts
    h.start_coordinator()
    outs, procs = {}, {}
    for name in h.names:
        outs[name] = os.path.join(h.dir_of(name), "out")
        with open(outs[name], "wb") as f:
            procs[name] = h.launch(name, ARGV, stdout=f)
    seen = {n: wait_progress(outs[n], 30, procs[n]) for n in h.names}
    r = h.command("--checkpoint")
    images = r.stdout.split()
    assert len(images) == 2, "expected 2 image paths: %r" % r.stdout
    for name in h.names:
        mine = [i for i in images if i.startswith(h.dir_of(name) + "/")]
        assert len(mine) == 1, "host %s: not one image in %s: %r" % (
            name, h.dir_of(name), images)
    before = {}
    for name in h.names:
        assert procs[name].alive(), procs[name].stderr_text()
        procs[name].sigkill()
        before[name] = file_numbers(outs[name])
        # a restart from scratch would write at offset 0: it is emptied
        os.truncate(outs[name], 0)

    script = os.path.join(h.dir_of(h.names[0]), "ckpt_restart_script.sh")
    text = open(script).read()
    for name in h.names:
        assert "on_host '%s' " % name in text, text
    env = dict(h.env, CKPT_HOST_CMD=h.host_cmd())
    del env["CKPT_COORD"]       # the script names the coordinator
    s = Proc([script], env, "ckpt_restart_script.sh", preexec_fn=os.setsid)
    h.procs.append(s)
    assert s.wait_exit(120) == 0, s.stderr_text()

    for name in h.names:
        after = file_numbers(outs[name])
        assert_resumed(before[name], after, PROGRESS, LAST, seen[name])
        with open(outs[name], "rb") as f:
            last = f.read().rstrip(b"\n").split(b"\n")[-1].decode()
        assert last == reference_output(ARGV)[-1]
    log = h.coordinator.stderr_text()
    for name, addr in zip(h.names, h.addrs):
        assert re.search(r"host %s\) joined from %s:\d+, restarted" % (
            re.escape(name), re.escape(addr)), log), (
            "%s was not restarted on its host (%s):\n%s" % (name, addr, log))
