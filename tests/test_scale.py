# SPDX-License-Identifier: LGPL-2.1-or-later
"""Many processes in one checkpoint (issue 10 §5; the timings are in
bench/bench.py --only scale): 16 processes of 8 MiB each, checkpointed
together, killed and restarted from their 16 images, go on exactly: every
process prints the digests of the uninterrupted run from where it was
checkpointed to its last step."""

import re

import pytest

from ckpt_harness import app, reference_output

NPROCS, STEPS = 16, 30
FLEET = [app("proc_fleet"), str(NPROCS), "8", str(STEPS), "40"]
LINE = re.compile(r"^proc (\d+) step (\d+) ([0-9a-f]+)$")


def per_process(lines):
    """{process: [(step, digest)]}"""
    out = {}
    for line in lines:
        m = LINE.match(line)
        if m:
            out.setdefault(int(m.group(1)), []).append(
                (int(m.group(2)), m.group(3)))
    return out


@pytest.mark.time_limit(120)
def test_sixteen_processes_restarted_exactly(session):
    ref = per_process(reference_output(FLEET))
    p = session.launch(FLEET)
    for k in range(NPROCS):
        p.wait_line(r"^proc %d step (\d+) " % k, minimum=3)
    images = session.checkpoint(expect_images=NPROCS)
    session.kill_all()
    p.popen.wait(30)
    before = per_process(p.lines())
    r = session.restart(images)
    rc = r.wait_exit(90)
    assert rc == 0, "exit %d; last lines %r; stderr:\n%s" % (
        rc, r.lines()[-5:], r.stderr_text())
    after = per_process(r.lines())
    assert r.lines()[-1] == "done"
    assert sorted(after) == list(range(NPROCS)), sorted(after)
    for k in range(NPROCS):
        first = after[k][0][0]
        assert 3 < first <= before[k][-1][0] + 1, (k, first, before[k][-1])
        assert after[k] == ref[k][first - 1:], (
            "process %d: the digests after the restart differ" % k)
