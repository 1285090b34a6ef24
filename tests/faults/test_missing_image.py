# SPDX-License-Identifier: LGPL-2.1-or-later
"""An image of the checkpoint missing at restart (docs/restart.md, "Every
image of the checkpoint"): `ckpt_restart ckpt_*.img` after one image was
deleted or moved used to restart the others without it, and the program
found out on its own (a parent's waitpid failing, children reparented to
init). Each image now records how many processes its checkpoint saved on
its host; a set that lacks one is refused before anything is done, and
--partial restarts only the images given."""

import os
import re

import pytest

from ckpt_harness import app, assert_resumed, numbers, run

TREE = [app("proc_tree"), "400", "30"]
COUNTER = r"^count (\d+) "


def is_child_of_root(s, image):
    return not re.search(r"\(vpid \d+, vppid 1\)", s.inspect(image))


@pytest.mark.time_limit(180)
def test_tree_with_an_image_missing_is_refused(session):
    s = session
    p = s.launch(TREE)
    p.wait_line(r"^parent (\d+)$", minimum=20)
    images = s.checkpoint(expect_images=4)
    s.kill_all()
    p.wait_exit(30)
    gone = [i for i in images if is_child_of_root(s, i)][0]
    os.unlink(gone)
    rest = [i for i in images if i != gone]
    for extra in ([], ["--check"]):
        r = run([s.tool("ckpt_restart")] + extra + rest, 60, env=s.env)
        assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
        assert re.search(r"ckpt_restart: error: checkpoint \d+ of "
                         r"computation [0-9a-f]+ saved 4 processes on host "
                         r"\S+, the images given hold 3 of them: one image is "
                         r"missing .*nothing was restarted", r.stderr), (
            r.stderr)
        assert "proc_tree" not in r.stdout, r.stdout
    assert re.search(r"one of the checkpoint's 4 processes there",
                     s.inspect(rest[0])), s.inspect(rest[0])


@pytest.mark.time_limit(240)
def test_partial_restarts_only_the_images_given(session):
    """Two programs launched into one coordinator, checkpointed together;
    with one image gone the other is refused alone, and --partial
    restarts it: it continues exactly."""
    s = session
    a = s.launch([app("counter"), "300", "20"], "counter a")
    b = s.launch([app("counter"), "300", "20"], "counter b")
    a.wait_line(COUNTER, minimum=5)
    b.wait_line(COUNTER, minimum=5)
    seen = max(numbers(a.lines(), COUNTER))
    images = s.checkpoint(expect_images=2)
    a.sigkill()
    b.sigkill()
    before = numbers(a.lines(), COUNTER)
    mine = [i for i in images if "-%d-" % a.pid in os.path.basename(i)]
    if not mine:    # the image names carry the launched process's pid
        pytest.fail("no image of %d among %r" % (a.pid, images))
    other = [i for i in images if i not in mine]
    os.unlink(other[0])
    r = run([s.tool("ckpt_restart")] + mine, 60, env=s.env)
    assert r.returncode == 1 and "the images given hold 1 of them" in \
        r.stderr, (r.returncode, r.stderr)
    p = s.start([s.tool("ckpt_restart"), "--partial"] + mine,
                "restart --partial")
    assert p.wait_exit() == 0, p.stderr_text()
    assert "warning: checkpoint" in p.stderr_text(), p.stderr_text()
    assert "--partial: restarting only these" in p.stderr_text()
    assert_resumed(before, numbers(p.lines(), COUNTER), COUNTER, 300, seen)
