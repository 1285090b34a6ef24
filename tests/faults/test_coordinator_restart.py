# SPDX-License-Identifier: LGPL-2.1-or-later
"""Processes outlive their coordinator: when it dies they keep running and
join again, with growing pauses, a coordinator at the same address,
starting one themselves when nobody answers. They bring their generation
and computation, so checkpoints go on with the next number in the same
computation (before: nobody ever rejoined, and checkpointing was over)."""

import os
import re
import signal
import subprocess
import time

import pytest

from ckpt_harness import app

ARGV = [app("counter"), "1000000", "20"]


def status(session):
    r = session.command("--status", timeout=30)
    return r.stdout if r.returncode == 0 else ""


def coordinator_pid_and_computation(session):
    m = re.search(r"\(pid (\d+), computation ([0-9a-f]+)\)", status(session))
    assert m, status(session)
    return int(m.group(1)), m.group(2)


def wait_joined(session, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if re.search(r"^processes: 1$", status(session), re.M):
            return
        time.sleep(0.1)
    raise AssertionError("the process did not join again within %d s: %r"
                         % (timeout, status(session)))


def kill_coordinator(pid):
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and os.path.exists("/proc/%d" % pid):
        time.sleep(0.02)


def checkpoint_generation(session):
    images = session.checkpoint()
    m = re.search(r"^last checkpoint: generation (\d+)", status(session),
                  re.M)
    return images, int(m.group(1))


@pytest.mark.time_limit(120)
def test_process_starts_a_new_coordinator_when_it_died(session):
    p = session.launch(ARGV)
    p.wait_line(r"^count (\d+) ", minimum=3)
    images, gen = checkpoint_generation(session)
    assert gen == 1
    pid, computation = coordinator_pid_and_computation(session)
    kill_coordinator(pid)
    wait_joined(session)
    new_pid, new_computation = coordinator_pid_and_computation(session)
    assert new_pid != pid
    assert new_computation == computation
    images2, gen2 = checkpoint_generation(session)
    assert gen2 == 2 and images2 == images
    assert p.alive()
    assert "lost the coordinator" in p.stderr_text()


@pytest.mark.time_limit(120)
def test_process_joins_a_coordinator_restarted_at_its_address(session):
    p = session.launch(ARGV)
    p.wait_line(r"^count (\d+) ", minimum=3)
    checkpoint_generation(session)
    pid, computation = coordinator_pid_and_computation(session)
    kill_coordinator(pid)
    # a coordinator started by hand at once (the process may have been
    # quicker and started one: then that one is in place)
    log = open(session.path("coord2.log"), "w")
    subprocess.Popen([session.tool("ckpt_coordinator"), "--coord",
                      session.coord, "--daemon"], env=session.env,
                     stdout=subprocess.DEVNULL, stderr=log).wait(30)
    wait_joined(session)
    _, new_computation = coordinator_pid_and_computation(session)
    assert new_computation == computation
    _, gen = checkpoint_generation(session)
    assert gen == 2
