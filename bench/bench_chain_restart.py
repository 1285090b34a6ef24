#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Restart from a chain against restart from a full image, with two
builds of ckpt_restart (and its loader) alternating on the same images
(docs/performance.md, "Restart from a chain"): fill_idle of --mib (1024)
MiB writes 1% of its pages before each checkpoint; one full image, then
a chain of --chain (10) incremental images. Then, --repeat (5) times,
for each build given with --build (a directory holding bin/ and lib/,
as build/ does; this tree's build/ when none is given): restart of the
full image and of the chain's last image, until the program answers.
Prints the best and the median of each and the ratio chain/full per
build.

    bench/bench_chain_restart.py --build /tmp/old --build build

Every wait is bounded; a failure prints the tool's stderr and exits 1."""

import argparse
import os
import shutil
import statistics
import sys
import tempfile

# bench_scale first: it imports bench, which imports it back
import bench_scale
import bench as bench_py


def make_images(bench, mib, chain):
    """(full image paths, chain image paths) of one fill_idle; the images
    are moved aside so the chain is not removed by the next full one."""
    app = bench_py.launch_uncompacted(bench, mib, chain)
    try:
        _, full = bench_py.timed_checkpoints(bench, app, 1, [])
        keep = os.path.join(bench.dir, "full")
        os.mkdir(keep)
        full = [shutil.move(p, keep) for p in full]
        _, images = bench_py.timed_checkpoints(bench, app, chain,
                                               ["--incremental"])
    finally:
        bench.kill_computation(app)
    return full, images


def restart_with(bench, build, images):
    """Seconds until the program restarted by build's ckpt_restart
    answers; the computation killed after."""
    t, app = bench.timed_until_answer(
        [os.path.join(build, "bin", "ckpt_restart")] + images)
    try:
        bench.wait_rejoined(len(images))
    finally:
        bench.kill_computation(app)
    return t


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", action="append", default=[],
                    help="a build directory (bin/, lib/); repeatable")
    ap.add_argument("--mib", type=int, default=1024)
    ap.add_argument("--chain", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    builds = [os.path.abspath(b) for b in args.build] or \
        [os.path.join(bench_py.ROOT, "build")]
    workdir = tempfile.mkdtemp(prefix="ckb-chain-")
    bench = bench_py.Bench(workdir)
    try:
        bench.start_coordinator(bench_scale.COORDINATOR_OPTIONS)
        full, chain = make_images(bench, args.mib, args.chain)
        times = {}
        for _ in range(args.repeat):
            for b in builds:
                for kind, images in (("full", full), ("chain", chain)):
                    times.setdefault((b, kind), []).append(
                        restart_with(bench, b, images))
        print("fill_idle %d MiB, 1%% written per checkpoint, chain of %d, "
              "best of %d, load average %s" % (
                  args.mib, args.chain, args.repeat,
                  open("/proc/loadavg").read().split()[0]))
        for b in builds:
            for what, pick in (("best", min), ("median", statistics.median)):
                f, c = pick(times[b, "full"]), pick(times[b, "chain"])
                print("%s: %s: full %.1f ms, chain %.1f ms: %.2fx" % (
                    b, what, f * 1e3, c * 1e3, c / f))
    except bench_py.BenchError as e:
        print("bench_chain_restart: %s" % e, file=sys.stderr)
        return 1
    finally:
        bench.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
