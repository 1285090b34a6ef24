# SPDX-License-Identifier: LGPL-2.1-or-later
"""A process that ends between DO_RESUME and its image being committed
(docs/protocol.md, "Failures"): it was alive and fully written at the
checkpoint moment, so it is part of the consistent state and its exit must
not fail the checkpoint. exit_after_resume forks short-lived children that
end right after a checkpoint resumes them (exit(), _exit() or SIGKILL to
themselves, while their image is still being fsync'ed); 20 checkpoints in
a row must all succeed, and a restart from the last one must bring the
children that had ended meanwhile back, end them again, and finish with
the program's own accounting right."""

import pytest

from ckpt_harness import app, assert_resumed, numbers

PROGRESS = r"^child (\d+) code"
CHILDREN = 1500
CHECKPOINTS = 20


def checkpoint_many(s, p):
    """CHECKPOINTS checkpoints in a row; each must succeed. Returns the
    image paths of the last and the progress seen before it."""
    for i in range(CHECKPOINTS):
        assert p.alive(), "the program ended after %d checkpoints: make " \
            "the run longer" % i
        seen = max(numbers(p.lines(), PROGRESS) or [0])
        r = s.command("--checkpoint")
        assert r.returncode == 0, (
            "checkpoint %d of %d failed: %s" % (i + 1, CHECKPOINTS,
                                                r.stderr))
        images = r.stdout.split()
    assert images, "the last checkpoint printed no image"
    return images, seen


def run_and_restart(s, how):
    p = s.launch([app("exit_after_resume"), str(CHILDREN), "10", how])
    p.wait_line(PROGRESS, minimum=5)
    images, seen = checkpoint_many(s, p)
    s.kill_all()
    p.popen.wait(30)
    before = numbers(p.lines(), PROGRESS)
    r = s.restart(images)
    assert r.wait_exit() == 0, "%r %s" % (r.lines()[-3:], r.stderr_text())
    after = numbers(r.lines(), PROGRESS)
    assert_resumed(before, after, PROGRESS, CHILDREN, seen)
    code = 100 + 9 if how == "kill" else None
    for line in r.lines():
        if line.startswith("child "):
            i, c = numbers([line], r"^child (\d+)")[0], int(line.split()[-1])
            assert c == (code if code else i % 100), line
    want = sum(code if code else i % 100 for i in range(1, CHILDREN + 1))
    assert r.lines()[-1] == "done %d sum %d" % (CHILDREN, want), \
        r.lines()[-3:]


@pytest.mark.time_limit(600)
@pytest.mark.parametrize("how", ["_exit", "exit"])
def test_child_exits_after_resume(session, how):
    run_and_restart(session, how)


@pytest.mark.time_limit(600)
def test_child_killed_after_resume(session):
    """SIGKILL runs no code of the process: the coordinator makes its
    written image durable and commits it."""
    run_and_restart(session, "kill")
