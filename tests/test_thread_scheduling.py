# SPDX-License-Identifier: LGPL-2.1-or-later
"""What the kernel keeps per thread about its scheduling, lost when the
restart makes the threads again (libckpt-preload/threads.c,
capture_scheduling / restore_scheduling): the CPU affinity (HPC programs
pin their threads and ranks), the nice value (per thread on Linux) and a
policy that needs no privilege (SCHED_BATCH). After a
restart each thread reads back what it had set."""

import os

import pytest

from ckpt_harness import checkpoint_and_kill, numbers

PYTHON = "/usr/bin/python3"
PROGRAM = r"""
import os, sys, threading, time
last = max(os.sched_getaffinity(0))
out = threading.Lock()
def say(line):
    with out:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
def report(who):
    return "%s cpus %s nice %d policy %d" % (
        who, ",".join(map(str, sorted(os.sched_getaffinity(0)))),
        os.getpriority(os.PRIO_PROCESS, 0), os.sched_getscheduler(0))
def worker():
    os.sched_setaffinity(0, {last})
    os.setpriority(os.PRIO_PROCESS, 0, 7)
    os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
    for n in range(1, 1000000):
        say("round %d %s" % (n, report("worker")))
        time.sleep(0.05)
os.sched_setaffinity(0, {0})
os.setpriority(os.PRIO_PROCESS, 0, 3)
threading.Thread(target=worker, daemon=True).start()
for k in range(1, int(sys.argv[1]) + 1):
    say("step %d %s" % (k, report("main")))
    time.sleep(0.05)
"""
STEP = r"^step (\d+) main"
ROUND = r"^round (\d+) worker"


@pytest.mark.time_limit(120)
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2,
                    reason="needs two CPUs to tell an affinity apart")
def test_affinity_nice_and_policy_of_each_thread_come_back(session):
    # SCHED_BATCH, not SCHED_IDLE: an idle-class thread starves beside
    # a loaded machine's other work
    last = max(os.sched_getaffinity(0))
    main = "main cpus 0 nice 3 policy %d" % os.SCHED_OTHER
    worker = "worker cpus %d nice 7 policy %d" % (last, os.SCHED_BATCH)
    p = session.launch([PYTHON, "-c", PROGRAM, "100000"])
    p.wait_line(ROUND, minimum=2, timeout=60)
    images, _, before = checkpoint_and_kill(session, p, STEP, 5)
    assert any(l.endswith(main) for l in p.lines()), p.lines()[-4:]
    assert any(l.endswith(worker) for l in p.lines()), p.lines()[-4:]
    rounds = numbers(p.lines(), ROUND)
    r = session.restart(images)
    r.wait_line(STEP, minimum=before[-1] + 5, timeout=60)
    r.wait_line(ROUND, minimum=rounds[-1] + 3, timeout=60)
    lines = r.lines()
    steps = [l for l in lines if l.startswith("step ")]
    assert steps and all(l.endswith(main) for l in steps), steps[-3:]
    work = [l for l in lines if l.startswith("round ")]
    assert work and all(l.endswith(worker) for l in work), work[-3:]
    assert "cannot be set again" not in r.stderr_text(), r.stderr_text()
    session.kill_all()
