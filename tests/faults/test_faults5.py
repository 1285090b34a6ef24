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


# Opens descriptors until EMFILE, keeps them all, then counts.
FD_HOG = """
import os, time
fds = []
try:
    while True:
        fds.append(os.open("/dev/null", os.O_RDONLY))
except OSError as e:
    print("holding", len(fds), "descriptors:", e.strerror, flush=True)
i = 0
while True:
    i += 1
    print("count", i, len(fds), flush=True)
    time.sleep(0.02)
"""


def soft_nofile(pid):
    with open("/proc/%d/limits" % pid) as f:
        for line in f:
            if line.startswith("Max open files"):
                return int(line.split()[3])
    raise AssertionError("no Max open files in /proc/%d/limits" % pid)


def launch_fd_hog(session, limits):
    hog = session.path("fd_hog.py")
    with open(hog, "w") as f:
        f.write(FD_HOG)
    p = session.start(["prlimit", "--nofile=" + limits,
                       session.tool("ckpt_launch"), "--",
                       "/usr/bin/python3", hog], "launch fd_hog")
    p.wait_line(r"^holding \d+ descriptors: Too many open files$")
    p.wait_line(PROGRESS, minimum=5)
    return p


@pytest.mark.time_limit(180)
def test_program_at_its_soft_fd_limit_is_checkpointed(session):
    """A program holding every descriptor its soft RLIMIT_NOFILE allows
    (64; hard 4096): the checkpoint could not open /proc/self/task. It
    must succeed, give the program its limit back, and restart."""
    p = launch_fd_hog(session, "64:4096")
    [image] = session.checkpoint()
    assert soft_nofile(p.pid) == 64, "the soft limit was not given back"
    seen = max(numbers(p.lines(), PROGRESS))
    assert_counts_on(p, "the program")
    p.sigkill()
    r = session.restart([image])
    r.wait_line(PROGRESS, minimum=seen + 5)
    assert soft_nofile(r.pid) == 64, \
        "the restarted program got the round's raised soft limit"
    after = numbers(r.lines(), PROGRESS)
    assert after[0] <= seen + 1 and \
        after == list(range(after[0], after[0] + len(after))), after[:5]


@pytest.mark.time_limit(180)
def test_program_at_its_hard_fd_limit_is_told_why(session):
    """Soft and hard limit 64, all held: no room to take. The checkpoint
    fails saying the descriptor limit is why and what helps; the
    program runs on."""
    p = launch_fd_hog(session, "64")
    r = failed_checkpoint(session)
    assert "RLIMIT_NOFILE" in r.stderr and "python3" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert_counts_on(p, "the program")


@pytest.mark.time_limit(120)
def test_restart_script_not_written_is_reported(session):
    """The images are committed but the restart script cannot be
    replaced (here: a directory sits where its temporary goes; a full
    disk does the same). The checkpoint stands, and its requester is
    warned that the script there is an older checkpoint's."""
    p = session.launch([app("counter"), "100000", "20"])
    p.wait_line(PROGRESS, minimum=5)
    session.checkpoint()
    script = os.path.join(session.ckptdir, "ckpt_restart_script.sh")
    before = sha256(script)
    os.mkdir(os.path.join(session.ckptdir, ".ckpt_restart_script.sh.tmp"))
    r = session.command("--checkpoint")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().endswith(".img"), r.stdout
    warning = [l for l in r.stderr.splitlines()
               if "ckpt_restart_script.sh was not written" in l]
    assert warning and warning[0].startswith("warning: "), r.stderr
    assert "checkpoint 2" in warning[0], warning
    assert sha256(script) == before


def assert_each_failure_names(stderr, path):
    lines = [l for l in stderr.splitlines() if "failed" in l]
    assert lines, stderr
    for l in lines:
        assert path in l, "a failure does not name %s: %r" % (path, l)


@pytest.mark.time_limit(180)
def test_directory_gone_or_read_only_is_named(session):
    """The checkpoint directory of a pipeline is moved away, then comes
    back as a read-only bind mount: each process's failure names the
    directory or the file in it it could not make (the claim file of the
    pipe said only 'recording file descriptors: ...'), the pipeline runs
    on, and the next checkpoint into the directory works."""
    p = session.launch(["sh", "-c", "%s 100000 20 | cat" % app("counter")])
    p.wait_line(PROGRESS, minimum=5)
    session.checkpoint(expect_images=3)
    d = session.ckptdir
    os.rename(d, d + ".away")
    r = failed_checkpoint(session)
    assert_each_failure_names(r.stderr, d)
    assert_counts_on(p, "the pipeline")

    os.mkdir(d, 0o700)
    if os.geteuid() == 0 and subprocess.run(
            ["mount", "--bind", "-o", "ro", d, d], timeout=30).returncode == 0:
        try:
            r = failed_checkpoint(session)
            assert_each_failure_names(r.stderr, d)
            assert_counts_on(p, "the pipeline")
        finally:
            subprocess.run(["umount", d], timeout=30)
    session.checkpoint(expect_images=3)
