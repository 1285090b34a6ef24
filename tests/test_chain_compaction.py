# SPDX-License-Identifier: LGPL-2.1-or-later
"""Background compaction of a chain of incremental images
(libckpt-preload/image_compact.c): once a chain reaches
CKPT_CHAIN_COMPACT images and its head is durable, a helper merges it
into a full image while the program runs, renamed over the head; the
next delta chains off it, the links go, and a restart from the chain
continues exactly. A helper killed halfway leaves a usable chain."""

import glob
import os
import signal
import time

import pytest

from ckpt_harness import app, numbers, reference_output
from test_incremental import (DIRTY, PROGRESS, chain_info, checkpoints,
                              restart_exact)

COMPACT_WAIT_S = 60


def wait_compacted(img):
    """Until img is a full image (chain length 1, no links)."""
    deadline = time.monotonic() + COMPACT_WAIT_S
    while True:
        length, links, _ = chain_info(img)
        if length == 1 and not links:
            return
        assert time.monotonic() < deadline, (
            "%s still a delta of %d links after %d s" % (
                img, len(links), COMPACT_WAIT_S))
        time.sleep(0.05)


def descendants(pid):
    """Every process below pid (children of any of its threads)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for f in glob.glob("/proc/%d/task/*/children" % p):
            try:
                with open(f) as fh:
                    kids = [int(x) for x in fh.read().split()]
            except OSError:
                continue
            out += kids
            todo += kids
    return out


@pytest.mark.time_limit(120)
def test_chain_compacted_in_the_background(session):
    """CKPT_CHAIN_COMPACT=3: after the third image the chain becomes one
    full image under the head's name, the older images go, the next
    delta links only it, and the restart from that delta is exact."""
    ref = reference_output(DIRTY)
    session.env["CKPT_CHAIN_COMPACT"] = "3"
    p = session.launch(DIRTY, extra=["--incremental"])
    p.wait_line(PROGRESS, minimum=3)
    images, _ = checkpoints(session, p, 3)
    assert chain_info(images[2])[0] == 3 or chain_info(images[2])[0] == 1
    wait_compacted(images[2])
    deadline = time.monotonic() + COMPACT_WAIT_S
    while any(os.path.exists(i) for i in images[:2]):
        assert time.monotonic() < deadline, "the links of %s stayed" % (
            images[2])
        time.sleep(0.05)
    more, seen = checkpoints(session, p, 1)
    p.sigkill()
    before = numbers(p.lines(), PROGRESS)
    length, links, _ = chain_info(more[0])
    assert (length, links) == (2, [os.path.basename(images[2])])
    restart_exact(session, more, seen, before, ref)


# 64 MiB: the helper copies the links for a while
BIG_STEPS = 60
BIG = [app("dirty_pages"), "64", str(BIG_STEPS), "2", "10", "10"]


@pytest.mark.time_limit(120)
def test_compaction_killed_leaves_a_usable_chain(session):
    """The helper killed as soon as it can be found: the head is the
    delta or the compacted image, never a partial file, and the restart
    from it is exact; the next checkpoint removes the helper's
    temporary."""
    ref = reference_output(BIG)
    session.env["CKPT_CHAIN_COMPACT"] = "2"
    p = session.launch(BIG, extra=["--incremental"])
    p.wait_line(PROGRESS, minimum=3)
    images, _ = checkpoints(session, p, 2)
    killed = []
    deadline = time.monotonic() + 5
    while not killed and time.monotonic() < deadline:
        for h in descendants(p.pid):
            try:
                os.kill(h, signal.SIGKILL)
                killed.append(h)
            except ProcessLookupError:
                pass
    more, seen = checkpoints(session, p, 1)
    p.sigkill()
    before = numbers(p.lines(), PROGRESS)
    leftovers = [f for f in os.listdir(session.ckptdir)
                 if any(f.endswith(".img.tmp.%d" % h) for h in killed)]
    assert not leftovers, leftovers
    restart_exact(session, more, seen, before, ref, BIG_STEPS)
