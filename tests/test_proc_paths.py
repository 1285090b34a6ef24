# SPDX-License-Identifier: LGPL-2.1-or-later
"""Paths under /proc/<pid>/ name the virtual pids: after a restart (where
the real pids differ) /proc/<stored pid>/status, cmdline, exe, fd and
/proc/<pid> itself reach the restarted process, status and stat show the
virtual pids, and the checkpoint signal (a real-time signal these
programs have no handler for) never shows in the signal masks of status,
before or after a checkpoint."""

import os
import re
import signal
import subprocess

import pytest

from ckpt_harness import app, numbers

ITER = 150
DELAY_MS = "20"
STEP = r"^step (\d+)"
REALTIME_BITS = ((1 << 64) - 1) & ~((1 << 33) - 1)   # signals 34..64


def assert_finished(r, rc, last):
    lines = r.lines()
    assert rc == 0 and lines and lines[-1] == last, (
        "exit %d, last lines %r, stderr:\n%s" % (rc, lines[-5:],
                                                r.stderr_text()))
    assert not any(l.startswith("FAIL") for l in lines), lines


def checkpoint_at_step(session, p, step, nimages):
    start = p.wait_line(r"^start (\d+) (\d+)$")
    p.wait_line(STEP, minimum=step)
    seen = max(numbers(p.lines(), STEP))
    images = session.checkpoint(expect_images=nimages)
    assert p.alive(), p.stderr_text()
    return images, seen, (int(start.group(1)), int(start.group(2)))


def assert_continued(lines, seen, before_last):
    after = numbers(lines, STEP)
    assert after, "the restarted program printed no step"
    assert seen < after[0] <= before_last + 1, (after[0], seen, before_last)
    assert after == list(range(after[0], ITER + 1)), after[:5]


@pytest.mark.time_limit(300)
def test_proc_paths_after_restart(session):
    """Checkpoint, kill, restart: the old real pids are gone, so an
    untranslated /proc/<stored pid> fails; the kept /proc descriptors
    come back naming the new processes."""
    p = session.launch([app("proc_paths"), str(ITER), DELAY_MS])
    images, seen, _ = checkpoint_at_step(session, p, 20, 2)
    assert not any(l.startswith("FAIL") for l in p.lines()), p.lines()
    session.kill_all()
    p.popen.wait(30)
    assert p.out.wait_closed(15), "the program outlived ckpt_command --kill"
    before = numbers(p.lines(), STEP)
    r = session.restart(images)
    assert_finished(r, r.wait_exit(), "OK proc paths")
    assert_continued(r.lines(), seen, before[-1])


@pytest.mark.time_limit(300)
def test_proc_paths_while_the_original_holds_the_pids(session):
    """The original stays (stopped) on every stored pid while its copy
    restarts: /proc/<stored pid> must reach the copy, never the original
    (the copy's checks fail on a stopped child or a foreign /proc dir)."""
    p = session.launch([app("proc_paths"), str(ITER), DELAY_MS])
    images, seen, pids = checkpoint_at_step(session, p, 20, 2)
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        r = session.restart(images)
        rc = r.wait_exit()
    finally:
        # The child first: the parent must never see it stopped.
        for pid in reversed(pids):
            os.kill(pid, signal.SIGCONT)
    assert r.pid not in pids
    assert_finished(r, rc, "OK proc paths")
    assert_continued(r.lines(), seen, ITER)
    assert_finished(p, p.wait_exit(), "OK proc paths")


BASH_SCRIPT = r"""
for ((i = 1; i <= $1; i++)); do
    pid= cgt= spid=
    while read -r k v rest; do
        case $k in
        Pid:) pid=$v ;;
        SigCgt:) cgt=$v ;;
        esac
    done < /proc/$$/status
    read -r spid rest < /proc/self/stat
    echo "step $i pid $pid self $$ stat $spid sigcgt $cgt"
    for ((j = 0; j < 3000; j++)); do :; done   # no fork: no sleep(1)
done
echo "final"
"""

PYTHON_SCRIPT = r"""
import os, sys, time
for i in range(1, int(sys.argv[1]) + 1):
    with open("/proc/%d/status" % os.getpid()) as f:
        st = dict(l.split(":", 1) for l in f.read().splitlines())
    with open("/proc/self/stat") as f:
        spid = f.read().split()[0]
    ok = int(st["PPid"]) == os.getppid() and os.readlink("/proc/self") == \
        str(os.getpid())
    print("step %d pid %s self %d stat %s sigcgt %s ppid %s" % (
        i, st["Pid"].strip(), os.getpid(), spid, st["SigCgt"].strip(),
        "ok" if ok else "bad"), flush=True)
    time.sleep(0.02)
print("final", flush=True)
"""

PROGRAMS = [
    ("bash", ["/bin/bash", "-c", BASH_SCRIPT, "bash", str(ITER)]),
    ("python3", ["/usr/bin/python3", "-c", PYTHON_SCRIPT, str(ITER)]),
]
LINE = re.compile(r"^step (\d+) pid (\d+) self (\d+) stat (\d+) "
                  r"sigcgt ([0-9a-f]{16})( ppid ok)?$")


def check_lines(lines, name):
    steps = [l for l in lines if l.startswith("step ")]
    assert steps, "%s printed no step" % name
    pids = set()
    for l in steps:
        m = LINE.match(l)
        assert m and (name != "python3" or m.group(6)), (
            "%s: unexpected line %r" % (name, l))
        assert m.group(2) == m.group(3) == m.group(4), (
            "%s: /proc shows another pid than the program's own: %r" % (
                name, l))
        assert not int(m.group(5), 16) & REALTIME_BITS, (
            "%s: SigCgt shows the checkpoint signal: %r" % (name, l))
        pids.add(m.group(3))
    return pids


@pytest.mark.time_limit(300)
@pytest.mark.parametrize("name,argv", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_real_program_reads_its_status(session, name, argv):
    if not os.path.exists(argv[0]):
        pytest.fail("%s is not installed" % argv[0])
    p = session.launch(argv, name="launch " + name)
    p.wait_line(STEP, minimum=20)
    seen = max(numbers(p.lines(), STEP))
    images = session.checkpoint()
    session.kill_all()
    p.popen.wait(30)
    assert p.out.wait_closed(15), "%s outlived ckpt_command --kill" % name
    before = p.lines()
    r = session.restart(images)
    rc = r.wait_exit()
    assert rc == 0 and r.lines()[-1:] == ["final"], (
        "exit %d, last lines %r, stderr:\n%s" % (rc, r.lines()[-5:],
                                                r.stderr_text()))
    pids_before = check_lines(before, name)
    pids_after = check_lines(r.lines(), name)
    assert pids_before == pids_after and len(pids_after) == 1, (
        pids_before, pids_after)
    assert r.pid != int(pids_after.pop()), (
        "the restarted %s runs on its old pid: the test proves nothing"
        % name)
    assert_continued(r.lines(), seen, numbers(before, STEP)[-1])


KEEP_SCRIPT = r"""
import os, sys, time
fd = os.open("/proc/%s/status" % sys.argv[1], os.O_RDONLY)
for i in range(1, int(sys.argv[2]) + 1):
    print("step %d" % i, flush=True)
    time.sleep(0.02)
print("final", flush=True)
"""


@pytest.mark.time_limit(300)
def test_proc_fd_of_a_vanished_process(session):
    """A descriptor of /proc/<pid>/status of a process that is gone at
    the restart becomes /dev/null with one warning; the program goes on."""
    sleeper = subprocess.Popen(["sleep", "120"])
    try:
        p = session.launch(["/usr/bin/python3", "-c", KEEP_SCRIPT,
                            str(sleeper.pid), str(ITER)])
        p.wait_line(STEP, minimum=20)
        seen = max(numbers(p.lines(), STEP))
        images = session.checkpoint()
        session.kill_all()
        p.popen.wait(30)
    finally:
        sleeper.kill()
        sleeper.wait()
    r = session.restart(images)
    rc = r.wait_exit()
    assert rc == 0 and r.lines()[-1:] == ["final"], (
        "exit %d, last lines %r, stderr:\n%s" % (rc, r.lines()[-5:],
                                                r.stderr_text()))
    assert_continued(r.lines(), seen, numbers(p.lines(), STEP)[-1])
    assert re.search(r"fd \d+ \(/proc/%d/status\): .*replaced by /dev/null"
                     % sleeper.pid, r.stderr_text()), r.stderr_text()
