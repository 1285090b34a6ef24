# SPDX-License-Identifier: LGPL-2.1-or-later
"""Checkpoint errors: no coordinator, and a checkpoint directory that
cannot be written. A failed checkpoint must leave the application running
and the previous good image intact."""

import hashlib
import os
import shutil
import stat

import pytest

import ckpt_harness
from ckpt_harness import (BackgroundReference, app, numbers,
                          reference_output, run,
                          tail_after_progress, tool)

PROGRESS = r"^count (\d+) "


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


@pytest.mark.parametrize("cmd", ["--checkpoint", "--status", "--list",
                                 "--kill"])
def test_command_without_coordinator(session, cmd):
    r = session.command(cmd, timeout=30)
    assert r.returncode != 0, "%s with no coordinator exited 0" % cmd
    err = r.stderr.strip()
    assert err and len(err.splitlines()) == 1, (
        "expected a one-line message, got %r" % r.stderr)
    assert "coordinator" in err.lower(), err
    assert not os.path.exists(session.coord), (
        "ckpt_command %s started a coordinator at %s" % (cmd,
                                                         session.coord))


def test_command_without_tcp_coordinator(session):
    r = run([tool("ckpt_command"), "--coord", "127.0.0.1:1", "--status"],
            30, env=session.env)
    assert r.returncode != 0
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "coordinator" in r.stderr.lower(), r.stderr


def check_failed_checkpoint(session, proc, what):
    """A checkpoint must fail with a one-line reason; the app runs on."""
    seen = max(numbers(proc.lines(), PROGRESS))
    r = session.command("--checkpoint")
    assert r.returncode != 0, (
        "checkpoint into %s succeeded: %r" % (what, r.stdout))
    assert r.stderr.strip(), "failed checkpoint printed no reason"
    print("failed checkpoint into %s: exit %d, stderr %r" % (
        what, r.returncode, r.stderr))
    assert proc.alive(), "the application died with the failed checkpoint"
    proc.wait_line(PROGRESS, minimum=seen + 10)
    return r


@pytest.mark.time_limit(600)
def test_checkpoint_dir_is_a_file(session):
    """Works as root too: nobody can create files under a regular file.
    The directory is replaced by a file after the launch (ckpt_launch
    rightly refuses a bad directory up front)."""
    argv = [app("counter"), "300", "20"]
    ref = reference_output(argv)
    p = session.launch(argv)
    p.wait_line(PROGRESS, minimum=20)
    os.rename(session.ckptdir, session.ckptdir + ".moved")
    with open(session.ckptdir, "w") as f:
        f.write("x")
    try:
        r = check_failed_checkpoint(session, p, "a regular file")
        assert os.path.basename(session.ckptdir) in r.stderr, (
            "the error does not name the checkpoint directory: %r"
            % r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
        rc = p.wait_exit()
        assert rc == 0, "exit %d; stderr:\n%s" % (rc, p.stderr_text())
        assert p.lines()[-1] == ref[-1]
        assert numbers(p.lines(), PROGRESS) == list(range(1, 301))
        with open(session.ckptdir) as f:
            assert f.read() == "x"
        assert os.listdir(session.ckptdir + ".moved") == []
    finally:
        os.unlink(session.ckptdir)
        os.rename(session.ckptdir + ".moved", session.ckptdir)


def unprivileged_session():
    """ckpt_harness.unprivileged_session with a copy of the counter
    program. Returns (session, counter program path)."""
    s, (counter,) = ckpt_harness.unprivileged_session([app("counter")])
    return s, counter


@pytest.mark.time_limit(600)
def test_unwritable_dir_keeps_app_and_previous_image(apps_only):
    if os.geteuid() == 0 and not shutil.which("setpriv"):
        pytest.skip("setpriv (util-linux) is needed to drop root")
    missing = ckpt_harness.missing_core()
    if missing:
        (pytest.fail if os.environ.get("CI") else pytest.skip)(
            "ckpt core not built: missing " + ", ".join(missing))
    native = BackgroundReference([app("counter"), "400", "20"])
    s, counter = unprivileged_session()
    try:
        p = s.launch([counter, "400", "20"])
        p.wait_line(PROGRESS, minimum=30)
        seen = max(numbers(p.lines(), PROGRESS))
        images = s.checkpoint()
        good = sha256(images[0])
        if s.run_as is not None:
            assert os.stat(images[0]).st_uid == s.run_as, (
                "the image was not written by the unprivileged user")

        os.chmod(s.ckptdir, 0o500)
        check_failed_checkpoint(s, p, "a 0500 directory")
        assert os.path.exists(images[0]), (
            "the failed checkpoint removed the previous image")
        assert sha256(images[0]) == good, (
            "the failed checkpoint changed the previous image")
        left = [n for n in os.listdir(s.ckptdir)
                if n.endswith(".img") or ".tmp" in n]
        assert left == [os.path.basename(images[0])], (
            "images and temporary files after the failure: %r" % left)
        assert stat.S_IMODE(os.stat(images[0]).st_mode) == 0o600

        rc = p.wait_exit()
        assert rc == 0, "exit %d; stderr:\n%s" % (rc, p.stderr_text())
        before = numbers(p.lines(), PROGRESS)
        assert before == list(range(1, 401))
        ref = native.lines()
        assert p.lines()[-1] == ref[-1]

        # The good image restarts and reaches the same end.
        r = s.restart(images)
        rc = r.wait_exit()
        assert rc == 0, "restart exit %d; stderr:\n%s" % (
            rc, r.stderr_text())
        after = numbers(r.lines(), PROGRESS)
        assert after and seen + 1 <= after[0] < 400, after[:5]
        assert after == list(range(after[0], 401))
        assert tail_after_progress(r.lines(), PROGRESS) == \
            tail_after_progress(ref, PROGRESS)
    finally:
        os.chmod(s.ckptdir, 0o700)
        s.close()
