# SPDX-License-Identifier: LGPL-2.1-or-later
"""checkpoint -> kill -> restart, again and again; and one image restarted
twice."""

import os
import time

import pytest

from ckpt_harness import (COMMAND_TIMEOUT, BackgroundReference, app,
                          assert_resumed, checkpoint_and_kill, copy_image,
                          numbers,
                          reference_output, restart_to_end, run,
                          tail_after_progress, tool)

N = 500
PROGRESS = r"^count (\d+) "
ARGV = [app("counter"), str(N), "20"]


@pytest.mark.time_limit(900)
def test_chain_of_three_generations(session):
    native = BackgroundReference(ARGV)     # the counter mostly sleeps
    p = session.launch(ARGV)
    images, seen, before = checkpoint_and_kill(session, p, PROGRESS, 40)
    kept = copy_image(images[0], session.path("gen1"))
    gen_first = []
    for gen, kill in ((2, "command"), (3, "sigkill"), (4, "command")):
        r = session.restart(images, name="restart gen %d" % gen)
        r.wait_line(PROGRESS, minimum=before[-1] + 40)
        after = numbers(r.lines(), PROGRESS)
        assert seen + 1 <= after[0] <= before[-1] + 1, (
            "generation %d resumed at %d; checkpoint after %d, killed "
            "at %d" % (gen, after[0], seen, before[-1]))
        gen_first.append(after[0])
        images, seen, before = checkpoint_and_kill(
            session, r, PROGRESS, after[0] + 40, kill=kill)
        assert before == list(range(after[0], before[-1] + 1))
    r, first = restart_to_end(session, images, PROGRESS, N, seen, before)
    ref = native.lines()
    assert tail_after_progress(r.lines(), PROGRESS) == \
        tail_after_progress(ref, PROGRESS)
    assert gen_first == sorted(gen_first) and first > gen_first[-1]

    # The first generation's image still restarts, twice.
    starts = []
    for attempt in (1, 2):
        r = session.restart([kept], name="restart gen1 copy #%d" % attempt)
        rc = r.wait_exit()
        assert rc == 0, "restart #%d exit %d; stderr:\n%s" % (
            attempt, rc, r.stderr_text())
        nums = numbers(r.lines(), PROGRESS)
        assert nums == list(range(nums[0], N + 1)), nums[:10]
        starts.append(nums[0])
        assert tail_after_progress(r.lines(), PROGRESS) == \
            tail_after_progress(ref, PROGRESS)
    assert starts[0] == starts[1] == gen_first[0], (
        "restarts of one image resumed at %r" % starts)


@pytest.mark.time_limit(600)
def test_options_instead_of_environment(session):
    """--coord and --ckptdir work without CKPT_COORD / CKPT_DIR."""
    ref = reference_output(ARGV)
    coord, ckptdir = session.coord, session.ckptdir
    del session.env["CKPT_COORD"]
    del session.env["CKPT_DIR"]
    session.env["XDG_RUNTIME_DIR"] = session.path("xdg")
    os.mkdir(session.env["XDG_RUNTIME_DIR"], 0o700)
    p = session.start([tool("ckpt_launch"), "--coord", coord, "--ckptdir",
                       ckptdir, "--", *ARGV], "launch with options")
    p.wait_line(PROGRESS, minimum=30)
    seen = max(numbers(p.lines(), PROGRESS))
    r = run([tool("ckpt_command"), "--coord", coord, "--checkpoint"],
            COMMAND_TIMEOUT, env=session.env)
    assert r.returncode == 0, r.stderr
    images = r.stdout.split()
    assert len(images) == 1 and os.path.dirname(images[0]) == ckptdir, (
        images)
    p.sigkill()
    before = numbers(p.lines(), PROGRESS)
    rs = session.start([tool("ckpt_restart"), "--coord", coord] + images,
                       "restart with options")
    assert rs.wait_exit() == 0, rs.stderr_text()
    after = numbers(rs.lines(), PROGRESS)
    assert_resumed(before, after, PROGRESS, N, seen)
    assert rs.lines()[-1] == ref[-1]
    run([tool("ckpt_command"), "--coord", coord, "--quit"], 15,
        env=session.env)


@pytest.mark.time_limit(600)
def test_interval_checkpoint_then_restart(session):
    """ckpt_launch -i 1 checkpoints every second without any command."""
    ref = reference_output(ARGV)
    p = session.launch(ARGV, extra=["-i", "1"])
    p.wait_line(PROGRESS, minimum=10)
    deadline = time.monotonic() + 60
    images = []
    while not images and time.monotonic() < deadline:
        images = [os.path.join(session.ckptdir, n)
                  for n in os.listdir(session.ckptdir)
                  if n.endswith(".img")]
        time.sleep(0.1)
    assert images, "no interval checkpoint within 60 s"
    time.sleep(1.5)  # let another interval checkpoint replace it
    p.sigkill()
    before = numbers(p.lines(), PROGRESS)
    r = session.restart(images)
    assert r.wait_exit() == 0, r.stderr_text()
    after = numbers(r.lines(), PROGRESS)
    assert after and 10 < after[0] <= before[-1] + 1, after[:3]
    assert after == list(range(after[0], N + 1))
    assert r.lines()[-1] == ref[-1]
