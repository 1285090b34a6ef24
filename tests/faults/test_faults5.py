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
