# SPDX-License-Identifier: LGPL-2.1-or-later
"""A real bash pipeline (a producer, tee, awk, sort and tail connected by
pipes) is checkpointed mid-run, killed and restarted with one
ckpt_restart of all its images; its output equals an uninterrupted run."""

import os
import re
import time

import pytest

from ckpt_harness import app, reference_output

N = 400
SCRIPT = ("%s %d 10 | tee %s | awk '{ s += $2 %% 1000; print $2, s }' "
          "| sort -k2,2n -k1,1n | tail -n 3")


def progress(path):
    try:
        with open(path) as f:
            counts = re.findall(r"^count (\d+) ", f.read(), re.M)
    except FileNotFoundError:
        return 0
    return int(counts[-1]) if counts else 0


def wait_progress(path, minimum, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if progress(path) >= minimum:
            return progress(path)
        time.sleep(0.05)
    raise AssertionError("%s did not reach count %d in %d s (at %d)" % (
        path, minimum, timeout, progress(path)))


@pytest.mark.time_limit(300)
def test_bash_pipeline_restart(session):
    ref_log = session.path("ref.txt")
    ref = reference_output(["bash", "-c", SCRIPT % (app("counter"), N,
                                                    ref_log)], cache=False)
    assert len(ref) == 3, ref

    log = session.path("progress.txt")
    p = session.launch(["bash", "-c", SCRIPT % (app("counter"), N, log)])
    seen = wait_progress(log, 60)
    images = session.checkpoint(expect_images=6)
    names = sorted(re.sub(r"^ckpt_(.+)_[^_]+\.img$", r"\1",
                          os.path.basename(i)) for i in images)
    assert names == sorted(["bash", "counter", "tee", "mawk", "sort",
                            "tail"]) or len(names) == 6, names
    session.kill_all()
    p.popen.wait(30)
    killed_at = progress(log)
    assert killed_at < N, "the pipeline finished before it was killed"

    r = session.restart(images)
    rc = r.wait_exit()
    assert rc == 0, "exit %d, stderr:\n%s" % (rc, r.stderr_text())
    assert r.lines() == ref, (
        "the restarted pipeline printed %r, an uninterrupted run %r" % (
            r.lines(), ref))
    # tee went on appending to its file from where it was at the
    # checkpoint: the lines after the checkpoint are there exactly once.
    with open(log) as f:
        counts = [int(c) for c in re.findall(r"^count (\d+) ", f.read(),
                                             re.M)]
    assert counts == list(range(1, N + 1)) and seen <= killed_at, (
        counts[:3], counts[-3:], seen, killed_at)
