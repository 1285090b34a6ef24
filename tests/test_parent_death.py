# SPDX-License-Identifier: LGPL-2.1-or-later
"""Per-thread and per-process marks the kernel keeps only in the live
process (libckpt-preload/threads.c, process.c): a worker's parent death
signal (PR_SET_PDEATHSIG: servers and process pools start workers that
must die with them; a restart's fork clears it), the child subreaper
mark (PR_SET_CHILD_SUBREAPER) and "not dumpable" (PR_SET_DUMPABLE 0:
agents holding keys forbid ptrace and core dumps). After a restart both read as before, and
the worker dies of its signal when its restored parent is killed (before,
it ran on as an orphan)."""

import os
import signal
import time

import pytest

from ckpt_harness import numbers

PYTHON = "/usr/bin/python3"
PROGRAM = r"""
import ctypes, os, signal, sys, time
libc = ctypes.CDLL(None, use_errno=True)
PR_SET_PDEATHSIG, PR_GET_PDEATHSIG = 1, 2
PR_SET_CHILD_SUBREAPER, PR_GET_CHILD_SUBREAPER = 36, 37
def get(op):
    v = ctypes.c_int(0)
    libc.prctl(op, ctypes.byref(v), 0, 0, 0)
    return v.value
PR_GET_DUMPABLE, PR_SET_DUMPABLE = 3, 4
assert libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
assert libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0    # as agents do
pid = os.fork()
if pid == 0:
    assert libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) == 0
    for k in range(1, 100000):
        print("worker %d pid %d pdeathsig %d" % (k, os.getpid(),
              get(PR_GET_PDEATHSIG)), flush=True)
        time.sleep(0.05)
    os._exit(0)
for k in range(1, 100000):
    print("parent %d subreaper %d dumpable %d" % (
          k, get(PR_GET_CHILD_SUBREAPER),
          libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0)), flush=True)
    time.sleep(0.05)
"""
WORKER = r"^worker (\d+) pid \d+ pdeathsig (\d+)$"
PARENT = r"^parent (\d+) subreaper (\d+) dumpable (\d+)$"


def real_pid_of_worker(parent_pid):
    with open("/proc/%d/task/%d/children" % (parent_pid, parent_pid)) as f:
        kids = [int(x) for x in f.read().split()]
    assert len(kids) == 1, kids
    return kids[0]


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in "ZX"
    except OSError:
        return False


@pytest.mark.time_limit(120)
def test_parent_death_signal_and_subreaper_come_back(session):
    p = session.launch([PYTHON, "-c", PROGRAM])
    p.wait_line(WORKER, minimum=5)
    session.wait_members(2)
    images = session.checkpoint(expect_images=2)
    session.kill_all()
    p.wait_exit(30)
    assert any(l.endswith("dumpable 0") for l in p.lines()), p.lines()[-3:]

    r = session.restart(images)
    w = r.wait_line(WORKER, minimum=numbers(p.lines(), WORKER)[-1] + 3,
                    timeout=30)
    assert w.group(2) == str(int(signal.SIGTERM)), w.group(0)
    m = r.wait_line(PARENT, minimum=numbers(p.lines(), PARENT)[-1] + 3,
                    timeout=30)
    assert m.group(2) == "1" and m.group(3) == "0", m.group(0)
    # one root: ckpt_restart became the restored parent
    parent = r.pid
    worker = real_pid_of_worker(parent)
    os.kill(parent, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while alive(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(worker), "the worker outlived its killed parent"
    session.kill_all()
