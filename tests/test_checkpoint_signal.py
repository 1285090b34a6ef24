# SPDX-License-Identifier: LGPL-2.1-or-later
"""The checkpoint signal stays out of the program's way: ckpt takes a
real-time signal the program does not use and moves to another one when
the program installs a handler for it (the JDK takes SIGRTMAX-2), across
checkpoints and restarts; SIG_DFL and SIG_IGN on it are accepted without
a word (git resets every signal before an exec); nothing is said on
stderr."""

import errno
import os
import shutil
import signal
import subprocess

import pytest

from ckpt_harness import (BackgroundReference, app, numbers,
                          reference_output, tail_after_progress)

ITER = 240
ITER_RX = r"^iter (\d+)$"
JAVA_SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "java",
                        "NioLoop.java")


def assert_quiet(proc):
    err = proc.stderr_text()
    assert "reserved" not in err and "signal" not in err, (
        "%s said on stderr:\n%s" % (proc.name, err))


def checkpoint_kill(session, proc, progress, at, nimages, quiet=True):
    """Checkpoint once progress reaches `at`, kill the computation; the
    images and the last progress number printed before the kill."""
    proc.wait_line(progress, minimum=at)
    seen = max(numbers(proc.lines(), progress))
    images = session.checkpoint(expect_images=nimages)
    session.kill_all()
    proc.popen.wait(30)
    if quiet:
        assert_quiet(proc)
    return images, seen, max(numbers(proc.lines(), progress))


def two_cycles(session, argv, progress, last, nimages=1, gap=25):
    """Run argv under ckpt, checkpoint -> kill -> restart twice; return
    the last restarted process, finished."""
    p = session.launch(argv)
    images, seen, _ = checkpoint_kill(session, p, progress, gap, nimages)
    r = session.restart(images)
    images, seen, killed_at = checkpoint_kill(session, r, progress,
                                              seen + 2 * gap, nimages)
    assert killed_at < last, "the first restart ran to the end"
    r2 = session.restart(images)
    rc = r2.wait_exit()
    assert rc == 0, "%s: exit %d, last lines %r, stderr:\n%s" % (
        r2.name, rc, r2.lines()[-5:], r2.stderr_text())
    assert_quiet(r2)
    after = numbers(r2.lines(), progress)
    assert after and seen < after[0] <= killed_at + 1, (after[:3], seen)
    assert after == list(range(after[0], last + 1)), after[:5]
    return r2


@pytest.mark.time_limit(300)
def test_program_takes_the_signals_ckpt_wanted(session):
    """Handlers on SIGRTMAX-2, SIGRTMAX, SIGRTMAX-1, ... (the one ckpt
    uses at start among them, and one more every 20 iterations after
    each restart), every delivery counted, a worker thread with every
    signal blocked: restarted twice, the output ends exactly as a run
    without ckpt."""
    argv = [app("signal_claims"), str(ITER)]
    want = reference_output(argv)
    r = two_cycles(session, argv, ITER_RX, ITER)
    assert tail_after_progress(r.lines(), ITER_RX) == \
        tail_after_progress(want, ITER_RX), r.lines()[-4:]


@pytest.mark.time_limit(300)
def test_reset_every_signal_then_exec(session):
    """git's run-command resets signals 1..64 to SIG_DFL in the child
    before exec: no word about the checkpoint signal, and the program it
    execs still checkpoints and restarts (twice)."""
    argv = [app("reset_signals_exec"), app("counter"), "300", "20"]
    want = reference_output(argv)
    r = two_cycles(session, argv, r"^count (\d+) ", 300, nimages=2)
    assert r.lines()[-2:] == want[-2:], (r.lines()[-3:], want[-2:])


@pytest.mark.time_limit(600)
@pytest.mark.skipif(not (shutil.which("java") and shutil.which("javac")),
                    reason="java and javac not installed (Debian package "
                    "openjdk-17-jdk-headless)")
def test_java_nio_file_io(session):
    """The JDK interrupts threads blocked in NIO with SIGRTMAX-2; with
    ckpt holding that signal Files.write threw at once. Files.write and a
    FileChannel in a loop, restarted twice, end as a run without ckpt."""
    classes = session.path("classes")
    os.mkdir(classes)
    r = subprocess.run(["javac", "-d", classes, JAVA_SRC], timeout=300,
                       capture_output=True, text=True)
    assert r.returncode == 0, "javac: %s" % r.stderr
    native_dir, ckpt_dir = session.path("native"), session.path("ckpt-run")
    os.mkdir(native_dir)
    os.mkdir(ckpt_dir)
    steps = 400
    java = ["java", "-cp", classes, "NioLoop", str(steps)]
    want = BackgroundReference(java + [native_dir])   # its own directory
    r = two_cycles(session, java + [ckpt_dir], r"^step (\d+) ", steps,
                   gap=40)
    assert "Exception" not in r.stderr_text(), r.stderr_text()
    want = want.lines()
    assert r.lines()[-1] == want[-1], (r.lines()[-3:], want[-1])


@pytest.mark.time_limit(300)
def test_checkpoints_while_the_signal_moves(session):
    """The program claims the checkpoint signal every third iteration (a
    move each time, up to iteration 66) while checkpoints are requested
    back to back: no
    checkpoint is lost or fails, no signal of the program goes astray,
    and a restart from the last one ends as a run without ckpt."""
    argv = [app("signal_claims"), "200", "3"]
    want = reference_output(argv)
    p = session.launch(argv)
    p.wait_line(ITER_RX, minimum=2)
    moves_left = numbers(p.lines(), ITER_RX)[-1] < 60
    for _ in range(6):
        session.checkpoint()
    assert moves_left, "the program ran past its moves before a checkpoint"
    images, seen, killed_at = checkpoint_kill(session, p, ITER_RX, 1, 1)
    r = session.restart(images)
    assert r.wait_exit() == 0, r.stderr_text()
    assert_quiet(r)
    assert tail_after_progress(r.lines(), ITER_RX) == \
        tail_after_progress(want, ITER_RX), r.lines()[-4:]


@pytest.mark.time_limit(300)
def test_no_signal_left(session):
    """A program that wants every real-time signal: all but the last one
    it asks for are its own, that one is refused with EINVAL and one
    warning, and the program still checkpoints and restarts."""
    n = "150"
    p = session.launch([app("claim_every_signal"), n])
    images, seen, killed_at = checkpoint_kill(session, p, ITER_RX, 20, 1,
                                              quiet=False)
    last = "%d:%s" % (signal.SIGRTMIN, os.strerror(errno.EINVAL))
    assert p.lines()[0] == "claimed %d refused %s" % (
        signal.SIGRTMAX - signal.SIGRTMIN, last), p.lines()[0]
    warnings = p.stderr_text().splitlines()
    assert len(warnings) == 1 and "every other real-time signal has a " \
        "handler" in warnings[0], warnings
    r = session.restart(images)
    assert r.wait_exit() == 0, r.stderr_text()
    after = numbers(r.lines(), ITER_RX)
    # the checkpoint fell between the line the test saw and the kill (an
    # iteration is 20 ms: on a loaded machine the round takes several)
    assert after and seen + 1 <= after[0] <= killed_at + 1 and \
        after[-1] == int(n), (after[:3], seen, killed_at)
    assert r.lines()[-1] == "delivered %d" % (
        int(n) * (signal.SIGRTMAX - signal.SIGRTMIN)), r.lines()[-1]


@pytest.mark.time_limit(300)
def test_ckpt_signal_pins(session):
    """CKPT_SIGNAL=N pins the checkpoint signal: a handler for N is
    refused with EINVAL and one message naming CKPT_SIGNAL, every other
    signal is the program's, and checkpoints go on with N."""
    n = "120"
    session.env["CKPT_SIGNAL"] = str(signal.SIGRTMAX)
    p = session.launch([app("claim_every_signal"), n])
    images, seen, _ = checkpoint_kill(session, p, ITER_RX, 20, 1, quiet=False)
    assert p.lines()[0] == "claimed %d refused %d:%s" % (
        signal.SIGRTMAX - signal.SIGRTMIN, signal.SIGRTMAX,
        os.strerror(errno.EINVAL)), p.lines()[0]
    warnings = p.stderr_text().splitlines()
    assert len(warnings) == 1 and "CKPT_SIGNAL=%d pins it" % (
        signal.SIGRTMAX) in warnings[0], warnings
    del session.env["CKPT_SIGNAL"]
    r = session.restart(images)
    assert r.wait_exit() == 0, r.stderr_text()
    assert r.lines()[-1] == "delivered %d" % (
        int(n) * (signal.SIGRTMAX - signal.SIGRTMIN)), r.lines()[-1]
