# SPDX-License-Identifier: LGPL-2.1-or-later
"""Snapshots (ckpt_command --snapshot / --snapshots / --restore ID /
--drop ID / --checkpoint --from-snapshot ID): a copy of the computation
frozen in memory that it can be set back to, any number of times. An
8-thread program with a mutex, a condition variable and __thread data is
snapshotted, runs on, is restored and ends exactly as an uninterrupted
run; the same snapshot is restored 20 times; a tree of 3 processes with
pipes between them is snapshotted as templates and restored 3 times; a snapshot is written out as ordinary
images that ckpt_restart takes; bad ids fail clearly with the program
running on; snapshots are freed on --drop, --quit and when the
computation ends."""

import os
import re
import signal
import time

import pytest

from ckpt_harness import BackgroundReference, app, numbers, reference_output

STEP = r"^step (\d+) "
THREADS_ARGV = [app("threads_steps"), "240", "4"]


def take_snapshot(session):
    r = session.command("--snapshot")
    assert r.returncode == 0, "ckpt_command --snapshot: exit %d: %s" % (
        r.returncode, r.stderr)
    assert re.fullmatch(r"\d+\n", r.stdout), r.stdout
    return r.stdout.strip()


def snapshot_dirs(session):
    r = session.command("--snapshots")
    assert r.returncode == 0, r.stderr
    return {l.split()[0]: l.split()[3] for l in r.stdout.splitlines()}


def snapshot_kinds(session):
    """id -> "image", "template:PID" or a tree's "templates:PID,..." (the
    5th column of --snapshots)."""
    r = session.command("--snapshots")
    assert r.returncode == 0, r.stderr
    return {l.split()[0]: l.split()[4] for l in r.stdout.splitlines()}


def wait_joined(session, timeout=15):
    """A restored process runs a moment before it has joined the
    coordinator again; a restore kills only processes that joined."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = session.command("--list")
        if "restarted=yes" in r.stdout:
            return
        time.sleep(0.05)
    raise AssertionError("the restored process did not join the "
                         "coordinator: %s" % r.stdout)


def restore(session, sid):
    return session.start([session.tool("ckpt_command"), "--restore", sid],
                         "restore snapshot " + sid)


def assert_continues(lines, regex, last):
    steps = numbers(lines, regex)
    assert steps, lines[-5:]
    assert steps == list(range(steps[0], last + 1)), (
        "steps not consecutive to %d after the restore: %r" % (
            last, steps[:5] + ["..."] + steps[-5:]))
    return steps[0]


@pytest.mark.time_limit(300)
def test_restore_threads_exactly(session):
    """Snapshot at step N, run to M > N, restore: the program goes on
    from N and ends as an uninterrupted run (every thread, its TLS, the
    mutex and condition variable are the snapshot's)."""
    ref = reference_output(THREADS_ARGV)
    p = session.launch(THREADS_ARGV)
    p.wait_line(STEP, minimum=30)
    seen = max(numbers(p.lines(), STEP))
    sid = take_snapshot(session)
    returned = max(numbers(p.lines(), STEP))
    p.wait_line(STEP, minimum=returned + 40)
    assert snapshot_kinds(session)[sid].startswith("template:"), \
        "a single process is snapshotted as a template process"
    r = restore(session, sid)
    assert r.wait_exit() == 0, "%r %s" % (r.lines()[-3:], r.stderr_text())
    assert not p.alive(), "the original computation still runs"
    first = assert_continues(r.lines(), STEP, 240)
    assert seen < first <= returned + 1, (
        "restored at step %d; the snapshot was taken between steps %d and "
        "%d" % (first, seen, returned))
    assert r.lines()[-1] == ref[-1]
    assert r.lines() == ref[first - 1:], "the restored run's output " \
        "differs from the uninterrupted run's from step %d on" % first


@pytest.mark.time_limit(300)
def test_restore_same_snapshot_20_times(session):
    """Each restore ends the running computation and starts again from
    the same moment: the same first step with the same state, 20 times;
    the last one runs to the uninterrupted run's end."""
    argv = [app("threads_steps"), "600", "3"]
    ref = reference_output(argv)
    p = session.launch(argv)
    p.wait_line(STEP, minimum=20)
    sid = take_snapshot(session)
    firsts = set()
    procs = []
    for i in range(20):
        r = restore(session, sid)
        r.wait_line(STEP)
        wait_joined(session)
        firsts.add(r.lines()[0])
        for old in procs:
            rc = old.wait_exit(30)
            assert rc != 0, "restore %d: the computation it replaced " \
                "ended by itself (exit %d): %r %s" % (
                    i, rc, old.lines()[-2:], old.stderr_text()[-300:])
        procs = [r]
    assert len(firsts) == 1, "restores began at different states: %r" % \
        sorted(firsts)
    assert procs[0].wait_exit() == 0, procs[0].stderr_text()
    assert procs[0].lines()[-1] == ref[-1]
    first = numbers(procs[0].lines(), STEP)[0]
    assert procs[0].lines() == ref[first - 1:]


RING = r"^round (\d+)$"
# long enough to be running still when the next restore comes
RING_ARGV = [app("pipe_ring"), "3", "8", "280", "10"]


def running(pid):
    """Alive and not a zombie (a subreaper may not have reaped it yet)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_pid_gone(pid, timeout=15):
    deadline = time.monotonic() + timeout
    while running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not running(pid)


def wait_all_joined(session, nprocs, timeout=30):
    """Every process of a restored tree has joined the coordinator."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = session.command("--list")
        if r.stdout.count("restarted=yes") == nprocs:
            return
        time.sleep(0.05)
    raise AssertionError("the restored tree did not join the "
                         "coordinator: %s" % r.stdout)


@pytest.mark.time_limit(300)
def test_restore_process_tree_with_pipes(session):
    """3 processes (a parent and its children) in a ring of pipes with
    bytes in flight: snapshotted as one template per process, restored
    3 times from it; each restore begins at the snapshot's round and
    the last ends as an uninterrupted run."""
    ref = BackgroundReference(RING_ARGV)    # the ring mostly sleeps
    p = session.launch(RING_ARGV)
    p.wait_line(RING, minimum=20)
    seen = max(numbers(p.lines(), RING))
    taken = session.command("--snapshot")
    assert taken.returncode == 0, taken.stderr
    sid = taken.stdout.strip()
    kind = snapshot_kinds(session)[sid]
    assert re.fullmatch(r"templates:\d+,\d+,\d+", kind), \
        "a tree of 3 is snapshotted as 3 templates, not %r" % kind
    assert "kept as images" not in taken.stderr, taken.stderr
    returned = max(numbers(p.lines(), RING))
    p.wait_line(RING, minimum=returned + 15)
    firsts, procs = set(), [p]
    for i in range(3):
        r = restore(session, sid)
        r.wait_line(RING)
        wait_all_joined(session, 3)
        firsts.add(numbers(r.lines(), RING)[0])
        for old in procs:
            assert old.wait_exit(30) != 0, "restore %d: the computation " \
                "it replaced ended by itself: %r" % (i, old.lines()[-2:])
        procs = [r]
    assert len(firsts) == 1, "restores began at rounds %r" % firsts
    first = firsts.pop()
    assert seen <= first <= returned + 1, (first, seen, returned)
    # dropped while the last restore runs: the templates end, the
    # restored tree keeps the pages it mapped from the images
    dropped = session.command("--drop", sid)
    assert dropped.returncode == 0, dropped.stderr
    for t in kind.split(":")[1].split(","):
        assert wait_pid_gone(int(t)), "template %s outlived --drop" % t
    r = procs[0]
    assert r.wait_exit() == 0, "%r %s" % (r.lines()[-5:], r.stderr_text())
    assert r.lines()[-1] == ref.lines()[-1]
    rounds = numbers(r.lines(), RING)
    assert rounds == list(range(first, rounds[-1] + 1)), rounds[:5]


COUNT = r"^count (\d+) "


@pytest.mark.time_limit(300)
def test_snapshot_written_out_restarts(session):
    """--checkpoint --from-snapshot: ordinary images in $CKPT_DIR that
    ckpt_restart continues from the snapshot's moment."""
    argv = [app("counter"), "200", "10"]
    ref = reference_output(argv)
    p = session.launch(argv)
    p.wait_line(COUNT, minimum=20)
    seen = max(numbers(p.lines(), COUNT))
    sid = take_snapshot(session)
    returned = max(numbers(p.lines(), COUNT))
    r = session.command("--checkpoint", "--from-snapshot", sid)
    assert r.returncode == 0, r.stderr
    images = r.stdout.split()
    assert len(images) == 1 and os.path.dirname(images[0]) == \
        session.ckptdir, images
    session.kill_all()
    p.popen.wait(30)
    rr = session.restart(images)
    assert rr.wait_exit() == 0, rr.stderr_text()
    first = assert_continues(rr.lines(), COUNT, 200)
    assert seen < first <= returned + 1
    assert rr.lines()[-1] == ref[-1]


@pytest.mark.time_limit(300)
def test_tree_snapshot_written_out_restarts(session):
    """--checkpoint --from-snapshot of a tree's templates: each writes
    its image, ckpt_restart rebuilds the ring from the snapshot's
    round."""
    ref = BackgroundReference(RING_ARGV)    # the ring mostly sleeps
    p = session.launch(RING_ARGV)
    p.wait_line(RING, minimum=20)
    seen = max(numbers(p.lines(), RING))
    sid = take_snapshot(session)
    assert snapshot_kinds(session)[sid].startswith("templates:")
    returned = max(numbers(p.lines(), RING))
    r = session.command("--checkpoint", "--from-snapshot", sid)
    assert r.returncode == 0, r.stderr
    images = r.stdout.split()
    assert len(images) == 3 and all(os.path.dirname(i) == session.ckptdir
                                    for i in images), images
    session.kill_all()
    p.popen.wait(30)
    rr = session.restart(images)
    assert rr.wait_exit() == 0, rr.stderr_text()
    rounds = numbers(rr.lines(), RING)
    assert rounds and seen <= rounds[0] <= returned + 1, rounds[:3]
    assert rounds == list(range(rounds[0], rounds[-1] + 1)), rounds[:5]
    assert rr.lines()[-1] == ref.lines()[-1]


@pytest.mark.time_limit(300)
def test_tree_restore_with_a_template_gone(session):
    """A tree's template killed: the restore fails naming it, with no
    hang and no partial tree left running."""
    p = session.launch(RING_ARGV)
    p.wait_line(RING, minimum=5)
    sid = take_snapshot(session)
    kind = snapshot_kinds(session)[sid]
    gone = int(kind.split(":")[1].split(",")[1])
    os.kill(gone, signal.SIGKILL)
    assert wait_pid_gone(gone)
    r = restore(session, sid)
    assert r.wait_exit(60) == 1, r.lines()[-3:]
    assert "the snapshot's template process %d could not write its " \
        "image: it is gone" % gone in r.stderr_text(), r.stderr_text()
    assert not numbers(r.lines(), RING), r.lines()[:3]


@pytest.mark.time_limit(300)
def test_bad_snapshot_use(session):
    """Unknown or malformed ids: a clear error, nothing killed."""
    p = session.launch([app("counter"), "2000", "10"])
    p.wait_line(COUNT, minimum=5)
    for args, code, text in (
            (("--restore", "77"), 1, "no snapshot 77"),
            (("--drop", "77"), 1, "no snapshot 77"),
            (("--checkpoint", "--from-snapshot", "77"), 1,
             "no snapshot 77"),
            (("--restore", "0"), 2, "bad snapshot id '0'"),
            (("--restore", "x1"), 2, "bad snapshot id 'x1'"),
            (("--status", "--from-snapshot", "1"), 2,
             "--from-snapshot goes with --checkpoint")):
        r = session.command(*args)
        assert r.returncode == code and text in r.stderr, (
            args, r.returncode, r.stderr)
    seen = max(numbers(p.lines(), COUNT))
    p.wait_line(COUNT, minimum=seen + 5)
    assert p.alive()


def wait_gone(path, timeout=15):
    deadline = time.monotonic() + timeout
    while os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not os.path.exists(path)


@pytest.mark.time_limit(300)
def test_snapshots_freed(session):
    """--drop frees one; --quit frees the rest with the coordinator;
    when the computation ends the coordinator goes and frees them too."""
    p = session.launch([app("counter"), "2000", "10"])
    p.wait_line(COUNT, minimum=5)
    a, b = take_snapshot(session), take_snapshot(session)
    dirs = snapshot_dirs(session)
    assert set(dirs) == {a, b} and all(os.path.isdir(d)
                                       for d in dirs.values())
    r = session.command("--drop", a)
    assert r.returncode == 0, r.stderr
    assert not os.path.exists(dirs[a]) and os.path.isdir(dirs[b])
    assert set(snapshot_dirs(session)) == {b}
    r = session.command("--quit")
    assert r.returncode == 0, r.stderr
    assert wait_gone(os.path.dirname(dirs[b])), "snapshot directory %s " \
        "left after --quit" % dirs[b]

    p = session.launch([app("counter"), "2000", "10"])
    p.wait_line(COUNT, minimum=5)
    c = take_snapshot(session)
    d = snapshot_dirs(session)[c]
    p.sigkill()
    assert wait_gone(os.path.dirname(d)), "snapshot directory %s left " \
        "after the computation was killed" % d


@pytest.mark.time_limit(300)
def test_in_process_snapshot(session):
    """ckpt_snapshot() from inside: CKPT_CONTINUING with the id in the
    program, CKPT_RESTARTED in the process restored from it."""
    argv = [app("snapshot_self"), "150", "10", "5"]
    p = session.launch(argv)
    p.wait_line(r"^snapshot (\d+)$")
    sid = [l.split()[1] for l in p.lines() if l.startswith("snapshot ")][0]
    p.wait_line(COUNT.replace("count (\\d+) ", "count (\\d+)$"),
                minimum=30)
    r = restore(session, sid)
    assert r.wait_exit() == 0, r.stderr_text()
    assert r.lines()[0] == "restored", r.lines()[:3]
    assert r.lines()[1:] == ["count %d" % k for k in range(11, 151)] + \
        ["done 150"], r.lines()[-3:]
