# SPDX-License-Identifier: LGPL-2.1-or-later
"""aarch64 under qemu-user: tests/cross/ckpt-aarch64 launches a program
built by `make ARCH=aarch64`, the native coordinator checkpoints it, and
images of one architecture are refused by the other's restart.
Run with `make cross-check` (skipped when build/aarch64 is missing)."""

import os
import shutil

import pytest

import ckpt_harness as h

HERE = os.path.dirname(os.path.abspath(__file__))
HELPER = os.path.join(HERE, "ckpt-aarch64")
CROSS = os.path.join(h.ROOT, "build", "aarch64")
CROSS_APPS = os.path.join(CROSS, "tests", "apps")
SYSROOT = "/usr/aarch64-linux-gnu"
PROGRESS = r"^count (\d+) "

pytestmark = pytest.mark.skipif(
    not os.path.exists(os.path.join(CROSS, "bin", "ckpt_restart")) or
    not shutil.which("qemu-aarch64"),
    reason="needs make ARCH=aarch64, make ARCH=aarch64 test-apps and "
           "qemu-user")


# Every qemu run ends within this (timeout -s KILL), below the harness's
# own bounds; and each runs in a session of its own, killed whole
# (ckpt_harness.kill_session): timeout(1) makes a process group of its
# own, so a SIGKILL of the helper alone would leave qemu running.
QEMU_TIMEOUT = 240


def qemu_reference(argv):
    """An uninterrupted run under qemu, with the sysroot's own libraries
    (tests/cross/ckpt-aarch64 says why)."""
    return h.reference_output(["timeout", "-s", "KILL", str(QEMU_TIMEOUT),
                               "qemu-aarch64", "-L", SYSROOT, "-E",
                               "LD_LIBRARY_PATH=%s/lib" % SYSROOT] + argv)


def cross_app(name):
    return os.path.join(CROSS_APPS, name)


def helper(s, mode, *args):
    return [HELPER, "--coord", s.coord, "--ckptdir", s.ckptdir,
            "--timeout", str(QEMU_TIMEOUT), mode] + list(args)


def start_helper(s, name, mode, *args):
    return s.start(helper(s, mode, *args), name, own_session=True)


def counter_argv(n=60, pause_ms=150):
    return [cross_app("counter"), str(n), str(pause_ms)]


def launch_and_checkpoint(s, argv):
    p = start_helper(s, "qemu counter", "launch", *argv)
    p.wait_line(PROGRESS, minimum=5)
    seen = max(h.numbers(p.lines(), PROGRESS))
    images = s.checkpoint()
    return p, seen, images


def test_checkpoint_under_qemu_then_run_on(session):
    argv = counter_argv()
    ref = qemu_reference(argv)
    p, seen, images = launch_and_checkpoint(session, argv)
    assert "aarch64" in session.inspect(images[0]).splitlines()[1]
    assert p.wait_exit() == 0, p.stderr_text()
    assert p.lines() == ref, "the checkpointed run printed %r, an " \
        "uninterrupted one %r" % (p.lines()[-3:], ref[-3:])


def test_checkpoint_kill_restart_under_qemu(session):
    argv = counter_argv()
    ref = qemu_reference(argv)
    p, seen, images = launch_and_checkpoint(session, argv)
    p.sigkill()
    before = h.numbers(p.lines(), PROGRESS)
    r = start_helper(session, "qemu restart", "restart", *images)
    assert r.wait_exit() == 0, r.stderr_text()
    h.assert_resumed(before, h.numbers(r.lines(), PROGRESS), PROGRESS, 60,
                     seen)
    assert r.lines()[-1] == ref[-1]


def restart_under_qemu(s, images):
    return start_helper(s, "qemu restart", "restart", *images)


def test_checkpoint_restart_chain_under_qemu(session):
    """checkpoint, kill, restart, checkpoint the restarted process, kill,
    restart again: the output ends as an uninterrupted run's. Each
    restart runs a new qemu, with its signal trampoline elsewhere."""
    argv = counter_argv()
    ref = qemu_reference(argv)
    p, seen, images = launch_and_checkpoint(session, argv)
    p.sigkill()
    before = h.numbers(p.lines(), PROGRESS)
    r1 = restart_under_qemu(session, images)
    r1.wait_line(PROGRESS, minimum=seen + 5)
    seen1 = max(h.numbers(r1.lines(), PROGRESS))
    images = session.checkpoint()
    r1.sigkill()
    after1 = h.numbers(r1.lines(), PROGRESS)
    h.assert_resumed(before, after1, PROGRESS, after1[-1], seen)
    r2 = restart_under_qemu(session, images)
    assert r2.wait_exit() == 0, r2.stderr_text()
    after2 = h.assert_resumed(after1, h.numbers(r2.lines(), PROGRESS),
                              PROGRESS, 60, seen1)
    assert r2.lines() == ref[after2 - 1:], "the second restart printed " \
        "%r, an uninterrupted run %r" % (r2.lines()[-2:], ref[-2:])


def test_threads_checkpoint_kill_restart_under_qemu(session):
    """8 threads, a mutex ring, condition variables and __thread data."""
    progress = r"^round (\d+)/"
    argv = [cross_app("threads_sync"), "400", "500"]
    ref = qemu_reference(argv)
    p = start_helper(session, "qemu threads", "launch", *argv)
    p.wait_line(progress, minimum=100)
    seen = max(h.numbers(p.lines(), progress))
    images = session.checkpoint()
    p.sigkill()
    before = h.numbers(p.lines(), progress)
    r = restart_under_qemu(session, images)
    assert r.wait_exit() == 0, r.stderr_text()
    h.assert_resumed(before, h.numbers(r.lines(), progress), progress, 400,
                     seen, step=50)
    assert h.tail_after_progress(r.lines(), progress) == \
        h.tail_after_progress(ref, progress)


def test_forked_ring_with_pipes_under_qemu(session):
    """Three processes (two forked) pass tokens through pipes; the bytes
    in flight at the checkpoint arrive exactly once after the restart."""
    rnd = r"^round (\d+)$"
    argv = [cross_app("pipe_ring"), "3", "8", "120", "3"]
    ref = qemu_reference(argv)
    p = start_helper(session, "qemu ring", "launch", *argv)
    p.wait_line(rnd, minimum=20)
    seen = max(h.numbers(p.lines(), rnd))
    images = session.checkpoint(expect_images=3)
    session.kill_all()
    p.popen.wait(30)
    before = h.numbers(p.lines(), rnd)
    r = restart_under_qemu(session, images)
    assert r.wait_exit() == 0, r.stderr_text()
    lines = r.lines()
    assert lines[-1] == ref[-1], (lines[-3:], ref[-1])
    after = h.numbers(lines, rnd)
    assert seen < after[0] <= before[-1] + 1, (after[0], seen, before[-1])
    assert after == list(range(after[0], 121)), after[:5]


def test_pids_stable_through_two_restarts_under_qemu(session):
    """checkpoint, restart, checkpoint the restarted process, restart
    again: getpid()/gettid() never change for the program."""
    progress = r"^iter (\d+)/"
    argv = [cross_app("pid_check"), "300", "20"]
    p = start_helper(session, "qemu pids", "launch", *argv)
    p.wait_line(r"^start pid (\d+) ")
    p.wait_line(progress, minimum=40)
    images = session.checkpoint()
    p.sigkill()
    before = h.numbers(p.lines(), progress)
    r1 = restart_under_qemu(session, images)
    r1.wait_line(progress, minimum=before[-1] + 30)
    images2 = session.checkpoint()
    r1.sigkill()
    assert not any(l.startswith("FAIL") for l in r1.lines()), r1.lines()
    r2 = restart_under_qemu(session, images2)
    assert r2.wait_exit() == 0, r2.stderr_text()
    lines = r2.lines()
    assert lines[-1] == "OK pid stable", lines[-3:]
    assert not any(l.startswith("start ") for l in r1.lines() + lines), \
        "a restarted process ran pid_check from the start"


def test_x86_64_image_refused_by_aarch64_restart(session):
    p = session.launch([h.app("counter"), "200", "100"])
    p.wait_line(PROGRESS, minimum=2)
    images = session.checkpoint()
    p.sigkill()
    r = h.run(helper(session, "restart", *images), 120, own_session=True)
    assert r.returncode != 0
    assert "%s: image is for x86_64, this machine is aarch64" % images[0] \
        in r.stderr, r.stderr


def test_aarch64_image_refused_by_x86_64_restart(session):
    p, seen, images = launch_and_checkpoint(session, counter_argv(200))
    p.sigkill()
    r = h.run([session.tool("ckpt_restart")] + images, 120)
    assert r.returncode != 0
    assert "%s: image is for aarch64, this machine is x86_64" % images[0] \
        in r.stderr, r.stderr
