#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The cost of recording the lock order (wrappers/lock_order.c, on under
the gdb extension: docs/reversible-debugging.md): build/bench/
lock_order_cost (8 threads, 4 shared mutexes) under ckpt_launch with
CKPT_RECORD_INPUTS set and without, alternating, best of --repeat each,
for several amounts of work between two locks. Prints the ratios
(docs/performance.md, "Recording the lock order").

Also a pure-Python computation (python3, one thread: no lock events of
its own; the interpreter's clock and random calls recorded), recording vs
not.

Usage: bench/bench_lock_order.py [--repeat N] [--threads N]"""

import argparse
import os
import shutil
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRAM = os.path.join(ROOT, "build", "bench", "lock_order_cost")
LAUNCH = os.path.join(ROOT, "build", "bin", "ckpt_launch")
# (iterations per thread, additions between two locks)
CASES = ((20000, 0), (20000, 1000), (2000, 100000))
TIMEOUT = 300
# a mostly-computing Python program: prints its own time in ns
PYTHON_WORK = """
import time
t = time.perf_counter_ns()
total = 0
for i in range(3000000):
    total += (i * i) % 7
print(total, time.perf_counter_ns() - t)
"""


def run_once(workdir, threads, iterations, work, recording, argv=None):
    env = dict(os.environ)
    env.pop("CKPT_RECORD_INPUTS", None)
    if recording:
        record = os.path.join(workdir, "record")
        for f in os.listdir(workdir):
            os.unlink(os.path.join(workdir, f))
        env["CKPT_RECORD_INPUTS"] = record
    coord = os.path.join(workdir, "..", "coord.sock")
    argv = argv or [PROGRAM, str(threads), str(iterations), str(work)]
    r = subprocess.run([LAUNCH, "--coord", coord, "--"] + argv,
                       env=env, capture_output=True, text=True,
                       timeout=TIMEOUT)
    if r.returncode != 0:
        raise SystemExit("lock_order_cost failed: %s" % r.stderr)
    return float(r.stdout.split()[-1]) / 1e9


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--threads", type=int, default=8)
    args = p.parse_args()
    top = tempfile.mkdtemp(prefix="ckpt-bench-locks-")
    workdir = os.path.join(top, "records")
    os.makedirs(workdir)
    try:
        print("%-28s %10s %10s %8s" % ("locks/thread, work", "plain",
                                       "recording", "ratio"))
        for iterations, work in CASES:
            best = {False: None, True: None}
            for _ in range(args.repeat):
                for recording in (False, True):
                    t = run_once(workdir, args.threads, iterations, work,
                                 recording)
                    if best[recording] is None or t < best[recording]:
                        best[recording] = t
            print("%-28s %8.1f ms %8.1f ms %7.2fx" % (
                "%d, %d additions" % (iterations, work),
                best[False] * 1e3, best[True] * 1e3,
                best[True] / best[False]))
        best = {False: None, True: None}
        for _ in range(args.repeat):
            for recording in (False, True):
                t = run_once(workdir, 0, 0, 0, recording,
                             ["/usr/bin/python3", "-c", PYTHON_WORK])
                if best[recording] is None or t < best[recording]:
                    best[recording] = t
        print("%-28s %8.1f ms %8.1f ms %7.2fx" % (
            "python3, 3M loop iterations", best[False] * 1e3,
            best[True] * 1e3, best[True] / best[False]))
    finally:
        shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    main()
