#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""`ckpt reverse-watch` with threads against the run it searches
(docs/performance.md, "reverse-watch with threads"): gdb with the
extension runs tests/gdb_apps/lock_order_bug (4 threads, ROUNDS rounds of
3 lock events each, a bad write at 5/8 of the tickets), takes a snapshot
at its start, continues to the crash (the forward run, recording the
lock order) and asks `ckpt reverse-watch shared.last`. Prints both
times, their ratio, and where the reverse-watch spent its time (restores,
re-executions, the final single-stepping), best of --repeat by ratio.

Usage: bench/bench_reverse_watch.py [--rounds N] [--repeat N] [--mode M]"""

import argparse
import os
import re
import shutil
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE = os.path.join(ROOT, "tests", "gdb_apps", "lock_order_bug.c")
EXTENSION = os.path.join(ROOT, "dist", "gdb", "ckpt-gdb.py")
BIN = os.path.join(ROOT, "build", "bin")
TIMEOUT = 900

# time the session's phases: each call's duration, summed per name
PROFILE = """
python
import time as _t
_phases = {}
def _timed(name):
    inner = getattr(SESSION, name)
    def timed(*a, **k):
        t = _t.monotonic()
        try:
            return inner(*a, **k)
        finally:
            n, s = _phases.get(name, (0, 0.0))
            _phases[name] = (n + 1, s + _t.monotonic() - t)
    setattr(SESSION, name, timed)
for _n in ("restore", "replay_to", "run_to_event",
           "step_threads_to_change"):
    _timed(_n)
def _clock(label):
    print("CLOCK %s %.6f" % (label, _t.monotonic()))
end
"""

SCRIPT = """
break started
ckpt run %(rounds)d %(mode)s
ckpt snapshot
python _clock("run")
continue
python _clock("crash")
ckpt reverse-watch shared.last
python _clock("found")
python for k, (n, s) in sorted(_phases.items()): print("PHASE %%s %%d %%.3f" %% (k, n, s))
python print("FOUND ticket %%d of %%d, divergences %%d" %% (int(gdb.parse_and_eval("ticket")), int(gdb.parse_and_eval("bad_ticket")), int(gdb.parse_and_eval("ckpt_lock_order_divergences"))))
"""


def run_once(work, exe, rounds, mode):
    script = os.path.join(work, "bench.gdb")
    with open(script, "w") as f:
        f.write("source %s\n" % EXTENSION)
        f.write("set args > %s\n" % os.path.join(work, "out"))
        f.write(PROFILE)
        f.write(SCRIPT % {"rounds": rounds, "mode": mode})
    env = dict(os.environ, CKPT_BIN=BIN, CKPT_GDB_TIMEOUT="600")
    r = subprocess.run(["gdb", "-nx", "-q", "-batch", "-x", script, exe],
                       capture_output=True, text=True, timeout=TIMEOUT,
                       cwd=work, env=env)
    text = r.stdout + r.stderr
    clocks = dict((k, float(v)) for k, v in
                  re.findall(r"^CLOCK (\w+) ([\d.]+)$", text, re.M))
    found = re.search(r"^FOUND ticket (\d+) of (\d+), divergences 0$", text,
                      re.M)
    if "found" not in clocks or not found or found.group(1) != \
            found.group(2):
        raise SystemExit("reverse-watch failed (not at the bad ticket's "
                         "write, or a divergence):\n" + text[-3000:])
    phases = re.findall(r"^PHASE (\w+) (\d+) ([\d.]+)$", text, re.M)
    return (clocks["crash"] - clocks["run"], clocks["found"] -
            clocks["crash"], phases)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=40000)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--mode", default="", help="sem or c11")
    args = p.parse_args()
    work = tempfile.mkdtemp(prefix="ckpt-bench-rwatch-")
    try:
        exe = os.path.join(work, "lock_order_bug")
        subprocess.run(["cc", "-g", "-O0", "-pthread", "-o", exe, SOURCE],
                       check=True)
        best = None
        for _ in range(args.repeat):
            run, watch, phases = run_once(work, exe, args.rounds,
                                          args.mode)
            print("run %.2f s, reverse-watch %.2f s: %.2fx; %s" % (
                run, watch, watch / run, ", ".join(
                    "%s %sx %s s" % ph for ph in phases)))
            if best is None or watch / run < best[1] / best[0]:
                best = (run, watch)
        print("best: forward run %.2f s, reverse-watch %.2f s, ratio "
              "%.2fx (goal <= 0.5x: a 60 s run in 30 s)" % (
                  best[0], best[1], best[1] / best[0]))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
