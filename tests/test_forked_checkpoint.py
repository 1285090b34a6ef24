# SPDX-License-Identifier: LGPL-2.1-or-later
"""Forked checkpoints (ckpt_launch --forked, ckpt_command --checkpoint
--forked): each process stops only to fork a frozen copy of itself that
writes and syncs its image while the program runs on. The images restart
exactly like ordinary ones; memory shared between processes and pipes
between them are saved at the one moment every process stopped; the copy
is no child the program sees, and none is left behind; a copy that cannot
be forked fails the checkpoint clearly, the program runs on and the
previous image stays."""

import hashlib
import os
import shutil

import pytest

import ckpt_harness
from ckpt_harness import (app, checkpoint_and_kill, numbers,
                          reference_output, restart_to_end,
                          tail_after_progress)


def children_of(pid):
    """The pids whose parent is pid (the copy's parent is the process)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(name))
    return found


def forked_checkpoint(session, expect_images=1):
    r = session.command("--checkpoint", "--forked")
    assert r.returncode == 0, "ckpt_command --checkpoint --forked: exit " \
        "%d; stderr:\n%s" % (r.returncode, r.stderr)
    images = r.stdout.split()
    assert len(images) == expect_images, r.stdout
    for img in images:
        ckpt_harness.check_image(img, session.ckptdir)
    return images


HEAP = r"^round (\d+)/"
HEAP_ROUNDS = 12
HEAP_ARGV = [app("heap_digest"), "256", str(HEAP_ROUNDS)]


@pytest.mark.time_limit(300)
def test_forked_256mib_kill_restart(session):
    """ckpt_launch --forked: a 256 MiB process, checkpointed, killed and
    restarted, ends with the digest of an uninterrupted run; the copy
    that wrote the image is gone once the checkpoint returned."""
    ref = reference_output(HEAP_ARGV)
    p = session.launch(HEAP_ARGV, extra=["--forked"])
    p.wait_line(HEAP, minimum=1)
    seen = max(numbers(p.lines(), HEAP))
    images = session.checkpoint()
    assert children_of(p.pid) == [], (
        "the checkpoint copy outlived the checkpoint: %r" %
        children_of(p.pid))
    assert os.path.getsize(images[0]) >= 256 << 20
    p.sigkill()
    before = numbers(p.lines(), HEAP)
    r, first = restart_to_end(session, images, HEAP, HEAP_ROUNDS, seen,
                              before)
    assert tail_after_progress(r.lines(), HEAP) == \
        tail_after_progress(ref, HEAP)


@pytest.mark.time_limit(300)
def test_forked_shared_memory_saved_at_one_moment(session):
    """MAP_SHARED memory is not frozen by fork: the copy takes its own
    before the processes resume. Two children count in memory shared with
    their 64 MiB parent and in their own; after a forked checkpoint, kill
    and restart, the shared counter still equals their own counts."""
    limit = 2000000
    p = session.launch([app("shm_ledger"), str(limit), "64"])
    p.wait_line(r"^progress (\d+)$", minimum=200000)
    images = forked_checkpoint(session, expect_images=3)
    session.kill_all()
    p.popen.wait(30)
    r = session.restart(images)
    assert r.wait_exit() == 0, "%r %s" % (r.lines()[-3:], r.stderr_text())
    last = r.lines()[-1].split()
    assert last[0] == "total" and last[2] == "sum", r.lines()[-3:]
    assert int(last[1]) >= limit and last[1] == last[3], r.lines()[-1]


RING = r"^round (\d+)$"
RING_ARGV = [app("pipe_ring"), "3", "8", "90", "3"]


@pytest.mark.time_limit(300)
def test_forked_pipe_ring(session):
    """Pipes drained before the fork and refilled at the resume: a ring
    of 3 processes passing tokens runs on after a forked checkpoint (the
    copies hold no end of its pipes) and restarts to the result of an
    uninterrupted run."""
    ref = reference_output(RING_ARGV)
    p = session.launch(RING_ARGV)
    p.wait_line(RING, minimum=25)
    images = forked_checkpoint(session, expect_images=3)
    seen = max(numbers(p.lines(), RING))
    p.wait_line(RING, minimum=seen + 15)
    session.kill_all()
    p.popen.wait(30)
    assert not any(l.startswith("FAIL") for l in p.lines()), p.lines()[-3:]
    r = session.restart(images)
    assert r.wait_exit() == 0, "%r %s" % (r.lines()[-5:], r.stderr_text())
    assert r.lines()[-1] == ref[-1]


TICK = r"^tick (\d+) "


@pytest.mark.time_limit(300)
def test_forked_copy_is_no_child_of_the_program(session):
    """The program's waitpid(-1) never reaps the copy and no SIGCHLD
    reaches it, over three forked checkpoints."""
    p = session.launch([app("child_watch"), "150", "20"],
                       extra=["--forked"])
    for at in (10, 30, 50):
        p.wait_line(TICK, minimum=at)
        session.checkpoint()
    assert p.wait_exit() == 0, p.stderr_text()
    assert p.lines()[-1] == "done 150 sigchld 0 reaped 0", p.lines()[-3:]


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def set_nproc(session, pid, soft):
    """As the process's own user: prlimit on another user's process needs
    CAP_SYS_RESOURCE, which root may lack (containers)."""
    r = ckpt_harness.run(session._argv(["prlimit", "--pid", str(pid),
                                        "--nproc=%s:" % soft]), 15)
    assert r.returncode == 0, r.stderr


def nproc_hard(pid):
    with open("/proc/%d/limits" % pid) as f:
        for line in f:
            if line.startswith("Max processes"):
                return line.split()[3]
    raise AssertionError("no Max processes line in /proc/%d/limits" % pid)


@pytest.mark.time_limit(300)
def test_fork_failing_fails_the_checkpoint_only(apps_only):
    """How a fork is made to fail without cgroups: the process runs as an
    unprivileged user (root is exempt) and its RLIMIT_NPROC soft limit is
    lowered to 1 (prlimit --pid), so any clone fails with EAGAIN. The
    forked checkpoint fails naming the copy, the program runs on, the
    previous image is untouched; with the limit back, the next forked
    checkpoint works and restarts."""
    if os.geteuid() == 0 and not shutil.which("setpriv"):
        pytest.skip("setpriv (util-linux) is needed to drop root")
    progress = r"^count (\d+) "
    s, (counter,) = ckpt_harness.unprivileged_session([app("counter")])
    try:
        p = s.launch([counter, "300", "10"])
        p.wait_line(progress, minimum=20)
        good = s.checkpoint()
        digest = sha256(good[0])
        set_nproc(s, p.pid, 1)
        seen = max(numbers(p.lines(), progress))
        r = s.command("--checkpoint", "--forked")
        assert r.returncode != 0, r.stdout
        assert "forking the checkpoint copy" in r.stderr and \
            "Resource temporarily unavailable" in r.stderr, r.stderr
        assert p.alive(), p.stderr_text()
        p.wait_line(progress, minimum=seen + 10)
        assert sha256(good[0]) == digest, "the failed checkpoint " \
            "changed the previous image"
        left = [n for n in os.listdir(s.ckptdir) if ".tmp" in n]
        assert left == [], left
        set_nproc(s, p.pid, nproc_hard(p.pid))
        images, seen, before = checkpoint_and_kill(s, p, progress,
                                                   seen + 20)
        assert images == good
        r2, _ = restart_to_end(s, images, progress, 300, seen, before)
        assert r2.lines()[-1] == \
            reference_output([app("counter"), "300", "10"])[-1]
    finally:
        s.close()


RECORD = r"^record (\d+)$"


@pytest.mark.time_limit(300)
def test_forked_deleted_file_offset(session):
    """What the copy may not read after the resume: the offset of a file
    the program goes on reading (its open file description is shared with
    the copy) and the content of a deleted file (copied into memory before
    the resume, from another file system than the memfd's). The restart
    reads on from the checkpoint's offset."""
    count = 200
    inp, log = session.path("in.txt"), session.path("log.txt")
    lines = ["rec %04d %s" % (i, "abcdefghijklmnopqrstuvwxyz"[:(i * 7) % 23])
             for i in range(1, count + 1)]
    with open(inp, "w") as f:
        f.write("".join(l + "\n" for l in lines))
    ref = reference_output([app("file_offset_log"), inp,
                            session.path("ref-log.txt"), "0"])
    p = session.launch([app("file_offset_log"), inp, log, "10"],
                       extra=["--forked"])
    p.wait_line(r"^reading ")
    os.unlink(inp)
    images, seen, before = checkpoint_and_kill(session, p, RECORD, 30)
    r, first = restart_to_end(session, images, RECORD, count, seen, before)
    assert tail_after_progress(r.lines(), RECORD) == \
        tail_after_progress(ref, RECORD)
    with open(log) as f:
        assert f.read().splitlines()[-1] == "got " + lines[-1]


@pytest.mark.time_limit(300)
def test_copy_write_error_keeps_previous_image(session):
    """The copy fails to write (RLIMIT_FSIZE of the process lowered to
    64 KiB with prlimit: the copy inherits it, its writes fail with EFBIG,
    the signal being blocked): the checkpoint fails naming the copy and
    the reason, the program runs on, the previous image is untouched and
    no temporary file is left; with the limit back the next one works."""
    progress = r"^count (\d+) "
    p = session.launch([app("counter"), "2000", "10"], extra=["--forked"])
    p.wait_line(progress, minimum=10)
    good = session.checkpoint()
    digest = sha256(good[0])
    r = ckpt_harness.run(["prlimit", "--pid", str(p.pid),
                          "--fsize=65536:"], 15)
    assert r.returncode == 0, r.stderr
    seen = max(numbers(p.lines(), progress))
    r = session.command("--checkpoint")
    assert r.returncode != 0, r.stdout
    assert "the checkpoint copy writing the image" in r.stderr and \
        "File too large" in r.stderr, r.stderr
    p.wait_line(progress, minimum=seen + 10)
    assert sha256(good[0]) == digest
    assert [n for n in os.listdir(session.ckptdir) if ".tmp" in n] == []
    r = ckpt_harness.run(["prlimit", "--pid", str(p.pid),
                          "--fsize=unlimited:"], 15)
    assert r.returncode == 0, r.stderr
    assert session.checkpoint() == good
