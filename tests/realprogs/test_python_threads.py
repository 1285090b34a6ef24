# SPDX-License-Identifier: LGPL-2.1-or-later
"""python3 with four worker threads fed through queue.Queue, sharing a
dict under a threading.Lock; the main thread collects each round's
results and prints a running digest. Every thread is checkpointed
wherever it is (hashing, waiting for the GIL, blocked in a queue)."""

import pytest

from realprogs.driver import Program, check_program, require

PYTHON = "/usr/bin/python3"
SCRIPT = r"""
import hashlib, queue, sys, threading
rounds, tasks, work = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
todo, done = queue.Queue(), queue.Queue()
lock = threading.Lock()
totals = {}

def worker():
    while True:
        item = todo.get()
        if item is None:
            return
        r, t = item
        h = ("%d.%d" % (r, t)).encode()
        for _ in range(work):
            h = hashlib.sha256(h).digest()
        with lock:
            totals[t % 7] = totals.get(t % 7, 0) + h[0]
        done.put((t, h.hex()[:12]))

threads = [threading.Thread(target=worker) for _ in range(4)]
for th in threads:
    th.start()
digest = hashlib.sha256()
for r in range(1, rounds + 1):
    for t in range(tasks):
        todo.put((r, t))
    for t, h in sorted(done.get(timeout=600) for _ in range(tasks)):
        digest.update(h.encode())
    print("step %d %s" % (r, digest.hexdigest()[:16]), flush=True)
for th in threads:
    todo.put(None)
for th in threads:
    th.join()
print("final", digest.hexdigest(), sorted(totals.items()))
"""


class PythonThreads(Program):
    name = "python3-threads"

    def argv(self, run):
        return [PYTHON, "-c", SCRIPT, "100", "8", "8000"]

    def finished(self, run):
        return any(l.startswith("final ") for l in run.stdout_lines())


@pytest.mark.time_limit(600)
def test_python3_threads(session):
    require(PYTHON, "python3")
    check_program(session, PythonThreads())
