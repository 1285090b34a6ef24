# SPDX-License-Identifier: LGPL-2.1-or-later
"""Children started after a restart record virtual pids, so a second
restart works as the first: a posix_spawn loop (posix_spawnp("sleep")
and this program again, which checks getppid()) waits for each child by
the pid posix_spawn returned, through two checkpoint -> kill -> restart
cycles, the second checkpoint catching a child spawned after the first
restart. And a vfork child's getpid() is its own pid (not its parent's):
setpgid(getpid(), getpid()) works in it, before and after a restart."""

import os

import pytest

from ckpt_harness import app, numbers

ROUND = r"^round (\d+) ok"


def checkpoint_with_child(session, p, tries=10):
    """Checkpoint until the images include a child (the program spends
    most of each round waiting for one)."""
    for _ in range(tries):
        r = session.command("--checkpoint")
        assert r.returncode == 0, "checkpoint failed: %s" % r.stderr
        images = [l for l in r.stdout.splitlines() if l.strip()]
        assert p.alive(), p.stderr_text()
        if len(images) >= 2:
            return images
    raise AssertionError("no checkpoint caught a child in %d tries" % tries)


def kill_and_check(session, p):
    session.kill_all()
    p.popen.wait(30)
    assert not any(l.startswith("FAIL") for l in p.lines()), (
        p.lines()[-3:], p.stderr_text())
    return numbers(p.lines(), ROUND)


def restart_cycles(session, argv, n, cycles):
    """Run argv under ckpt, then `cycles` times: checkpoint with a child
    in flight, kill, restart from the images; the last restart runs to
    the end. Each run must go on from where the previous one stopped."""
    p = session.launch(argv)
    p.wait_line(ROUND, minimum=3)
    for cycle in range(cycles):
        images = checkpoint_with_child(session, p)
        before = kill_and_check(session, p)
        assert before and before[-1] < n, "finished before the kill"
        p = session.restart(images)
        if cycle + 1 < cycles:
            p.wait_line(ROUND, minimum=before[-1] + 3)
    rc = p.wait_exit()
    lines = p.lines()
    assert rc == 0 and lines[-1:] == ["done"], (
        "after restart %d: exit %d, last lines %r; stderr:\n%s" % (
            cycles, rc, lines[-3:], p.stderr_text()))
    after = numbers(lines, ROUND)
    assert after == list(range(after[0], n + 1)), after[:5]
    assert after[0] <= before[-1] + 1, (after[0], before[-1])
    return p


@pytest.mark.skipif(not os.environ.get("CKPT_HEAVY_TESTS"),
                    reason="heavy: the three-restart test covers it; "
                    "set CKPT_HEAVY_TESTS=1")
@pytest.mark.time_limit(300)
def test_posix_spawn_loop_two_restarts(session):
    restart_cycles(session, [app("spawn_loop"), "120", "150"], 120, 2)


@pytest.mark.time_limit(300)
def test_posix_spawn_loop_three_restarts(session):
    restart_cycles(session, [app("spawn_loop"), "160", "150"], 160, 3)


@pytest.mark.time_limit(300)
def test_vfork_child_pid_before_and_after_restart(session):
    p = restart_cycles(session, [app("vfork_pid"), "100", "150"], 100, 2)
    pids = set(l.split()[-1] for l in p.lines() if l.startswith("round "))
    assert len(pids) > 3, "the children all had one pid: %r" % pids
