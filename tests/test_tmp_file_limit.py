# SPDX-License-Identifier: LGPL-2.1-or-later
"""Files on temporary storage over the size limit (64 MiB by default):
named in a warning at checkpoint time, refused clearly at restart when
gone, and saved when ckpt_launch --tmp-file-max raises the limit."""

import os
import re

import pytest

from ckpt_harness import app, numbers, reference_output

MIB, STEPS, PAUSE_MS = 70, 200, 20
STEP = r"^step (\d+)$"


def launch_and_checkpoint(s, path, extra=()):
    p = s.launch([app("big_tmp_file"), path, str(MIB), str(STEPS),
                  str(PAUSE_MS)], extra=list(extra))
    p.wait_line(STEP, minimum=10)
    images = s.checkpoint()
    seen = max(numbers(p.lines(), STEP))
    s.kill_all()
    p.wait_exit(30)
    return p, images, seen


@pytest.mark.time_limit(600)
def test_over_limit_warned_at_checkpoint(session):
    path = session.path("big.bin")
    p, images, _ = launch_and_checkpoint(session, path)
    assert re.search(r"%s: %d bytes on temporary storage, over the limit "
                     r"of 67108864 bytes: its content is not saved" % (
                         re.escape(path), MIB << 20), p.stderr_text()), \
        p.stderr_text()
    assert "content NOT saved" in session.inspect(images[0])
    os.unlink(path)
    r = session.restart(images)
    rc = r.wait_exit()
    assert rc != 0, "restarted without the file: %r" % r.lines()[-3:]
    assert re.search(r"%s is gone and its content was not saved: %d bytes "
                     r"on temporary storage, over the limit" % (
                         re.escape(path), MIB << 20), r.stderr_text()), \
        r.stderr_text()


@pytest.mark.time_limit(600)
def test_raised_limit_saves_and_restores(session):
    path = session.path("big.bin")
    ref = [l for l in reference_output(
        [app("big_tmp_file"), session.path("ref.bin"), str(MIB),
         str(STEPS), "0"], cache=False) if l.startswith("digest")]
    os.unlink(session.path("ref.bin"))
    p, images, seen = launch_and_checkpoint(
        session, path, extra=["--tmp-file-max", "100M"])
    assert "over the limit" not in p.stderr_text(), p.stderr_text()
    os.unlink(path)
    r = session.restart(images)
    rc = r.wait_exit()
    assert rc == 0, "exit %d; stderr:\n%s" % (rc, r.stderr_text())
    steps = numbers(r.lines(), STEP)
    assert steps and steps[0] <= seen + 1, (steps[:3], seen)
    assert [l for l in r.lines() if l.startswith("digest")] == ref
    assert re.search(r"%s was gone; recreated from .* \(%d bytes\)" % (
        re.escape(path), MIB << 20), r.stderr_text()), r.stderr_text()


def test_bad_limit_refused(session):
    r = session.launch([app("big_tmp_file"), session.path("x"), "1", "1",
                        "0"], extra=["--tmp-file-max", "lots"])
    assert r.wait_exit() == 1
    assert "bad --tmp-file-max 'lots'" in r.stderr_text()
