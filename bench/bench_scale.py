# SPDX-License-Identifier: LGPL-2.1-or-later
"""The scale part of bench/bench.py (--only scale; docs/performance.md,
"Scale"): checkpoint time against memory (one fill_idle process of 1 GiB
and one of --scale-mib, 8192) next to dd with fsync of the same size,
and a computation of --scale-procs (64) fill_idle processes of
--scale-proc-mib (64) MiB each against one process holding as much, with
the coordinator's share of the many-process round: its own CPU time
between the round's start and its end, as `ckpt_command --status` says
("coordinator busy N ms")."""

import os
import re

from bench import BenchError, run, tool

COORDINATOR_OPTIONS = ("--phase-timeout", "30")
BUSY = re.compile(r"^last checkpoint: .*\(coordinator busy ([\d.]+) ms\)",
                  re.M)


def coordinator_busy_ms(bench):
    """The coordinator's CPU time in the last round (ckpt_command
    --status)."""
    r = run([tool("ckpt_command"), "--status"], bench.env, timeout=30)
    found = BUSY.search(r.stdout.decode(errors="replace"))
    return float(found.group(1)) if found else None


def checkpoints(bench, repeat):
    """[(seconds, coordinator busy ms)] of repeat checkpoints of every
    process of the coordinator, each image removed after it."""
    out = []
    for _ in range(repeat):
        t, _, _ = bench.checkpoint()
        out.append((t, coordinator_busy_ms(bench)))
        bench.clear_images()
    return out


def kill_all(bench, apps):
    bench.kill_computation(apps[0])
    for app in apps[1:]:
        app.kill()


def measure_processes(bench, nprocs, mib, repeat):
    apps = []
    try:
        for _ in range(nprocs):
            apps.append(bench.launch(mib))
        runs = checkpoints(bench, repeat)
    finally:
        if apps:
            kill_all(bench, apps)
    best = min(runs)
    return {"nprocs": nprocs, "mib": mib, "checkpoint_s": best[0],
            "busy_ms": best[1], "busy_ms_max": max(b for _, b in runs
                                                   if b is not None)}


def attempt(nprocs, mib, measure):
    """measure(), or what failed: a failure of one figure (a checkpoint
    refused under load) is reported, the others still measured."""
    try:
        return measure()
    except Exception as e:  # bench.py runs as __main__: its BenchError
        if type(e).__name__ != BenchError.__name__:
            raise
        return {"nprocs": nprocs, "mib": mib,
                "error": str(e).splitlines()[0]}


def measure_scale(bench, big_mib, nprocs, proc_mib, repeat):
    out = {"single": [], "many": None, "same_total": None}
    for mib in (1024, big_mib):
        def single(mib=mib):
            r = measure_processes(bench, 1, mib, repeat)
            r["dd_fsync_s"] = min(bench.floor_dd(mib, fsync=True)
                                  for _ in range(2))
            return r
        out["single"].append(attempt(1, mib, single))
        bench.clear_images()
    out["many"] = attempt(nprocs, proc_mib, lambda: measure_processes(
        bench, nprocs, proc_mib, repeat))
    bench.clear_images()
    out["same_total"] = attempt(1, nprocs * proc_mib,
                                lambda: measure_processes(
                                    bench, 1, nprocs * proc_mib, repeat))
    return out


def report_scale(s):
    print()
    print("scale: checkpoint (until durable) against memory, best of each")
    for r in [s["many"], s["same_total"]] + s["single"]:
        if "error" in r:
            print("%d process(es) of %d MiB: FAILED: %s" % (
                r["nprocs"], r["mib"], r["error"]))
    single = [r for r in s["single"] if "error" not in r]
    for r in single:
        print("1 process, %5d MiB: %8.0f ms, dd+fsync %8.0f ms: %.2fx; "
              "%.0f ms per GiB" % (
                  r["mib"], r["checkpoint_s"] * 1e3, r["dd_fsync_s"] * 1e3,
                  r["checkpoint_s"] / r["dd_fsync_s"],
                  r["checkpoint_s"] * 1e3 / (r["mib"] / 1024)))
    if len(single) == 2:
        a, b = single
        print("time per GiB, %d MiB over %d MiB: %.2fx (linear: 1.0)" % (
            b["mib"], a["mib"], (b["checkpoint_s"] / b["mib"]) /
            (a["checkpoint_s"] / a["mib"])))
    m, t = s["many"], s["same_total"]
    if "error" not in t:
        print("1 process, %5d MiB: %8.0f ms" % (t["mib"],
                                               t["checkpoint_s"] * 1e3))
    if "error" in m:
        return
    print("%d processes of %d MiB: %.0f ms%s" % (
        m["nprocs"], m["mib"], m["checkpoint_s"] * 1e3,
        "" if "error" in t else ": %.2fx the one process of as much" % (
            m["checkpoint_s"] / t["checkpoint_s"])))
    print("coordinator's share of the %d-process round (its CPU time): "
          "%.1f ms in the best run, at most %.1f ms (goal <= 20 ms)" % (
              m["nprocs"], m["busy_ms"] or -1, m["busy_ms_max"]))
