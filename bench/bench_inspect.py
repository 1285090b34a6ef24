# SPDX-License-Identifier: LGPL-2.1-or-later
"""The inspect part of bench/bench.py (--only inspect; docs/performance.md,
"Reading an image"): one fill_idle process of --inspect-mib (1024) MiB
checkpointed once; then, warm page cache, best of --repeat each:
`ckpt_inspect --no-verify` (header, metadata and every thread's
backtrace: the issue's "1 GiB image's metadata and backtraces in well
under a second") and the same with --json, next to `cat IMAGE` (reading
the whole image, the floor of anything that reads it all) and
`ckpt_inspect` verifying every checksum. The time should not grow with
the image: run it with a small --inspect-mib too."""

import os

# bench.py imports this file: its names are looked up when used
import bench as bench_py

BACKTRACE = " <- "


def inspect_once(bench, image, options):
    t, r = bench_py.timed([bench_py.tool("ckpt_inspect")] + options +
                          [image], bench.env)
    out = r.stdout.decode(errors="replace")
    if r.returncode != 0:
        raise bench_py.BenchError("ckpt_inspect %s: exit %d: %s" % (
            " ".join(options), r.returncode,
            r.stderr.decode(errors="replace").strip()))
    return t, out


def best_inspect(bench, image, options, repeat):
    best, out = None, None
    for _ in range(repeat):
        t, out = inspect_once(bench, image, options)
        best = t if best is None else min(best, t)
    return best, out


def measure_inspect(bench, mib, repeat):
    app = bench.launch(mib)
    try:
        _, images, _ = bench.checkpoint(app)
        if len(images) != 1:
            raise bench_py.BenchError("one image expected, got %r" %
                                      images)
        image = images[0]
        out = {"mib": mib, "repeat": repeat,
               "image_bytes": os.path.getsize(image)}
        out["cat_s"] = min(bench.floor_cat(images) for _ in range(repeat))
        out["no_verify_s"], text = best_inspect(
            bench, image, ["--no-verify"], repeat)
        if BACKTRACE not in text:
            raise bench_py.BenchError("ckpt_inspect printed no "
                                      "backtrace:\n" + text)
        out["json_s"], _ = best_inspect(
            bench, image, ["--json", "--no-verify"], repeat)
        out["verify_s"], _ = best_inspect(bench, image, [], repeat)
    finally:
        bench.kill_computation(app)
        bench.clear_images()
    return out


def report_inspect(r):
    print()
    print("ckpt_inspect of a %d MiB image (%.0f MiB on disk), warm cache, "
          "best of %d" % (r["mib"], r["image_bytes"] / 2**20, r["repeat"]))
    for key, what in (("no_verify_s", "--no-verify (metadata, backtraces)"),
                      ("json_s", "--json --no-verify")):
        print("%-36s %8.1f ms (goal: well under 1 s): %.3fx cat of the "
              "image (%.1f ms), %.3fx verifying (%.1f ms)" % (
                  what, r[key] * 1000, r[key] / r["cat_s"],
                  r["cat_s"] * 1000, r[key] / r["verify_s"],
                  r["verify_s"] * 1000))


def run_inspect_part(bench, parts, mib, repeat):
    if "inspect" not in parts:
        return None
    print("measuring ckpt_inspect of %d MiB..." % mib, flush=True)
    return measure_inspect(bench, mib, repeat)
