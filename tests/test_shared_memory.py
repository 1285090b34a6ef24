# SPDX-License-Identifier: LGPL-2.1-or-later
"""Memory shared between processes comes back shared: three children
count through a process-shared semaphore in a MAP_SHARED anonymous page
of their parent; after checkpoint, kill and restart they still exclude
each other through the one semaphore and no step is lost or made twice.
(Python's multiprocessing locks live in such memory too.)"""

import pytest

from ckpt_harness import app, numbers

N = 3000


@pytest.mark.time_limit(300)
def test_shared_memory_stays_shared(session):
    p = session.launch([app("shm_counter"), str(N)])
    p.wait_line(r"^progress (\d+)$", minimum=300)
    images = session.checkpoint(expect_images=4)
    session.kill_all()
    p.popen.wait(30)
    before = numbers(p.lines(), r"^progress (\d+)$")
    assert before[-1] < N
    r = session.restart(images)
    assert r.wait_exit() == 0, "%r %s" % (r.lines()[-3:], r.stderr_text())
    assert r.lines()[-1] == "total %d steps %d bad_children 0" % (N, N), (
        r.lines()[-3:])
