# SPDX-License-Identifier: LGPL-2.1-or-later
"""A process killed while it writes its image leaves its temporary image
behind, as large as its memory (docs/reliability.md, "Leftovers of failed
checkpoints"). The next restart (or checkpoint) of that computation
removes it, so repeated kills never leave more than the last one.

heap_digest keeps 256 MiB of dirty memory; the test starts a checkpoint,
SIGKILLs the writer as soon as its temporary image appears, restarts from
the previous good image and watches the leftover go."""

import glob
import os
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
from ckpt_harness import COMMAND_TIMEOUT, Session, app, missing_core  # noqa

MIB = 256
ROUND = r"^round (\d+)/"


@pytest.fixture
def session():
    if missing_core():
        pytest.skip("ckpt core not built (run make)")
    s = Session()
    try:
        yield s
    finally:
        s.close()


def temporaries(s):
    return sorted(glob.glob(os.path.join(s.ckptdir,
                                         ".ckpt_heap_digest_*.img.tmp.*")))


def kill_while_writing(s, attempts=5):
    """Start a checkpoint and SIGKILL the writer once its temporary image
    exists. Returns the leftover's path."""
    for _ in range(attempts):
        before = set(temporaries(s))
        cmd = subprocess.Popen(
            [s.tool("ckpt_command"), "--checkpoint"], env=s.env,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE)
        leftover = None
        deadline = time.monotonic() + COMMAND_TIMEOUT
        while cmd.poll() is None and time.monotonic() < deadline:
            new = [t for t in temporaries(s) if t not in before]
            if new:
                leftover = new[0]
                grown_by = time.monotonic() + 2
                while time.monotonic() < grown_by and \
                        os.path.exists(leftover) and \
                        os.stat(leftover).st_size < (MIB // 4) << 20:
                    time.sleep(0.005)
                os.kill(int(leftover.rsplit(".", 1)[1]), 9)
                break
            time.sleep(0.005)
        try:
            cmd.communicate(timeout=COMMAND_TIMEOUT)
        except subprocess.TimeoutExpired:
            cmd.kill()
            cmd.communicate()
            raise AssertionError("ckpt_command --checkpoint did not end "
                                 "after its writer was killed")
        if leftover and os.path.exists(leftover):
            return leftover
        assert leftover is None, "the writer was killed, yet %s is gone " \
            "before any restart" % leftover
        # The checkpoint finished before its temporary was seen: again.
    raise AssertionError("never saw a temporary image being written")


def wait_gone(path, proc, timeout=120):
    deadline = time.monotonic() + timeout
    while os.path.exists(path):
        assert time.monotonic() < deadline, (
            "%s still there %ds after the restart; restart stderr:\n%s"
            % (path, timeout, proc.stderr_text()))
        time.sleep(0.1)


@pytest.mark.time_limit(900)
def test_killed_writers_leave_at_most_one_temporary(session):
    s = session
    p = s.launch([app("heap_digest"), str(MIB), "100000"])
    p.wait_line(ROUND, minimum=1)
    [image] = s.checkpoint()
    good = os.stat(image)
    running = p
    for cycle in range(2):
        leftover = kill_while_writing(s)
        size = os.stat(leftover).st_size
        assert temporaries(s) == [leftover], (
            "cycle %d: temporaries %r, expected only the last killed "
            "writer's" % (cycle, temporaries(s)))
        running.sigkill()
        after = os.stat(image)
        assert (after.st_ino, after.st_mtime_ns) == (
            good.st_ino, good.st_mtime_ns), "the killed checkpoint " \
            "replaced the previous image"
        print("cycle %d: killed writer left %s (%d bytes)"
              % (cycle, os.path.basename(leftover), size))
        running = s.restart([image])
        running.wait_line(ROUND, minimum=1)
        wait_gone(leftover, running)
        assert temporaries(s) == [], temporaries(s)
        assert "removed %s" % os.path.basename(leftover) in \
            running.stderr_text()
    # A checkpoint that completes leaves no temporary either.
    s.checkpoint()
    assert temporaries(s) == []


@pytest.mark.time_limit(300)
def test_round_files_of_rounds_long_over_are_removed(session):
    """Claims (.ckpt_pipe_*, .ckpt_file_*, ...) and tables of shared files
    (.ckpt_shared.g*) that a killed process or a failed round left: the
    next checkpoint removes ours once no round can still use them (an hour
    old here); recent ones, and anyone else's, stay."""
    s = session
    old = time.time() - 2 * 86400
    stale = [".ckpt_pipe_4242.g3", ".ckpt_file_66_77.g3", ".ckpt_shared.g3",
             ".ckpt_sock_99.g17", ".ckpt_fifo_1_2.g5"]
    kept = [".ckpt_pipe_4243.g4", ".ckpt_shared.g4"]        # recent
    foreign = ".ckpt_pipe_4244.g3"                          # not ours
    for name in stale + kept + [foreign]:
        path = os.path.join(s.ckptdir, name)
        with open(path, "wb"):
            pass
        if name not in kept:
            os.utime(path, (old, old))
    if os.geteuid() == 0:
        os.chown(os.path.join(s.ckptdir, foreign), 65534, 65534)
    else:
        os.unlink(os.path.join(s.ckptdir, foreign))
        foreign = kept[0]
    p = s.launch([app("counter"), "100000", "20"])
    p.wait_line(r"^count (\d+) ", minimum=3)
    s.checkpoint()
    left = set(os.listdir(s.ckptdir))
    assert not left & set(stale), sorted(left)
    assert set(kept) | {foreign} <= left, sorted(left)
