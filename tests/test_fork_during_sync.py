# SPDX-License-Identifier: LGPL-2.1-or-later
"""A fork while libckpt makes the image durable: after the resume the
manager thread opens the new image to fsync it, and its directory to
rename it over the previous one, while the program runs and may fork. A
child must never inherit those descriptors (it would keep its parent's
image open and save it at its own next checkpoint as one of its files,
and a restart then failed on it). fork_fd_census forks children without
pause while checkpoints of its large image are taken; every child reports
any descriptor naming a file in the checkpoint directory. None may, and
the last checkpoint restarts and finishes."""

import pytest

from ckpt_harness import app, numbers

N = 200000
PROGRESS = r"^child (\d+) fds"
CHECKPOINTS = 12


@pytest.mark.time_limit(400)
def test_forked_child_never_inherits_the_image_being_synced(session):
    p = session.launch([app("fork_fd_census"), str(N), "96",
                        session.ckptdir])
    p.wait_line(PROGRESS, minimum=20)
    images = None
    for i in range(CHECKPOINTS):
        assert p.alive(), "the program ended after %d checkpoints: %r" % (
            i, p.lines()[-3:])
        r = session.command("--checkpoint")
        assert r.returncode == 0, "checkpoint %d failed: %s" % (i + 1,
                                                                 r.stderr)
        images = r.stdout.split()
        # children forked while the image is synced and renamed
        p.wait_line(PROGRESS, minimum=max(numbers(p.lines(), PROGRESS)) +
                    50)
    leaks = [l for l in p.lines() if l.startswith("LEAK")]
    assert not leaks, "children inherited libckpt's descriptors: %r" % (
        leaks[:5])
    session.kill_all()
    p.popen.wait(30)
    before = numbers(p.lines(), PROGRESS)
    assert before[-1] < N, "the program finished before it was killed"
    r = session.restart(images)
    r.wait_line(PROGRESS, minimum=before[-1] + 50)
    leaks = [l for l in r.lines() if l.startswith("LEAK")]
    assert not leaks, "after restart: %r; stderr %s" % (leaks[:5],
                                                       r.stderr_text())
    assert not r.stderr_text().strip() or "cannot restore" not in \
        r.stderr_text(), r.stderr_text()
