# SPDX-License-Identifier: LGPL-2.1-or-later
"""Python's multiprocessing.Pool (fork start method): the parent, its
worker processes and the pipes between them are checkpointed mid-run,
killed, restarted with one ckpt_restart of all images, and the result
equals an uninterrupted run."""

import pytest

from ckpt_harness import checkpoint_and_kill, numbers, reference_output

PYTHON = "/usr/bin/python3"
SCRIPT = r"""
import hashlib, multiprocessing as mp, sys, time
def work(i):
    h = str(i).encode()
    for _ in range(20000):
        h = hashlib.sha256(h).digest()
    time.sleep(0.05)
    return h.hex()[:8]
if __name__ == "__main__":
    mp.set_start_method("fork")
    out = []
    with mp.Pool(2) as pool:
        for k, r in enumerate(pool.imap(work, range(int(sys.argv[1])))):
            out.append(r)
            print("item", k, flush=True)
    print("final", hashlib.sha256("".join(out).encode()).hexdigest())
"""
ITEMS = 300
ARGV = [PYTHON, "-c", SCRIPT, str(ITEMS)]
PROGRESS = r"^item (\d+)$"


@pytest.mark.time_limit(600)
def test_pool_restarts_with_its_workers(session):
    p = session.launch(ARGV)
    p.wait_line(PROGRESS, minimum=20)
    images = session.checkpoint(expect_images=3)
    p.sigkill()
    session.kill_all()
    before = numbers(p.lines(), PROGRESS)
    assert before and before[-1] < ITEMS - 1, "finished before the kill"
    r = session.restart(images)
    assert r.wait_exit() == 0, r.stderr_text()
    after = numbers(r.lines(), PROGRESS)
    assert after and after[0] > 0 and after[-1] == ITEMS - 1, after[:3]
    assert r.lines()[-1] == reference_output(ARGV)[-1]
