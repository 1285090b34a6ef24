# SPDX-License-Identifier: LGPL-2.1-or-later
"""Faults as users meet them: a copy of a computation restarted beside its
still running original under one coordinator, and a checkpoint directory
that fills up. A failed checkpoint names the process and the file, the
programs run on, and the previous image set stays whole and restartable
(docs/reliability.md, "Failed checkpoints")."""

import glob
import hashlib
import os
import subprocess

import pytest

from ckpt_harness import app, numbers

PROGRESS = r"^count (\d+) "


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def leftovers(ckptdir):
    return glob.glob(os.path.join(ckptdir, ".ckpt_*.img.tmp.*"))


def failed_checkpoint(session):
    r = session.command("--checkpoint")
    assert r.returncode != 0, (
        "the checkpoint succeeded: %r" % r.stdout)
    print("failed checkpoint: exit %d, stderr %r" % (r.returncode, r.stderr))
    return r


def assert_counts_on(proc, what):
    seen = max(numbers(proc.lines(), PROGRESS))
    assert proc.alive(), "%s died with the failed checkpoint:\n%s" % (
        what, proc.stderr_text())
    proc.wait_line(PROGRESS, minimum=seen + 3)


@pytest.mark.time_limit(180)
def test_copy_beside_its_original_is_refused_not_mixed(session):
    """Restarting a copy while the original still runs is allowed
    (tests/test_proc_tree.py); both keep the process's id, so a
    checkpoint of the two would rename both temporaries over one image
    and leave whichever came last. It must fail, name both processes and
    the image, commit nothing, and leave both copies running."""
    p = session.launch([app("counter"), "100000", "20"])
    p.wait_line(PROGRESS, minimum=10)
    [image] = session.checkpoint()
    good = sha256(image)
    copy = session.restart([image])
    copy.wait_line(PROGRESS, minimum=1)

    r = failed_checkpoint(session)
    err = r.stderr
    assert "copies of one process" in err, err
    assert os.path.basename(image) in err, err
    assert "pid %d" % p.pid in err or "vpid %d" % p.pid in err, err
    assert sha256(image) == good, "the refused checkpoint changed the image"
    assert leftovers(session.ckptdir) == []
    assert_counts_on(p, "the original")
    assert_counts_on(copy, "the copy")

    # The image is the first checkpoint's and still restarts.
    session.kill_all()
    again = session.restart([image])
    again.wait_line(PROGRESS, minimum=1)
    first = numbers(again.lines(), PROGRESS)[0]
    assert first <= min(numbers(copy.lines(), PROGRESS)) + 1, (
        first, numbers(copy.lines(), PROGRESS)[:3])


def mount_small_tmpfs(path, size):
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o",
                        "size=%d,mode=0700" % size, "tmpfs", path],
                       capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        pytest.skip("cannot mount a tmpfs here: %s" % r.stderr.strip())


def fill_leaving(ckptdir, free):
    """A file that leaves about `free` bytes of the filesystem free."""
    st = os.statvfs(ckptdir)
    filler = os.path.join(ckptdir, "filler")
    with open(filler, "wb") as f:
        f.truncate(max(st.f_bavail * st.f_frsize - free, 0))
        os.posix_fallocate(f.fileno(), 0, max(st.f_bavail * st.f_frsize
                                                - free, 1))
    return filler


@pytest.mark.time_limit(240)
def test_disk_full_in_second_checkpoint_keeps_the_first(session):
    """A pipeline of three processes (sh, counter, cat) checkpointed into a
    small tmpfs; the second checkpoint finds it nearly full. It fails
    naming the process and the image file it could not write, every
    process counts on, the first checkpoint's images and restart script
    are untouched, nothing half-written is left, and the restart script
    still brings the computation back where the first checkpoint was."""
    mount_small_tmpfs(session.ckptdir, 64 << 20)
    try:
        run_disk_full(session)
    finally:
        session.command("--kill")
        subprocess.run(["umount", "-l", session.ckptdir], timeout=30)


def run_disk_full(session):
    p = session.launch(["sh", "-c", "%s 3000 20 | cat" % app("counter")])
    p.wait_line(PROGRESS, minimum=10)
    seen = max(numbers(p.lines(), PROGRESS))
    images = session.checkpoint(expect_images=3)
    post = max(numbers(p.lines(), PROGRESS))
    script = os.path.join(session.ckptdir, "ckpt_restart_script.sh")
    good = {i: sha256(i) for i in images + [script]}
    size = sum(os.stat(i).st_size for i in images)
    filler = fill_leaving(session.ckptdir, size // 2)

    r = failed_checkpoint(session)
    assert "No space left on device" in r.stderr, r.stderr
    assert ".img.tmp." in r.stderr, (
        "the error does not name the image file: %r" % r.stderr)
    assert "vpid" in r.stderr, r.stderr
    assert {i: sha256(i) for i in images + [script]} == good, (
        "the failed checkpoint changed the previous images or script")
    assert leftovers(session.ckptdir) == []
    assert_counts_on(p, "the pipeline")

    os.unlink(filler)
    session.command("--kill")
    p.popen.wait(30)
    again = session.start(["sh", script], "restart script")
    again.wait_line(PROGRESS, minimum=post + 5)
    after = numbers(again.lines(), PROGRESS)
    assert seen < after[0] <= post + 1, (seen, post, after[:3])
    assert after == list(range(after[0], after[0] + len(after))), after[:10]
