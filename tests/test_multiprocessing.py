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


# A semaphore the parent makes (glibc's sem_open: made under a temporary
# name in /dev/shm, mapped, linked to its real name, the temporary name
# unlinked) and a child started by the forkserver or spawn method opens by
# its real name: the parent's mapping shows "(deleted)" though the file
# lives on. It must come back as one object for both.
SEMAPHORE_SCRIPT = r"""
import multiprocessing as mp, sys, time
def producer(sem, n):
    for i in range(n):
        time.sleep(0.02)
        sem.release()
if __name__ == "__main__":
    ctx = mp.get_context(sys.argv[1])
    n = int(sys.argv[2])
    sem = ctx.Semaphore(0)
    p = ctx.Process(target=producer, args=(sem, n))
    p.start()
    for i in range(n):
        if not sem.acquire(timeout=10):
            print("lost", i, flush=True)
            sys.exit(1)
        print("got", i, flush=True)
    p.join(30)
    print("joined", p.exitcode, flush=True)
"""
RELEASES = 600
GOT = r"^got (\d+)$"


@pytest.mark.time_limit(300)
@pytest.mark.parametrize("method,processes", [("forkserver", 4),
                                              ("spawn", 3)])
def test_semaphore_made_by_parent_shared_after_restart(session, tmp_path,
                                                       method, processes):
    # these start methods import the main module by its file
    script = tmp_path / "semaphore_handoff.py"
    script.write_text(SEMAPHORE_SCRIPT)
    p = session.launch([PYTHON, str(script), method, str(RELEASES)])
    p.wait_line(GOT, minimum=30, timeout=60)
    images = session.checkpoint(expect_images=processes)
    p.sigkill()
    session.kill_all()
    before = numbers(p.lines(), GOT)
    assert before[-1] < RELEASES - 1, "finished before the kill"
    r = session.restart(images)
    assert r.wait_exit(120) == 0, (r.lines()[-3:], r.stderr_text())
    after = numbers(r.lines(), GOT)
    assert after[0] <= before[-1] + 1 and after[-1] == RELEASES - 1, (
        before[-1], after[:3], after[-3:])
    assert r.lines()[-1] == "joined 0", r.lines()[-3:]
