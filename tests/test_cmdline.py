# SPDX-License-Identifier: LGPL-2.1-or-later
"""A restarted process shows its own command line: /proc/PID/cmdline (so
`ps -o args` and `pgrep -f`), /proc/PID/environ and the names of its
threads are the program's, not `[python3]`, after one restart and after a
second one. The programs check /proc/self from inside at every step; the
test checks ps and pgrep from outside. The environment mark is not in
ckpt_restart's own environment, so only the saved one can show it."""

import os
import uuid

import pytest

from ckpt_harness import (app, assert_resumed, checkpoint_and_kill,
                          numbers, run)

N = 500
STEP = r"^step (\d+)$"

PY_CHECK = r'''
import os, sys, time
n, pause = int(sys.argv[1]), float(sys.argv[2])
want = b"".join(os.fsencode(a) + b"\0" for a in sys.orig_argv)
mark = b"CMDLINE_MARK=" + os.environb[b"CMDLINE_MARK"]
for k in range(1, n + 1):
    with open("/proc/self/cmdline", "rb") as f:
        got = f.read()
    if got != want:
        print("FAIL cmdline: got %r, want %r" % (got, want), flush=True)
        sys.exit(1)
    with open("/proc/self/environ", "rb") as f:
        if mark not in f.read().split(b"\0"):
            print("FAIL environ: no %r" % mark, flush=True)
            sys.exit(1)
    print("step %d" % k, flush=True)
    time.sleep(pause)
print("done %d" % n, flush=True)
'''


def outside_view(pid, argv, token):
    """What ps and pgrep show of pid."""
    ps = run(["ps", "-o", "args=", "-p", str(pid)], 30).stdout.strip()
    assert ps == " ".join(argv), (
        "ps -o args= -p %d shows %r, expected the original command line "
        "%r" % (pid, ps, " ".join(argv)))
    pg = run(["pgrep", "-f", token], 30).stdout.split()
    assert pg == [str(pid)], "pgrep -f %s: %r, expected [%d]" % (
        token, pg, pid)


def thread_names(pid):
    task = "/proc/%d/task" % pid
    names = set()
    for tid in os.listdir(task):
        try:
            with open(os.path.join(task, tid, "comm")) as f:
                names.add(f.read().strip())
        except OSError:
            pass
    return names


def restart_twice(session, argv, token, names=()):
    session.env["CMDLINE_MARK"] = token
    p = session.launch(argv)
    del session.env["CMDLINE_MARK"]
    proc, checkpoint_at = p, 20
    for cycle in (1, 2):
        images, seen, before = checkpoint_and_kill(session, proc, STEP,
                                                   checkpoint_at,
                                                   kill="command")
        r = session.restart(images)
        r.wait_line(STEP, minimum=seen + 3)
        outside_view(r.pid, argv, token)
        assert set(names) <= thread_names(r.pid), (
            "restart %d: thread names %r, expected %r among them" % (
                cycle, thread_names(r.pid), set(names)))
        after = numbers(r.lines(), STEP)
        assert after and seen < after[0] <= before[-1] + 1, (
            "restart %d resumed at %r after checkpoint at %d" % (
                cycle, after[:1], seen))
        proc, checkpoint_at = r, seen + 20
    rc = r.wait_exit()
    lines = r.lines()
    assert rc == 0 and lines[-1] == "done %d" % N, (
        "exit %d, last lines %r, stderr:\n%s" % (rc, lines[-3:],
                                                r.stderr_text()))
    assert_resumed(before, numbers(lines, STEP), STEP, N, seen)
    assert "cmdline" not in r.stderr_text(), r.stderr_text()


@pytest.mark.time_limit(300)
def test_c_program_keeps_its_command_line(session):
    token = "cmdline-token-" + uuid.uuid4().hex[:12]
    argv = [app("cmdline_check"), str(N), "10", token, "--x=y"]
    restart_twice(session, argv, token,
                  names=("cmdline-main", "cmdline-worker"))


@pytest.mark.time_limit(300)
def test_python_keeps_its_command_line(session):
    token = "cmdline-token-" + uuid.uuid4().hex[:12]
    script = session.path("check_cmdline.py")
    with open(script, "w") as f:
        f.write(PY_CHECK)
    argv = ["/usr/bin/python3", script, str(N), "0.01", token]
    restart_twice(session, argv, token)


def descendants(pid):
    out = [pid]
    for child in run(["pgrep", "-P", str(pid)], 30).stdout.split():
        out += descendants(int(child))
    return out


@pytest.mark.time_limit(300)
def test_process_tree_keeps_command_lines(session):
    """Every process of a restarted tree (each exec'd the loader in a
    forked child of ckpt_restart) shows the command line it had."""
    argv = [app("proc_tree"), "400", "20"]
    p = session.launch(argv)
    p.wait_line(r"^parent (\d+)$", minimum=20)
    images = session.checkpoint(expect_images=4)
    session.kill_all()
    p.popen.wait(30)
    r = session.restart(images)
    r.wait_line(r"^parent (\d+)$")
    pids = descendants(r.pid)
    assert len(pids) >= 3, "restarted tree: %r" % pids
    for pid in pids:
        ps = run(["ps", "-o", "args=", "-p", str(pid)], 30).stdout.strip()
        assert ps in (" ".join(argv), ""), (   # "": it just exited
            "process %d shows %r" % (pid, ps))
    session.kill_all()
