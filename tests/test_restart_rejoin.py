# SPDX-License-Identifier: LGPL-2.1-or-later
"""A checkpoint asked for while a restart is still bringing processes back
saves the whole computation or fails saying so, never a part of it: the
processes of one restart join the coordinator one by one (here the child,
with almost no memory, well before its parent with 192 MiB)."""

import os
import subprocess
import time

import pytest

from ckpt_harness import app, numbers

STEPS, PAUSE_MS, MIB = 400, 25, 192


def listed(session):
    r = session.command("--list")
    return [l for l in r.stdout.splitlines() if l.startswith("vpid=")]


def wait_first_joined(session, timeout=30):
    """Poll --list until one restored process shows; returns how many."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        n = len(listed(session))
        if n:
            return n
        time.sleep(0.002)
    raise AssertionError("no restored process joined within %d s" % timeout)


@pytest.mark.time_limit(300)
def test_checkpoint_while_restart_joins_saves_every_process(session):
    p = session.launch([app("uneven_pair"), str(MIB), str(STEPS),
                        str(PAUSE_MS)])
    p.wait_line(r"^parent (\d+)", minimum=5)
    p.wait_line(r"^child (\d+)", minimum=5)
    images = session.checkpoint(expect_images=2)
    session.kill_all()
    p.wait_exit(30)
    r1 = session.restart(images)
    first = wait_first_joined(session)
    ck = session.command("--checkpoint")
    out = [l.strip() for l in ck.stdout.splitlines() if l.strip()]
    # A restart of two processes: all of them or a failure that says why
    assert (ck.returncode == 0 and len(out) == 2) or (
        ck.returncode != 0 and "restart" in ck.stderr), (
        "--checkpoint when %d of 2 restored processes had joined: exit %d, "
        "images %r, stderr:\n%s\n--list now:\n%s" % (
            first, ck.returncode, out, ck.stderr,
            "\n".join(listed(session))))
    if ck.returncode != 0:
        pytest.fail("the checkpoint failed instead of waiting for the "
                    "restart: %s" % ck.stderr)
    r1.wait_line(r"^parent (\d+)", minimum=1)
    seen = max(numbers(r1.lines(), r"^parent (\d+)") or [0])
    session.kill_all()
    r1.wait_exit(30)
    # the images of that checkpoint hold both, and both go on to the end
    r2 = session.restart(out)
    rc = r2.wait_exit(120)
    assert rc == 0, "restart of the checkpoint taken while joining: exit " \
        "%d; stderr:\n%s" % (rc, r2.stderr_text())
    parents = numbers(r2.lines(), r"^parent (\d+)")
    children = numbers(r2.lines(), r"^child (\d+)")
    assert parents and parents[-1] == STEPS and children and \
        children[-1] == STEPS, r2.lines()[-5:]
    assert parents == list(range(parents[0], STEPS + 1)), parents[:10]
    assert parents[0] <= seen + 1
    assert any(l.startswith("done ") for l in r2.lines()), r2.lines()[-3:]


def on_cpu0():
    os.sched_setaffinity(0, {0})


@pytest.mark.time_limit(240)
def test_restarted_program_runs_only_once_its_coordinator_knows_it(session):
    """A restarted process's program runs again only once its HELLO is
    out (libckpt's manager thread sends it first): a checkpoint asked for
    as soon as the restarted program prints finds it a member, even when
    the manager thread shares its CPU with a busy one. Before, the
    program ran while its manager waited for a CPU, and such a checkpoint
    found no process, or (beside a running copy) only the other one."""
    if len(os.sched_getaffinity(0)) < 2 or 0 not in os.sched_getaffinity(0):
        pytest.skip("needs CPU 0 and another one")
    hog = subprocess.Popen(["taskset", "-c", "0", "nice", "-n", "-5",
                            "sh", "-c", "while :; do :; done"],
                           stdout=subprocess.DEVNULL)
    try:
        p = session.launch([app("counter"), "100000000", "0"],
                           preexec_fn=on_cpu0)
        p.wait_line(r"^count (\d+)", minimum=20)
        [image] = session.checkpoint()
        session.kill_all()
        p.wait_exit(30)
        for attempt in range(20):
            r = session.restart([image], preexec_fn=on_cpu0)
            r.wait_line(r"^count (\d+)")
            ck = session.command("--checkpoint")
            assert ck.returncode == 0 and len(ck.stdout.split()) == 1, (
                "attempt %d: a checkpoint as soon as the restarted program "
                "printed: exit %d, stdout %r, stderr:\n%s" % (
                    attempt, ck.returncode, ck.stdout, ck.stderr))
            session.kill_all()
            r.wait_exit(30)
    finally:
        hog.kill()
        hog.wait(10)
