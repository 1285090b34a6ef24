# SPDX-License-Identifier: LGPL-2.1-or-later
"""A tree of processes comes back as the same tree: one ckpt_restart of
all images makes every restored process the child of its restored parent,
and getppid, kill, getpgid and waitpid work with the pids stored before
the checkpoint, even when other processes hold those real pids."""

import os
import re
import subprocess
import time

import pytest

from ckpt_harness import app, numbers

ITER = 150
DELAY_MS = "20"
NAMES = ("parent", "child1", "grandchild")


def occupy_pids(pids, attempts=5):
    """Start a sleeper on each of the given real pids where the kernel lets
    us (root with CAP_SYS_ADMIN, through ns_last_pid; other sessions may
    take a pid first, hence attempts; a sandbox may ignore the write).
    Returns the sleepers that got their pid."""
    sleepers = []
    for pid in pids:
        for _ in range(attempts):
            try:
                with open("/proc/sys/kernel/ns_last_pid", "w") as f:
                    f.write(str(pid - 1))
            except OSError:
                return sleepers
            p = subprocess.Popen(["sleep", "60"])
            if p.pid == pid:
                sleepers.append(p)
                break
            p.kill()
            p.wait()
    return sleepers


def checkpoint_tree(session, p, nimages):
    p.wait_line(r"^parent (\d+)$", minimum=30)
    seen = {n: max(numbers(p.lines(), r"^%s (\d+)$" % n)) for n in NAMES}
    images = session.checkpoint(expect_images=nimages)
    assert p.alive(), p.stderr_text()
    session.kill_all()
    p.popen.wait(30)
    assert p.out.wait_closed(15), "the tree outlived ckpt_command --kill"
    return images, seen


@pytest.mark.time_limit(300)
def test_process_tree_restart(session):
    p = session.launch([app("proc_tree"), str(ITER), DELAY_MS])
    start = p.wait_line(r"^start parent (\d+) child1 (\d+) child2 (\d+)$")
    g = p.wait_line(r"^child1 has grandchild (\d+)$")
    pids = [int(start.group(i)) for i in (1, 2, 3)] + [int(g.group(1))]
    images, seen = checkpoint_tree(session, p, 4)
    before = {n: numbers(p.lines(), r"^%s (\d+)$" % n) for n in NAMES}
    assert not any(l.startswith("FAIL") for l in p.lines()), p.lines()

    sleepers = occupy_pids(pids)
    try:
        held = [s.pid for s in sleepers]
        print("original pids %r, now held by sleepers: %r" % (pids, held))
        r = session.restart(images)
        # The restored root runs in ckpt_restart's pid slot: another real
        # pid than the one its children stored, so translation is needed.
        assert r.pid not in pids
        rc = r.wait_exit()
    finally:
        for s in sleepers:
            s.kill()
            s.wait()
    lines = r.lines()
    assert rc == 0 and lines[-1] == "OK tree", (
        "exit %d, last lines %r, stderr:\n%s" % (rc, lines[-5:],
                                                r.stderr_text()))
    assert not any(l.startswith("FAIL") or l.startswith("start ")
                   for l in lines), lines
    for n in NAMES:
        after = numbers(lines, r"^%s (\d+)$" % n)
        assert after, "%s printed nothing after the restart" % n
        assert seen[n] < after[0] <= before[n][-1] + 1, (
            "%s resumed at %d; checkpoint after %d, killed at %d" % (
                n, after[0], seen[n], before[n][-1]))
        assert after == list(range(after[0], ITER + 1)), (n, after[:5])


@pytest.mark.time_limit(120)
def test_tree_restart_refuses_mixed_images(session, tmp_path):
    """Two images claiming the same pid: one clear line, exit 1."""
    p = session.launch([app("proc_tree"), str(ITER), DELAY_MS])
    p.wait_line(r"^start parent")
    images, _ = checkpoint_tree(session, p, 4)
    r = subprocess.run([session.tool("ckpt_restart"), images[0], images[0]],
                       capture_output=True, text=True, timeout=30,
                       env=session.env)
    assert r.returncode == 1
    assert re.search(r"both are the process with pid \d+", r.stderr), (
        r.stderr)
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def restart_three_processes(session, name, ready):
    """Run app NAME (a parent and two processes), checkpoint once `ready`
    printed and the parent made 30 steps of 150, restart from the images:
    the parent goes on from the checkpoint and ends with "OK ...".
    Returns the restart."""
    p = session.launch([app(name), "150", "20"])
    p.wait_line(r"^start parent")
    p.wait_line(ready, minimum=20)
    p.wait_line(r"^parent (\d+)$", minimum=30)
    seen = max(numbers(p.lines(), r"^parent (\d+)$"))
    images = session.checkpoint(expect_images=3)
    session.kill_all()
    p.popen.wait(30)
    before = numbers(p.lines(), r"^parent (\d+)$")
    r = session.restart(images)
    rc = r.wait_exit()
    lines = r.lines()
    told = [l for l in lines if l.startswith(("FAIL", "parent", "OK"))]
    assert rc == 0 and lines[-1].startswith("OK "), (
        "exit %d, last lines %r, the parent's last %r, stderr:\n%s"
        % (rc, lines[-5:], told[-3:], r.stderr_text()))
    after = numbers(lines, r"^parent (\d+)$")
    assert seen < after[0] <= before[-1] + 1
    assert after == list(range(after[0], 151))
    return r


@pytest.mark.time_limit(300)
def test_process_groups_restart(session):
    """Groups the program made come back: a leader leads a new group, a
    member joins its leader's, kill(-pgid) reaches the whole group."""
    restart_three_processes(session, "pgroups", r"^C (\d+)$")


@pytest.mark.time_limit(300)
def test_sessions_restart(session):
    """A session the program made comes back: its leader leads a new one
    again and its child is born in it; the parent stays in the session it
    was started in."""
    r = restart_three_processes(session, "sessions", r"^G (\d+)$")
    assert not r.stderr_text(), r.stderr_text()


@pytest.mark.time_limit(300)
def test_restart_while_the_original_holds_the_pids(session):
    """The original tree keeps running (so its processes hold every stored
    pid) while a copy is restarted from its images: the copy's waitpid,
    kill and getppid must reach its own processes, never the originals."""
    p = session.launch([app("proc_tree"), str(ITER), DELAY_MS])
    p.wait_line(r"^start parent")
    p.wait_line(r"^parent (\d+)$", minimum=30)
    images = session.checkpoint(expect_images=4)
    r = session.restart(images)
    rc = r.wait_exit()
    lines = r.lines()
    assert rc == 0 and lines[-1] == "OK tree", (
        "exit %d, last lines %r, stderr:\n%s" % (rc, lines[-5:],
                                                r.stderr_text()))
    assert p.wait_exit() == 0 and p.lines()[-1] == "OK tree", (
        "the original tree was disturbed by its restarted copy: %r\n%s" % (
            p.lines()[-3:], p.stderr_text()))


@pytest.mark.time_limit(600)
def test_forest_of_64_processes(session):
    """64 processes in three generations: one checkpoint writes 64 images,
    one ckpt_restart brings the whole tree back, every parent reaps its
    children by their stored pids with their exit statuses."""
    iters = 300
    p = session.launch([app("fork_forest"), str(iters), "20"])
    p.wait_line(r"^tree of 64 processes$")
    p.wait_line(r"^root (\d+)$", minimum=40)
    seen = max(numbers(p.lines(), r"^root (\d+)$"))
    images = session.checkpoint(expect_images=64)
    session.kill_all()
    p.popen.wait(30)
    before = numbers(p.lines(), r"^root (\d+)$")
    r = session.restart(images)
    rc = r.wait_exit()
    lines = r.lines()
    assert rc == 0 and lines[-1] == "OK forest 64", (
        "exit %d, last lines %r, stderr:\n%s" % (rc, lines[-5:],
                                                r.stderr_text()))
    assert not any(l.startswith("FAIL") for l in lines), lines
    after = numbers(lines, r"^root (\d+)$")
    assert seen < after[0] <= before[-1] + 1
    assert after == list(range(after[0], iters + 1))
