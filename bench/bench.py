#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""ckpt benchmark: checkpoint and restart times against their floors.

For processes holding 16 MiB, 256 MiB and 1 GiB of random data
(build/bench/fill_idle) it measures, in one run:
  - checkpoint time: `ckpt_command --checkpoint` from start to return
    (the images are durable then: fsync'ed and renamed);
  - image size;
  - restart time: from starting `ckpt_restart IMAGE` until the program
    answers again (its first "pong"/"resumed" line);
  - the floors: `dd if=/dev/zero of=CKPTDIR/x bs=1M count=N` (page cache,
    and with conv=fsync for reference) and `cat IMAGE > /dev/null`, each
    the best of three back-to-back runs;
and prints checkpoint/dd and restart/cat, each figure the best of
--repeat runs (3). Then the end-to-end latency of
checkpointing a small (4 MiB) process, best and median of 10.

Usage: bench/bench.py [--sizes 16,256,1024] [--dir DIR] [--json FILE]
Every wait is bounded; a failure prints the tool's stderr and exits 1.
"""

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "build", "bin")
FILL_IDLE = os.path.join(ROOT, "build", "bench", "fill_idle")
TIMEOUT = 300


class BenchError(Exception):
    pass


def tool(name):
    return os.path.join(BIN, name)


class App:
    """A process under test whose stdout lines arrive in a thread."""

    def __init__(self, argv, env):
        self.popen = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE)
        self.lines = []
        self.cond = threading.Condition()
        self.err = b""
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    def _read(self):
        for raw in iter(self.popen.stdout.readline, b""):
            with self.cond:
                self.lines.append((time.monotonic(), raw.decode().strip()))
                self.cond.notify_all()
        with self.cond:
            self.lines.append((time.monotonic(), None))
            self.cond.notify_all()

    def _read_err(self):
        self.err = self.popen.stderr.read()

    def ping(self):
        try:
            self.popen.stdin.write(b"ping\n")
            self.popen.stdin.flush()
        except OSError:
            pass

    def wait_line(self, prefixes, after=0, timeout=TIMEOUT):
        """Time at which the first line starting with one of prefixes was
        read, among lines from index `after` on."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for t, line in self.lines[after:]:
                    if line is None:
                        raise BenchError("%s exited (%s): %s" % (
                            self.popen.args[0], self.popen.poll(),
                            self.err.decode(errors="replace").strip()))
                    if line.startswith(prefixes):
                        return t
                left = deadline - time.monotonic()
                if left <= 0:
                    raise BenchError("no %r line within %ds" % (
                        prefixes, timeout))
                self.cond.wait(min(left, 1.0))

    def kill(self):
        if self.popen.poll() is None:
            os.kill(self.popen.pid, signal.SIGKILL)
        self.popen.wait(30)


def run(argv, env, timeout=TIMEOUT, **kw):
    try:
        r = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout, **kw)
    except subprocess.TimeoutExpired:
        raise BenchError("%s: no answer within %ds" % (" ".join(argv),
                                                         timeout))
    if r.returncode != 0:
        raise BenchError("%s: exit %d: %s" % (
            " ".join(argv), r.returncode,
            r.stderr.decode(errors="replace").strip()))
    return r


def timed(argv, env, **kw):
    t0 = time.monotonic()
    r = run(argv, env, **kw)
    return time.monotonic() - t0, r


class Bench:
    def __init__(self, workdir):
        self.dir = workdir
        self.ckptdir = os.path.join(workdir, "ckpt")
        os.mkdir(self.ckptdir, 0o700)
        self.env = dict(os.environ)
        self.env.pop("LD_PRELOAD", None)
        self.env["CKPT_COORD"] = os.path.join(workdir, "c.sock")
        self.env["CKPT_DIR"] = self.ckptdir
        self.coordinator = None

    def start_coordinator(self):
        # One long-lived coordinator, so launch and restart times do not
        # include starting one.
        self.coordinator = subprocess.Popen(
            [tool("ckpt_coordinator"), "--coord", self.env["CKPT_COORD"],
             "--daemon"], env=self.env, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 30
        while True:
            r = subprocess.run([tool("ckpt_command"), "--status"],
                               env=self.env, stdin=subprocess.DEVNULL,
                               capture_output=True, timeout=30)
            if r.returncode == 0:
                return
            if time.monotonic() > deadline:
                raise BenchError("coordinator at %s did not answer: %s" % (
                    self.env["CKPT_COORD"], r.stderr.decode().strip()))
            time.sleep(0.05)

    def stop(self):
        try:
            subprocess.run([tool("ckpt_command"), "--quit"], env=self.env,
                           stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=15)
        except (OSError, subprocess.TimeoutExpired):
            pass
        if self.coordinator:
            if self.coordinator.poll() is None:
                try:
                    self.coordinator.wait(5)
                except subprocess.TimeoutExpired:
                    self.coordinator.kill()
                    self.coordinator.wait(10)

    def launch(self, mib):
        app = App([tool("ckpt_launch"), "--", FILL_IDLE, str(mib)],
                  self.env)
        try:
            app.wait_line(("ready",))
            n = len(app.lines)
            app.ping()
            app.wait_line(("pong",), after=n, timeout=30)
        except BenchError:
            app.kill()
            raise
        return app

    def checkpoint(self, app=None):
        """Returns (seconds, images, ms the app was stopped or None)."""
        n = len(app.lines) if app else 0
        t, r = timed([tool("ckpt_command"), "--checkpoint"], self.env)
        images = r.stdout.decode().split()
        if not images:
            raise BenchError("ckpt_command --checkpoint printed no image")
        stopped = None
        if app:
            # fill_idle reports a stop longer than 20 ms when it resumes.
            app.ping()
            app.wait_line(("pong",), after=n, timeout=30)
            with app.cond:
                stops = [int(l.split()[2]) for _, l in app.lines[n:]
                         if l and l.startswith("resumed after ")]
            stopped = max(stops) if stops else 0
        return t, images, stopped

    def restart(self, images):
        t0 = time.monotonic()
        app = App([tool("ckpt_restart")] + images, self.env)
        app.ping()
        try:
            t1 = app.wait_line(("pong", "resumed"))
        except BenchError:
            app.kill()
            raise
        return t1 - t0, app

    def floor_dd(self, mib, fsync=False):
        target = os.path.join(self.ckptdir, "dd.tmp")
        argv = ["dd", "if=/dev/zero", "of=" + target, "bs=1M",
                "count=%d" % mib]
        if fsync:
            argv.append("conv=fsync")
        try:
            t, _ = timed(argv, self.env)
        finally:
            if os.path.exists(target):
                os.unlink(target)
        return t

    def floor_cat(self, images):
        t0 = time.monotonic()
        for img in images:
            with open(os.devnull, "wb") as null:
                subprocess.run(["cat", img], stdout=null, check=True,
                               timeout=TIMEOUT)
        return time.monotonic() - t0

    def measure_once(self, mib):
        app = self.launch(mib)
        try:
            t_ckpt, images, stopped = self.checkpoint(app)
        finally:
            app.kill()
        size = sum(os.path.getsize(i) for i in images)
        # Floors: best of three back-to-back runs each. On this VM the
        # first touch of freed memory is slow (the host took it back), so
        # a single dd is up to 10x slower than a warm one.
        t_dd = min(self.floor_dd(mib) for _ in range(3))
        t_dd_sync = min(self.floor_dd(mib, fsync=True) for _ in range(3))
        t_cat = min(self.floor_cat(images) for _ in range(3))
        t_restart, restarted = self.restart(images)
        restarted.kill()
        for img in images:
            os.unlink(img)
        return {"checkpoint_s": t_ckpt, "stopped_ms": stopped,
                "image_bytes": size,
                "restart_s": t_restart, "dd_s": t_dd,
                "dd_fsync_s": t_dd_sync, "cat_s": t_cat}

    def measure_size(self, mib, repeat):
        """Best of `repeat` runs for each figure: page-cache timings on a
        shared VM vary by several times from one run to the next (ext4
        with online discard here), so the minimum is the stable number."""
        runs = [self.measure_once(mib) for _ in range(repeat)]
        best = {k: min(r[k] for r in runs) for k in runs[0]}
        best.update({"mib": mib, "repeat": repeat, "runs": runs,
                     "checkpoint_over_dd": best["checkpoint_s"] / best["dd_s"],
                     "checkpoint_over_dd_fsync":
                         best["checkpoint_s"] / best["dd_fsync_s"],
                     "restart_over_cat": best["restart_s"] / best["cat_s"]})
        return best

    def small_latency(self, mib=4, runs=10):
        app = self.launch(mib)
        times = []
        try:
            for _ in range(runs):
                t, images, _ = self.checkpoint()
                times.append(t)
        finally:
            app.kill()
        for img in os.listdir(self.ckptdir):
            os.unlink(os.path.join(self.ckptdir, img))
        return {"mib": mib, "runs": runs, "best_s": min(times),
                "median_s": statistics.median(times)}


def ms(s):
    return "%8.1f ms" % (s * 1000)


def report(results, small):
    print()
    print("%-8s %12s %9s %9s %12s %12s %12s %12s %8s %8s" % (
        "size", "checkpoint", "stopped", "image MiB", "dd", "dd+fsync",
        "restart", "cat", "ckpt/dd", "rst/cat"))
    for r in results:
        print("%-8s %12s %9s %9.1f %12s %12s %12s %12s %8.2f %8.2f" % (
            "%d MiB" % r["mib"], ms(r["checkpoint_s"]),
            "<20 ms" if not r["stopped_ms"] else "%d ms" % r["stopped_ms"],
            r["image_bytes"] / 2**20, ms(r["dd_s"]), ms(r["dd_fsync_s"]),
            ms(r["restart_s"]), ms(r["cat_s"]), r["checkpoint_over_dd"],
            r["restart_over_cat"]))
    if small:
        print()
        print("small process (%d MiB) checkpoint, %d runs: best %s, "
              "median %s" % (small["mib"], small["runs"],
                             ms(small["best_s"]).strip(),
                             ms(small["median_s"]).strip()))
    print()
    if results:
        print()
        print("each figure is the best of %d runs" % results[0]["repeat"])
    print("stopped = how long the application was stopped by the "
          "checkpoint (as it saw it);")
    print("checkpoint = ckpt_command --checkpoint until images are durable;"
          " dd = page cache write of the same size (dd+fsync: to disk);")
    print("restart = ckpt_restart until the program answers; cat = reading"
          " the image from the page cache.")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="16,256,1024",
                    help="comma-separated MiB sizes (default 16,256,1024)")
    ap.add_argument("--dir", default=None,
                    help="work directory (default: a new one in /tmp)")
    ap.add_argument("--json", default=None, help="also write results here")
    ap.add_argument("--small-runs", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs per size; each figure is the best (3)")
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",") if x]

    missing = [p for p in [tool(t) for t in (
        "ckpt_launch", "ckpt_command", "ckpt_restart", "ckpt_coordinator")]
        + [FILL_IDLE] if not os.path.exists(p)]
    if missing:
        print("bench: not built (run make): " + ", ".join(missing),
              file=sys.stderr)
        return 1
    workdir = tempfile.mkdtemp(prefix="ckb-", dir=args.dir or "/tmp")
    bench = Bench(workdir)
    results, small = [], None
    try:
        bench.start_coordinator()
        for mib in sizes:
            print("measuring %d MiB..." % mib, flush=True)
            results.append(bench.measure_size(mib, args.repeat))
        print("measuring small-process latency...", flush=True)
        small = bench.small_latency(runs=args.small_runs)
    except (BenchError, OSError, subprocess.SubprocessError) as e:
        print("bench: %s" % e, file=sys.stderr)
        report(results, small)
        return 1
    finally:
        bench.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    report(results, small)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"sizes": results, "small": small}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
