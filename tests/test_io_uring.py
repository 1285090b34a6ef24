# SPDX-License-Identifier: LGPL-2.1-or-later
"""A process that used io_uring has io_uring's worker threads among its
tasks (iou-wrk-PID): threads only the kernel runs, with every signal but
SIGKILL and SIGSTOP blocked, that never take the checkpoint signal. The
checkpoint leaves them out (the kernel makes them again when a ring
needs them) instead of failing after the suspend timeout with "thread N
did not stop" (seen with fio --ioengine=io_uring); the ring itself is
named as not restored (docs/resources.md, "File descriptors")."""

import os

import pytest

from ckpt_harness import app, assert_resumed, numbers

PROGRESS = r"^count (\d+) "
STEPS, PAUSE_MS = 300, 20


def worker_threads(pid):
    n = 0
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                n += f.read().startswith("iou-wrk-")
        except OSError:
            pass
    return n


def program_pid(session):
    r = session.command("--list")
    for line in r.stdout.splitlines():
        for word in line.split():
            if word.startswith("pid="):
                return int(word[4:])
    raise AssertionError("no process listed: %r" % r.stdout)


@pytest.mark.time_limit(180)
def test_io_uring_worker_threads_left_out_of_the_checkpoint(session):
    p = session.launch([app("uring_worker"), str(STEPS), str(PAUSE_MS)])
    p.wait_line(r"^uring worker|^count", timeout=30)
    if p.popen.poll() == 3:
        pytest.skip("io_uring is not available here: %s" % p.stderr_text())
    p.wait_line(PROGRESS, minimum=5)
    assert worker_threads(program_pid(session)) >= 1, \
        "the program's io_uring worker thread is gone: the test proves nothing"
    # before the request: a step printed while --checkpoint was still
    # answering (after the image) is one the restart prints again
    seen = max(numbers(p.lines(), PROGRESS))
    r = session.command("--checkpoint")
    assert r.returncode == 0, "the checkpoint failed: %s" % r.stderr
    assert "io_uring" in r.stderr, (
        "the ring is not named as not restored: %r" % r.stderr)
    images = r.stdout.split()
    p.wait_line(PROGRESS, minimum=seen + 3)
    session.kill_all()
    p.wait_exit(30)
    before = numbers(p.lines(), PROGRESS)
    r = session.restart(images)
    r.wait_line(PROGRESS, minimum=seen + 3)
    with open("/proc/%d/maps" % program_pid(session)) as f:
        maps = f.read()
    # the ring's mappings (one inode, offsets 256 MiB apart) are no
    # shared memory to make again: copies, as the loader makes them
    assert "ckpt-shared-memory" not in maps, maps
    rc = r.wait_exit()
    assert rc == 0, r.stderr_text()
    assert_resumed(before, numbers(r.lines(), PROGRESS), PROGRESS, STEPS,
                   seen)
