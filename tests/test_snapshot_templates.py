# SPDX-License-Identifier: LGPL-2.1-or-later
"""Template snapshots (docs/embedding.md, "Template snapshots"): a
computation of one process is snapshotted as a frozen template process
and restored by a copy-on-write fork of it. The restored process shares
its open file descriptions with the process it replaces, so what the
kernel holds comes back from the snapshot: file offsets, the bytes queued
in a pipe, an eventfd's counter (and MAP_SHARED anonymous memory, which
the template copies). No template process is left behind
after --drop, --quit, or when the computation is killed."""

import os
import re
import signal
import subprocess
import time

import pytest

from ckpt_harness import ROOT, app, numbers, reference_output, run
from test_embedding import build
from test_snapshots import (running, take_snapshot, wait_joined,
                            wait_pid_gone)

STEP = r"^step (\d+) "


def template_pid(session, sid):
    r = session.command("--snapshots")
    assert r.returncode == 0, r.stderr
    kinds = {l.split()[0]: l.split()[4] for l in r.stdout.splitlines()}
    m = re.fullmatch(r"template:(\d+)", kinds[sid])
    assert m, "snapshot %s of one process is no template: %s" % (
        sid, kinds[sid])
    return int(m.group(1))


@pytest.mark.time_limit(120)
def test_restore_puts_kernel_state_back(session):
    """Offsets, a pipe's queued bytes, an eventfd counter and MAP_SHARED
    anonymous memory, moved on by the original after the snapshot, are
    the snapshot's after a restore, and an interval timer (which a fork
    does not keep) is armed: the run ends exactly as an uninterrupted
    one."""
    inp = os.path.join(session.dir, "input")
    with open(inp, "wb") as f:
        f.write(bytes((i * 7 + i // 251) % 256 for i in range(3 * 150)))
    argv = [app("offset_pipe_steps"), inp, "150", "10"]
    ref = reference_output(argv, cache=False)
    p = session.launch(argv)
    p.wait_line(STEP, minimum=20)
    seen = max(numbers(p.lines(), STEP))
    sid = take_snapshot(session)
    returned = max(numbers(p.lines(), STEP))
    template_pid(session, sid)
    p.wait_line(STEP, minimum=returned + 30)
    r = session.start([session.tool("ckpt_command"), "--restore", sid],
                      "restore")
    assert r.wait_exit() == 0, "%r %s" % (r.lines()[-3:], r.stderr_text())
    first = numbers(r.lines(), STEP)[0]
    assert seen < first <= returned + 1, (first, seen, returned)
    assert r.lines() == ref[first - 1:], "the restored run differs from " \
        "the uninterrupted run from step %d on" % first


COUNT = r"^count (\d+) "
COUNTER = [app("counter"), "2000", "10"]


@pytest.mark.time_limit(120)
def test_no_template_left(session):
    """--drop ends the snapshot's template; --quit ends the rest; a
    killed computation's coordinator leaves and takes them along."""
    p = session.launch(COUNTER)
    p.wait_line(COUNT, minimum=5)
    a, b = take_snapshot(session), take_snapshot(session)
    ta, tb = template_pid(session, a), template_pid(session, b)
    assert running(ta) and running(tb)
    assert session.command("--drop", a).returncode == 0
    assert wait_pid_gone(ta), "template %d left after --drop" % ta
    assert running(tb)
    assert session.command("--quit").returncode == 0
    assert wait_pid_gone(tb), "template %d left after --quit" % tb
    p.popen.wait(30)

    p = session.launch(COUNTER)
    p.wait_line(COUNT, minimum=5)
    tc = template_pid(session, take_snapshot(session))
    p.sigkill()
    assert wait_pid_gone(tc), "template %d left after the computation was " \
        "killed" % tc


@pytest.mark.time_limit(120)
def test_drop_while_restored_runs(session):
    """A snapshot dropped while a process restored from it runs: its
    ckpt_command still ends with the program's exit status, and the
    template goes once the program ended."""
    argv = [app("counter"), "150", "10"]
    ref = reference_output(argv)
    p = session.launch(argv)
    p.wait_line(COUNT, minimum=5)
    sid = take_snapshot(session)
    tpl = template_pid(session, sid)
    r = session.start([session.tool("ckpt_command"), "--restore", sid],
                      "restore")
    r.wait_line(COUNT)
    assert session.command("--drop", sid).returncode == 0
    assert r.wait_exit() == 0, r.stderr_text()
    assert r.lines()[-1] == ref[-1]
    assert wait_pid_gone(tpl), "template %d left after its restored process " \
        "ended" % tpl


@pytest.mark.time_limit(120)
def test_snapshot_of_a_restored_process(session):
    """A process restored from a template is snapshotted and restored in
    turn: it holds nothing of its template's (no stray descriptor, no
    report pipe), and the second restore ends as an uninterrupted run."""
    inp = os.path.join(session.dir, "input")
    with open(inp, "wb") as f:
        f.write(bytes((i * 11 + 3) % 256 for i in range(3 * 150)))
    argv = [app("offset_pipe_steps"), inp, "150", "10"]
    ref = reference_output(argv, cache=False)
    p = session.launch(argv)
    p.wait_line(STEP, minimum=10)
    before = fd_targets(restored_pid(session))
    first_sid = take_snapshot(session)
    r1 = session.start([session.tool("ckpt_command"), "--restore",
                        first_sid], "restore 1")
    r1.wait_line(STEP)
    wait_joined(session)
    after = fd_targets(restored_pid(session))
    sid = take_snapshot(session)
    returned = max(numbers(r1.lines(), STEP))
    r1.wait_line(STEP, minimum=returned + 20)
    r2 = session.start([session.tool("ckpt_command"), "--restore", sid],
                       "restore 2")
    assert r2.wait_exit() == 0, "%r %s" % (r2.lines()[-3:],
                                           r2.stderr_text())
    assert r1.wait_exit(30) != 0
    first = numbers(r2.lines(), STEP)[0]
    assert first <= returned + 1
    assert r2.lines() == ref[first - 1:]
    p.popen.wait(30)
    assert after == before, "the original's fds %r, the restored " \
        "process's %r" % (before, after)


def fd_targets(pid):
    """The kinds of its fds, stdio and libckpt's own left out (they
    differ by design)."""
    out = []
    for fd in os.listdir("/proc/%d/fd" % pid):
        if int(fd) > 2:
            t = os.readlink("/proc/%d/fd/%s" % (pid, fd))
            out.append(re.sub(r"\[\d+\]", "", t))
    return sorted(out)


def restored_pid(session):
    r = session.command("--list")
    return int(re.search(r"\bpid=(\d+)", r.stdout).group(1))


@pytest.mark.time_limit(120)
@pytest.mark.parametrize("mode", ["recursive-thread", "robust"])
def test_locks_owned_across_restore(session, mode):
    """Locks that record their owner's tid (a recursive mutex held by a
    thread; a robust mutex whose owner exited) are still right in the
    process restored from a template, whose threads have new tids."""
    argv = [app("held_locks"), mode, "60"]
    ref = reference_output(argv)
    p = session.launch(argv)
    p.wait_line(r"^step (\d+)$", minimum=10)
    sid = take_snapshot(session)
    template_pid(session, sid)
    r = session.start([session.tool("ckpt_command"), "--restore", sid],
                      "restore")
    assert r.wait_exit() == 0, "%r %s" % (r.lines()[-3:], r.stderr_text())
    assert r.lines()[-1] == ref[-1]


@pytest.mark.time_limit(120)
def test_restore_stopped(session):
    """--restore --stopped: the restored process stops itself with every
    thread back (for a debugger), its pid said on stderr; SIGCONT lets
    it run to the uninterrupted run's end."""
    argv = [app("threads_steps"), "120", "3"]
    ref = reference_output(argv)
    p = session.launch(argv)
    p.wait_line(STEP, minimum=10)
    threads = len(os.listdir("/proc/%d/task" % restored_pid(session)))
    sid = take_snapshot(session)
    template_pid(session, sid)
    r = session.start([session.tool("ckpt_command"), "--restore", sid,
                       "--stopped"], "restore")
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and \
            "stopped (SIGSTOP)" not in r.stderr_text():
        time.sleep(0.05)
    m = re.search(r"restored process (\d+), stopped", r.stderr_text())
    assert m, r.stderr_text()
    pid = int(m.group(1))
    while time.monotonic() < deadline and proc_state(pid) != "T":
        time.sleep(0.05)
    assert proc_state(pid) == "T", "restored process %d is not stopped" % pid
    assert len(os.listdir("/proc/%d/task" % pid)) == threads, \
        "every thread is back before the stop"
    os.kill(pid, signal.SIGCONT)
    assert r.wait_exit() == 0, r.stderr_text()
    first = numbers(r.lines(), STEP)[0]
    assert r.lines() == ref[first - 1:]


def proc_state(pid):
    with open("/proc/%d/stat" % pid) as f:
        return f.read().rsplit(")", 1)[1].split()[0]


@pytest.mark.time_limit(120)
def test_unreaped_children_survive_restore(session):
    """A process with children not reaped yet (zombies) is snapshotted
    as an image (a template's children are not the program's): after the
    restore it reaps each by its stored pid and finds how it ended."""
    p = session.launch([app("zombie_wait"), "300", "10"])
    p.wait_line(r"^iter (\d+)", minimum=5)
    taken = session.command("--snapshot")
    assert taken.returncode == 0, taken.stderr
    sid = taken.stdout.strip()
    kinds = {l.split()[0]: l.split()[4] for l in
             session.command("--snapshots").stdout.splitlines()}
    assert kinds[sid] == "image", kinds
    assert "its process made none: it has children not reaped yet" in \
        taken.stderr, taken.stderr
    r = session.start([session.tool("ckpt_command"), "--restore", sid],
                      "restore")
    assert r.wait_exit() == 0, "%r %s" % (r.lines()[-3:], r.stderr_text())
    assert r.lines()[-1] == "OK zombies", r.lines()[-3:]


RESTORES_SRC = os.path.join(ROOT, "tests", "embedding", "template_restores.c")


@pytest.mark.time_limit(300)
def test_control_restores_in_a_row(session, tmp_path):
    """Template snapshots restored through libckpt-control one right
    after the other, each restore sent the moment the snapshot answered
    (tests/embedding/template_restores.c): every restored process answers
    with the next number after the snapshot's. A snapshot's answer used
    to come before its template had left the process's tree, and the
    restore's kill of that tree killed the template too (a restore then
    waited 10 s for nothing, in about one round of a hundred)."""
    tool = build(RESTORES_SRC, str(tmp_path / "template_restores"),
                 ["-I" + os.path.join(ROOT, "include")],
                 [os.path.join(ROOT, "build", "lib", "libckpt-control.a")])
    p = session.launch([app("stdin_echo")], stdin=subprocess.PIPE)
    p.wait_line(r"^ready tty=0$")
    os.write(p.popen.stdin.fileno(), b"a\nb\nc\n")
    p.wait_line(r"^echo (\d+) ", minimum=3)
    rounds = 120
    r = run([tool, str(rounds), "3"], 240, env=session.env)
    assert r.returncode == 0, "%s %s" % (r.stdout[-300:], r.stderr)
    assert r.stdout.splitlines() == ["round %d ok" % i
                                     for i in range(1, rounds + 1)]
