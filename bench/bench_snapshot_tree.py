# SPDX-License-Identifier: LGPL-2.1-or-later
"""Snapshots of a process tree (docs/performance.md, "Forked checkpoints
and snapshots"; docs/embedding.md, "Template snapshots of a tree"):

    bench/bench_snapshot_tree.py [--sizes 16,256] [--repeat 3]

A tree of 3 fill_idle processes of MIB each (the parent and 2 children
with a pipe from it each: `fill_idle MIB 2`), per size and per snapshot
kind (the tree's templates, and CKPT_SNAPSHOT_KIND=image in the
coordinator's environment; one coordinator per kind, both up for the
whole run), alternating the kinds within one run:
`ckpt_command --snapshot`, then `--restore` of it until the restored
parent answers, twice (the first restore of templates writes the
images, the second reuses them). The floor is a plain fork() of each of
the 3 processes: 3 times the parent's (fill_idle's "fork" command).
Best of --repeat each; prints ratios to the floor and the load average.
Every wait is bounded."""

import argparse
import os
import shutil
import sys
import tempfile

import bench_scale  # noqa: F401 (first: bench.py imports it, it imports bench)
from bench import (Bench, BenchError, FILL_IDLE, app_answer, restore_timed,
                   run, snapshot_timed, tool)

KINDS = ("templates", "image")
PROCS = 3


def one_cycle(bench, mib, best):
    """Launch the tree, snapshot it, restore it twice; best times in
    best (seconds)."""
    app = bench.launch(mib, [FILL_IDLE, str(mib), str(PROCS - 1)])
    try:
        fork_s = app_answer(app, "fork", "fork ") / 1e6
        best["fork_s"] = min(best.get("fork_s", fork_s), fork_s)
        t, _, sid = snapshot_timed(bench, app)
        best["snapshot_s"] = min(best.get("snapshot_s", t), t)
        for which in ("restore1_s", "restore2_s"):
            t, restored = restore_timed(bench, sid)
            app.kill()
            app = restored
            best[which] = min(best.get(which, t), t)
            bench.wait_rejoined(PROCS)
        run([tool("ckpt_command"), "--drop", sid], bench.env)
    finally:
        bench.kill_computation(app)


def start_benches(workdir):
    """One coordinator per kind (CKPT_SNAPSHOT_KIND=image in the image
    one's environment), both kept up for the whole run."""
    benches = {}
    for kind in KINDS:
        path = os.path.join(workdir, kind)
        os.mkdir(path, 0o700)
        benches[kind] = Bench(path)
        if kind == "image":
            benches[kind].env["CKPT_SNAPSHOT_KIND"] = "image"
        benches[kind].start_coordinator()
    return benches


def measure(benches, sizes, repeat):
    rows = []
    for mib in sizes:
        best = {k: {} for k in KINDS}
        for _ in range(repeat):
            for kind in KINDS:
                one_cycle(benches[kind], mib, best[kind])
        rows.append((mib, best))
    return rows


def report(rows, repeat):
    print("3-process tree (fill_idle MIB 2: 3 x MIB), best of %d; floor: "
          "3 plain forks of the parent (the best of either kind's runs); "
          "load average %.1f %.1f %.1f" % ((repeat,) + os.getloadavg()))
    print("%-6s %-10s %9s %11s %7s %11s %7s %11s %7s" % (
        "MiB", "kind", "3 forks", "snapshot", "/fork", "restore 1",
        "/fork", "restore 2", "/fork"))
    for mib, best in rows:
        floor = PROCS * min(best[k]["fork_s"] for k in KINDS)
        for kind in KINDS:
            b = best[kind]
            print("%-6d %-10s %6.1f ms %8.1f ms %6.1fx %8.1f ms %6.1fx "
                  "%8.1f ms %6.1fx" % (
                      mib, kind, floor * 1e3, b["snapshot_s"] * 1e3,
                      b["snapshot_s"] / floor, b["restore1_s"] * 1e3,
                      b["restore1_s"] / floor, b["restore2_s"] * 1e3,
                      b["restore2_s"] / floor))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="16,256",
                    help="MiB per process, comma separated")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    workdir = tempfile.mkdtemp(prefix="ckpt-bench-tree-")
    benches = {}
    try:
        benches = start_benches(workdir)
        rows = measure(benches, sizes, args.repeat)
    except (BenchError, OSError) as e:
        print("bench_snapshot_tree: %s" % e, file=sys.stderr)
        return 1
    finally:
        for b in benches.values():
            b.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    report(rows, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
