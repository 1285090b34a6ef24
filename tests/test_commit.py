# SPDX-License-Identifier: LGPL-2.1-or-later
"""A checkpoint of several processes that fails in one of them leaves
every previous image in place (two-phase commit): no process's image is
replaced by the newer checkpoint's unless all of them were written and
synced. The older set still restarts as one computation."""

import glob
import os
import re
import signal

import pytest

from ckpt_harness import app, numbers

TICKS = 160


def generation(session, img):
    m = re.search(r"^generation\s+(\d+)", session.inspect(img), re.M)
    assert m, "no generation in ckpt_inspect %s" % img
    return int(m.group(1))


@pytest.mark.time_limit(300)
def test_failed_checkpoint_keeps_every_previous_image(session):
    p = session.launch([app("fsize_pair"), str(TICKS)])
    pid = int(p.wait_line(r"^pid (\d+)$").group(1))
    p.wait_line(r"^child (\d+)$", minimum=5)
    images = session.checkpoint(expect_images=2)
    assert [generation(session, i) for i in images] == [1, 1]
    seen = max(numbers(p.lines(), r"^parent (\d+)$"))

    os.kill(pid, signal.SIGUSR1)
    p.wait_line(r"^limited$")
    r = session.command("--checkpoint")
    assert r.returncode != 0, "the checkpoint should have failed: %s" % (
        r.stdout)
    assert "File too large" in r.stderr, r.stderr
    assert p.alive(), "a failed checkpoint ended the program"
    assert [generation(session, i) for i in images] == [1, 1], (
        "a failed checkpoint replaced an image of the previous one")
    assert not glob.glob(os.path.join(session.ckptdir, "*.tmp*")), (
        os.listdir(session.ckptdir))

    session.kill_all()
    p.popen.wait(30)
    r = session.restart(images)
    assert r.wait_exit() == 0, r.stderr_text()
    after = numbers(r.lines(), r"^parent (\d+)$")
    assert after[0] <= seen + 1 and after[-1] == TICKS, after[:3]
    assert numbers(r.lines(), r"^child (\d+)$")[-1] == TICKS
    assert r.lines()[-1] == "done"
