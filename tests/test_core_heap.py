# SPDX-License-Identifier: LGPL-2.1-or-later
"""A single-threaded computation over 1 GiB of heap, checked by digest."""

import os

import pytest

from ckpt_harness import (app, checkpoint_and_kill, reference_output,
                          restart_to_end, tail_after_progress)

MIB = 1024
ROUNDS = 80
PROGRESS = r"^round (\d+)/"
ARGV = [app("heap_digest"), str(MIB), str(ROUNDS)]


def test_heap_reference_is_deterministic(apps_only):
    small = [app("heap_digest"), "8", "3"]
    a = reference_output(small, cache=False)
    b = reference_output(small, cache=False)
    assert a == b
    assert a[-1].startswith("digest ")


@pytest.mark.skipif(not os.environ.get("CKPT_HEAVY_TESTS"),
                    reason="heavy (105 s of CI's budget): set "
                    "CKPT_HEAVY_TESTS=1")
@pytest.mark.time_limit(900)
def test_heap_1gib_checkpoint_kill_restart(session):
    ref = reference_output(ARGV)
    p = session.launch(ARGV)
    images, seen, before = checkpoint_and_kill(session, p, PROGRESS, 4)
    size = os.path.getsize(images[0])
    assert size >= MIB << 20, (
        "image %s is %d bytes, smaller than the %d MiB of random data "
        "the process holds" % (images[0], size, MIB))
    r, first = restart_to_end(session, images, PROGRESS, ROUNDS, seen,
                              before)
    assert tail_after_progress(r.lines(), PROGRESS) == \
        tail_after_progress(ref, PROGRESS)
