# SPDX-License-Identifier: LGPL-2.1-or-later
"""Memory shared between processes comes back shared: three children
count through a process-shared semaphore in a MAP_SHARED anonymous page
of their parent; after checkpoint, kill and restart they still exclude
each other through the one semaphore and no step is lost or made twice.
(Python's multiprocessing locks live in such memory too.)"""

import pytest

from ckpt_harness import app, numbers

N = 3000


PROGRESS = r"^progress (\d+)$"


def checkpoint_kill_restart(session, argv, first, processes, last):
    """Launch argv, checkpoint once progress reaches `first`, kill,
    restart; the restarted computation's output lines."""
    p = session.launch(argv)
    p.wait_line(PROGRESS, minimum=first)
    images = session.checkpoint(expect_images=processes)
    session.kill_all()
    p.popen.wait(30)
    assert numbers(p.lines(), PROGRESS)[-1] < last, "finished before the kill"
    r = session.restart(images)
    assert r.wait_exit() == 0, "%r %s" % (r.lines()[-3:], r.stderr_text())
    return r.lines()


@pytest.mark.time_limit(300)
def test_shared_memory_stays_shared(session):
    lines = checkpoint_kill_restart(session, [app("shm_counter"), str(N)],
                                    300, 4, N)
    assert lines[-1] == "total %d steps %d bad_children 0" % (N, N), (
        lines[-3:])


LIMIT = 2000000


@pytest.mark.time_limit(300)
def test_shared_memory_saved_at_one_moment(session):
    """Every image of a checkpoint holds the shared memory as it was at
    the one moment all processes stopped: two children count in a shared
    counter and in their own memory while their parent, whose image is
    the largest (256 MiB), is still being written; after the restart the
    shared counter equals the sum of the children's own counts."""
    lines = checkpoint_kill_restart(
        session, [app("shm_ledger"), str(LIMIT), "256"], 200000, 3, LIMIT)
    last = lines[-1].split()
    assert last[0] == "total" and last[2] == "sum", lines[-3:]
    assert int(last[1]) >= LIMIT and last[1] == last[3], lines[-1]
    assert last[5] == "0", lines[-1]
