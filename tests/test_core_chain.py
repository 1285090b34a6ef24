# SPDX-License-Identifier: LGPL-2.1-or-later
"""checkpoint -> kill -> restart, again and again; and one image restarted
twice."""

import pytest

from ckpt_harness import (app, checkpoint_and_kill, copy_image, numbers,
                          reference_output, restart_to_end,
                          tail_after_progress)

N = 500
PROGRESS = r"^count (\d+) "
ARGV = [app("counter"), str(N), "20"]


@pytest.mark.time_limit(900)
def test_chain_of_three_generations(session):
    ref = reference_output(ARGV)
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
