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

Then the restart part (--restart-mib, 1024): restart-to-running of a
fill_idle process mapped from its image (the default) and with --copy,
next to `cat` of the image; and the restarted program's first full read
pass and first full write pass over its memory against the same passes
in the original process (fill_idle's "read"/"write" commands).

Then (docs/performance.md): build/bench/tcp_conns with --sockets (1000)
TCP connections between its two processes against none, checked after
every restart (checkpoint and restart added); and redis-server holding
--redis (1024) MiB of random values against fill_idle of its resident
size, DBSIZE checked after every restart (the ratios).

Then the cost of running under ckpt: build/bench/wrapped_calls (fork,
posix_spawn, exec, pipe round trip, getpid, clock_gettime, pthread_create,
sigaction) plain and under ckpt_launch, and two whole programs (make -j2
of a 100-file C project, a pytest run of small tests), each ratio next to
its target (--only wrappers; --only programs: the programs alone).

Usage: bench/bench.py [--sizes 16,256,1024] [--dir DIR] [--json FILE]
                      [--only sizes,small,restart,sockets,redis,compress,
                              incremental,snapshots,wrappers,programs,
                              inspect]
                      [--restart-mib MIB] [--sockets N] [--redis MIB]

--only incremental (docs/performance.md, "Incremental checkpoints"):
fill_idle of --incremental-mib (1024) MiB writing 1% of its pages
between checkpoints: a full checkpoint (plain, best of --repeat) against
an incremental one (`ckpt_command --checkpoint --incremental`, the best
of the 9 deltas of a chain of 10), time and image size (goal <= 5%), and
the restart of the chain of 10 against the restart of the full image
(best of --repeat each, alternating; goal <= 1.2x).

--only compress (docs/performance.md, "Compression"): a 1 GiB random fill
checkpointed with and without `ckpt_command --checkpoint --compress`
(the ratio: goal <= 1.2x), python3 holding a typical heap (bench/py_heap.py:
small objects and a text buffer) compressed: the ratio (goal >= 3x) and
the memory saved per second of checkpoint (goal >= 1 GB/s), and the cost
of the zero-page test against the hash (build/bench/zero_scan).
--only snapshots (docs/performance.md, "Forked checkpoints"): for each
of --sizes, fill_idle's plain fork() (the floor, its "fork" command)
next to the application's stall (its longest idle-loop gap, "gap")
during a normal checkpoint and during `ckpt_command --checkpoint
--forked`: forked/fork (goal <= 2x) and normal/forked (goal >= 10x at
1 GiB); then `ckpt_command --snapshot` (its time and the stall) and
`ckpt_command --restore ID` until the restored program answers, each
next to the fork (goals <= 2x, <= 3x); best of --repeat each. A process
of its own is snapshotted as a template (docs/embedding.md, "Template
snapshots"). The fixed part of both, `ckpt_command --status` (starting
the tool and one round trip to the coordinator), is shown beside them.
The same without a tool to start: `ckpt_snapshot()` from inside
fill_idle ("snapshot" command), and build/bench/snapshot_api (a tool
linking libckpt-control: ckpt_control_snapshot, and the restore with
ckpt_control_restore_template and the template's RESTORE order, until
the restored program answers).
--only inspect (docs/performance.md, "Reading an image"): ckpt_inspect
of a --inspect-mib (1024) MiB image against cat of it (bench_inspect.py).
Every wait is bounded; a failure prints the tool's stderr and exits 1.
"""

import argparse
import glob
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import bench_scale
import bench_inspect  # after bench_scale: its "from bench import" first

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "build", "bin")
FILL_IDLE = os.path.join(ROOT, "build", "bench", "fill_idle")
TCP_CONNS = os.path.join(ROOT, "build", "bench", "tcp_conns")
ZERO_SCAN = os.path.join(ROOT, "build", "bench", "zero_scan")
PY_HEAP = os.path.join(ROOT, "bench", "py_heap.py")
WRAPPED_CALLS = os.path.join(ROOT, "build", "bench", "wrapped_calls")
SNAPSHOT_API = os.path.join(ROOT, "build", "bench", "snapshot_api")
REDIS_SERVER = "/usr/bin/redis-server"
REDIS_CLI = "/usr/bin/redis-cli"
# A redis value fills jemalloc's 4 KiB size class exactly (sds header and
# terminating NUL included), so the resident size is mostly the data.
REDIS_VALUE_BYTES = 4080
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

    def start_coordinator(self, options=()):
        # One long-lived coordinator, so launch and restart times do not
        # include starting one.
        self.coordinator = subprocess.Popen(
            [tool("ckpt_coordinator"), "--coord", self.env["CKPT_COORD"],
             "--daemon"] + list(options), env=self.env, stdin=subprocess.DEVNULL,
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

    def launch(self, mib, argv=None):
        app = App([tool("ckpt_launch"), "--"] +
                  (argv or [FILL_IDLE, str(mib)]), self.env)
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

    def restart(self, images, options=()):
        return self.timed_until_answer([tool("ckpt_restart")] +
                                       list(options) + images)

    def timed_until_answer(self, argv):
        """Start argv (a restart) and time it until the program answers:
        (seconds, the App)."""
        t0 = time.monotonic()
        app = App(argv, self.env)
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

    @staticmethod
    def timed_pass(app, kind):
        """fill_idle's timed pass over its memory: seconds."""
        n = len(app.lines)
        app.popen.stdin.write(kind.encode() + b"\n")
        app.popen.stdin.flush()
        app.wait_line((kind + " ",), after=n)
        with app.cond:
            line = [l for _, l in app.lines[n:] if l and
                    l.startswith(kind + " ")][0]
        return int(line.split()[1]) / 1e6

    def passes(self, app):
        return {"read_s": self.timed_pass(app, "read"),
                "write_s": self.timed_pass(app, "write")}

    def measure_restart_modes(self, mib, repeat):
        """Mapped and --copy restart of one image, each the best of
        repeat, with the restarted program's first read and write pass;
        the original's passes and cat of the image, best of repeat."""
        app = self.launch(mib)
        try:
            orig = [self.passes(app) for _ in range(repeat)]
            _, images, _ = self.checkpoint(app)
        finally:
            app.kill()
        res = {"mib": mib, "repeat": repeat,
               "cat_s": min(self.floor_cat(images) for _ in range(3)),
               "original": {k: min(o[k] for o in orig) for k in orig[0]}}
        for mode, options in (("mapped", ()), ("copy", ("--copy",))):
            runs = []
            for _ in range(repeat):
                t, restarted = self.restart(images, options)
                try:
                    runs.append(dict(restart_s=t, **self.passes(restarted)))
                finally:
                    restarted.kill()
            res[mode] = {k: min(r[k] for r in runs) for k in runs[0]}
            res[mode]["restart_over_cat"] = (res[mode]["restart_s"] /
                                             res["cat_s"])
            for k in ("read_s", "write_s"):
                res[mode][k + "_ratio"] = (res[mode][k] /
                                           res["original"][k])
        for img in images:
            os.unlink(img)
        return res

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

    def kill_computation(self, app):
        """Kill every process of the computation (tcp_conns' child too),
        then the one we started."""
        try:
            run([tool("ckpt_command"), "--kill"], self.env, timeout=30)
        except BenchError:
            pass
        app.kill()

    def clear_images(self):
        for img in os.listdir(self.ckptdir):
            path = os.path.join(self.ckptdir, img)
            if os.path.isfile(path):
                os.unlink(path)

    def cycle(self, app, answered, pings):
        """Checkpoint app, kill it, restart it; answered(restarted) returns
        the time the restarted computation answered. pings: app answers
        "ping" and reports its stops (fill_idle, tcp_conns). Returns
        (figures, the restarted App)."""
        t_ckpt, images, stopped = self.checkpoint(app if pings else None)
        size = sum(os.path.getsize(i) for i in images)
        self.kill_computation(app)
        t0 = time.monotonic()
        restarted = App([tool("ckpt_restart")] + images, self.env)
        try:
            t_restart = answered(restarted) - t0
        except BenchError:
            self.kill_computation(restarted)
            raise
        self.clear_images()
        self.wait_rejoined(len(images))
        return {"checkpoint_s": t_ckpt, "stopped_ms": stopped,
                "image_bytes": size,
                "restart_s": t_restart}, restarted

    def wait_rejoined(self, nprocs, timeout=60):
        """Wait until the coordinator lists nprocs restarted processes: a
        restored process may answer before its child rejoined, and a
        checkpoint then would save only part of the computation."""
        deadline = time.monotonic() + timeout
        while True:
            r = run([tool("ckpt_command"), "--list"], self.env, timeout=30)
            if r.stdout.decode().count("restarted=yes") >= nprocs:
                return
            if time.monotonic() > deadline:
                raise BenchError("%d restarted processes did not all rejoin "
                                 "the coordinator within %ds: %s" % (
                                     nprocs, timeout,
                                     r.stdout.decode().strip()))
            time.sleep(0.01)

    def cycles(self, app, answered, verify, repeat, pings=True):
        """repeat checkpoint/kill/restart cycles, each of the computation
        the last one restarted; verify(app) after each restart. Each
        figure is the best of the runs."""
        runs = []
        try:
            for _ in range(repeat):
                fig, app = self.cycle(app, answered, pings)
                runs.append(fig)
                verify(app)
        finally:
            self.kill_computation(app)
        best = {k: min(r[k] for r in runs if r[k] is not None)
                if any(r[k] is not None for r in runs) else None
                for k in runs[0]}
        best.update({"repeat": repeat, "runs": runs})
        return best

    @staticmethod
    def first_answer(app):
        app.ping()
        return app.wait_line(("pong", "resumed"))

    @staticmethod
    def check_connections(app):
        """tcp_conns exchanges a byte both ways on every connection, after
        the bytes it left in flight: any loss or duplicate is an error."""
        n = len(app.lines)
        app.popen.stdin.write(b"check\n")
        app.popen.stdin.flush()
        app.wait_line(("checked", "error"), after=n, timeout=120)
        with app.cond:
            bad = [l for _, l in app.lines[n:] if l and
                   l.startswith("error")]
        if bad:
            raise BenchError("tcp_conns after restart: %s" % bad[0])

    def measure_sockets(self, nconns, mib, repeat):
        """tcp_conns with nconns connections and with none, same memory."""
        out = {"connections": nconns, "mib": mib}
        for n in (0, nconns):
            app = self.launch(mib, [TCP_CONNS, str(n), str(mib)])
            try:
                self.check_connections(app)
            except BenchError:
                self.kill_computation(app)
                raise
            out[n] = self.cycles(app, self.first_answer,
                                 self.check_connections, repeat)
        for k in ("checkpoint_s", "restart_s"):
            out[k + "_added"] = out[nconns][k] - out[0][k]
            out[k + "_ratio"] = out[nconns][k] / out[0][k]
        return out

    def measure_redis(self, mib, repeat):
        """redis-server holding about mib MiB of random values, then
        fill_idle of redis's resident size. First one unmeasured cycle of
        a fill_idle of mib MiB: on a VM the first writes into memory the
        guest never touched (the first images' page cache) cost several
        times the later ones (here 230 MB/s against 450), which made
        whichever ran first look slow (redis: 1.9x in one run, 1.02x in
        the next; docs/performance.md)."""
        self.cycles(self.launch(mib), self.first_answer, lambda a: None, 1)
        port = free_port()
        app = App([tool("ckpt_launch"), "--", REDIS_SERVER, "--port",
                   str(port), "--bind", "127.0.0.1", "--save", "",
                   "--appendonly", "no", "--dir", self.dir], self.env)
        try:
            redis_answers(port, app, timeout=60)
            keys = redis_fill(port, mib)
            dbsize = redis_dbsize(port)
            if dbsize != keys:
                raise BenchError("redis holds %d keys after loading %d"
                                 % (dbsize, keys))
            rss = resident_mib(app.popen.pid)
        except BenchError:
            self.kill_computation(app)
            raise

        def answered(restarted):
            return redis_answers(port, restarted)

        def verify(restarted):
            got = redis_dbsize(port)
            if got != dbsize:
                raise BenchError("redis holds %d keys after the restart, "
                                 "%d before" % (got, dbsize))

        out = {"mib": mib, "keys": dbsize, "resident_mib": rss,
               "value_bytes": REDIS_VALUE_BYTES}
        out["redis"] = self.cycles(app, answered, verify, repeat,
                                   pings=False)
        plain = self.launch(rss)
        out["fill_idle"] = self.cycles(plain, self.first_answer,
                                       lambda a: None, repeat)
        for k in ("checkpoint_s", "restart_s"):
            out[k + "_ratio"] = out["redis"][k] / out["fill_idle"][k]
        return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def redis_cli(port, *args):
    r = run([REDIS_CLI, "-h", "127.0.0.1", "-p", str(port)] + list(args),
            None, timeout=60)
    return r.stdout.decode().strip()


def redis_dbsize(port):
    out = redis_cli(port, "DBSIZE")
    try:
        return int(out.split()[-1])
    except (ValueError, IndexError):
        raise BenchError("redis DBSIZE answered %r" % out)


def redis_fill(port, mib):
    """SET key:N <REDIS_VALUE_BYTES random bytes> through redis-cli --pipe
    until about mib MiB of values; returns the number of keys."""
    keys = (mib << 20) // REDIS_VALUE_BYTES
    cli = subprocess.Popen([REDIS_CLI, "-h", "127.0.0.1", "-p", str(port),
                            "--pipe"], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    head = b"$%d\r\n" % REDIS_VALUE_BYTES

    def feed():
        try:
            for start in range(0, keys, 1024):
                chunk = []
                for i in range(start, min(keys, start + 1024)):
                    key = b"key:%d" % i
                    chunk.append(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n"
                                 % (len(key), key))
                    chunk.append(head + os.urandom(REDIS_VALUE_BYTES)
                                 + b"\r\n")
                cli.stdin.write(b"".join(chunk))
            cli.stdin.close()
        except OSError:
            pass

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    try:
        # redis-cli --pipe prints a few lines only: read them at the end
        cli.wait(TIMEOUT)
        out = cli.stdout.read()
    except subprocess.TimeoutExpired:
        cli.kill()
        cli.wait(10)
        raise BenchError("redis-cli --pipe: not done within %ds" % TIMEOUT)
    writer.join(10)
    if cli.returncode != 0 or b"errors: 0," not in out:
        raise BenchError("redis-cli --pipe: exit %d: %s" % (
            cli.returncode, out.decode(errors="replace").strip()))
    return keys


def redis_answers(port, app, timeout=TIMEOUT):
    """Time at which redis first answers PING on port (polled each 2 ms)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if app.popen.poll() is not None:
            raise BenchError("%s exited (%s): %s" % (
                os.path.basename(app.popen.args[0]), app.popen.returncode,
                app.err.decode(errors="replace").strip()))
        try:
            with socket.create_connection(("127.0.0.1", port),
                                          timeout=5) as s:
                s.sendall(b"PING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    return time.monotonic()
        except OSError:
            pass
        time.sleep(0.002)
    raise BenchError("redis (%s) did not answer PING on port %d within %ds"
                     % (os.path.basename(app.popen.args[0]), port, timeout))


def resident_mib(pid):
    """VmRSS of pid (ckpt_launch execs the program) in MiB."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) // 1024
    except OSError as e:
        raise BenchError("reading the resident size of pid %d: %s"
                         % (pid, e))
    raise BenchError("pid %d has no VmRSS line" % pid)


# The cost of running under ckpt (issue 10, section 4): each wrapped call,
# and two whole programs, plain and under ckpt_launch in the same run.
WRAPPER_TARGETS = {"fork": 1.5, "posix_spawn": 2.0, "exec": 2.0}
WRAPPER_TARGET_OTHERS = 1.1
PROGRAM_TARGET = 1.05
MAKE_FILES = 100
PYTEST_TESTS = 1000


def wrapped_calls_once(bench, under_ckpt, rounds):
    """{call: ns} from one run of build/bench/wrapped_calls."""
    argv = [WRAPPED_CALLS, str(rounds)]
    if under_ckpt:
        argv = [tool("ckpt_launch"), "--"] + argv
    out = run(argv, bench.env).stdout.decode()
    return {name: float(ns) for name, ns in
            (line.split() for line in out.splitlines() if line.strip())}


def measure_wrapped_calls(bench, repeat, rounds=5):
    """Best of `repeat` runs of each side (alternating, so load on the
    shared machine falls on both), each already the best of `rounds`."""
    plain, ckpt = {}, {}
    for _ in range(repeat):
        for side, under in ((plain, False), (ckpt, True)):
            for name, ns in wrapped_calls_once(bench, under, rounds).items():
                side[name] = min(ns, side.get(name, ns))
    return [{"call": name, "native_ns": plain[name], "ckpt_ns": ckpt[name],
             "ratio": ckpt[name] / plain[name],
             "target": WRAPPER_TARGETS.get(name, WRAPPER_TARGET_OTHERS)}
            for name in plain]


def write_pytest_workload(path, n):
    """n small pure-python tests (arithmetic, strings, dicts)."""
    with open(path, "w") as f:
        for i in range(n):
            f.write("def test_%d():\n"
                    "    d = {str(k): k * %d for k in range(50)}\n"
                    "    assert sum(d.values()) == %d\n"
                    "    assert ''.join(sorted(d))[:3] == '011'\n\n" % (
                        i, i, 1225 * i))


def measure_programs(bench, repeat):
    """make -j2 of the 100-file C project of tests/test_make.py and a
    pytest run of PYTEST_TESTS small tests, plain and under ckpt_launch,
    best of `repeat` each (alternating)."""
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from test_make import write_project
    project = os.path.join(bench.dir, "cproject")
    write_project(project, parts=MAKE_FILES, lines=20)
    tests = os.path.join(bench.dir, "test_workload.py")
    write_pytest_workload(tests, PYTEST_TESTS)
    programs = {
        "make -j2 (%d files)" % MAKE_FILES: ["make", "-s", "-j2", "-C",
                                             project],
        "python3 -m pytest (%d tests)" % PYTEST_TESTS: [
            "/usr/bin/python3", "-m", "pytest", "-q", "-p",
            "no:cacheprovider", tests],
    }
    results = []
    for label, argv in programs.items():
        best = {False: None, True: None}
        for _ in range(repeat):
            for under in (False, True):
                for f in glob.glob(os.path.join(project, "*.o")) + [
                        os.path.join(project, "prog")]:
                    if os.path.exists(f):
                        os.unlink(f)
                full = ([tool("ckpt_launch"), "--"] if under else []) + argv
                t, _ = timed(full, bench.env, cwd=bench.dir)
                if best[under] is None or t < best[under]:
                    best[under] = t
        results.append({"program": label, "native_s": best[False],
                        "ckpt_s": best[True],
                        "ratio": best[True] / best[False],
                        "target": PROGRAM_TARGET})
    return results


def run_wrapper_parts(bench, parts, repeat, out):
    """--only wrappers: the calls, then the programs; --only programs:
    the programs alone. Results go into `out` as they come."""
    if "wrappers" in parts:
        print("measuring wrapped calls...", flush=True)
        out["calls"] = measure_wrapped_calls(bench, repeat)
    if "wrappers" in parts or "programs" in parts:
        print("measuring whole programs...", flush=True)
        out["programs"] = measure_programs(bench, repeat)


def report_wrappers(calls, programs):
    print()
    if calls:
        print("wrapped calls, native against under ckpt_launch (best of "
              "several runs):")
        print("%-16s %14s %14s %8s %8s" % ("call", "native", "under ckpt",
                                           "ratio", "target"))
        for c in calls:
            print("%-16s %11.0f ns %11.0f ns %7.2fx %7.1fx %s" % (
                c["call"], c["native_ns"], c["ckpt_ns"], c["ratio"],
                c["target"], "met" if c["ratio"] <= c["target"]
                else "NOT met"))
    if programs:
        print("%-32s %12s %12s %8s %8s" % ("program", "native",
                                           "under ckpt", "ratio",
                                           "target"))
        for p in programs:
            print("%-32s %12s %12s %7.3fx %7.2fx %s" % (
                p["program"], ms(p["native_s"]), ms(p["ckpt_s"]),
                p["ratio"], p["target"], "met" if p["ratio"] <=
                p["target"] else "NOT met"))


def ms(s):
    return "%8.1f ms" % (s * 1000)


# --- compression (--only compress) -------------------------------------

def checkpoint_timed(bench, compress):
    """One checkpoint of the computation: (seconds, image paths)."""
    argv = [tool("ckpt_command"), "--checkpoint"]
    if compress:
        argv.append("--compress")
    t, r = timed(argv, bench.env)
    images = r.stdout.decode().split()
    if not images:
        raise BenchError("ckpt_command --checkpoint printed no image")
    return t, images


def image_storage(images):
    """(memory bytes saved, bytes they take in the images), by
    ckpt_inspect."""
    saved = stored = 0
    for img in images:
        out = run([tool("ckpt_inspect"), img], os.environ).stdout.decode()
        for line in out.splitlines():
            words = line.split()
            if line.endswith("bytes of memory saved"):
                saved += int(words[2])
            elif line.startswith("stored in "):
                stored += int(words[2])
    return saved, stored


def best_checkpoints(bench, compress, repeat):
    best, storage = None, None
    for _ in range(repeat):
        t, images = checkpoint_timed(bench, compress)
        if best is None or t < best:
            best, storage = t, image_storage(images)
        bench.clear_images()
    return best, storage


def restart_times(bench, app, repeat):
    """Restart of the app's plain and compressed images, alternating, best
    of repeat each: {False: s, True: s}, and the app running at the end."""
    best = {}
    for _ in range(repeat):
        for compress in (False, True):
            _, images = checkpoint_timed(bench, compress)
            bench.kill_computation(app)
            t, app = bench.restart(images)
            bench.clear_images()
            bench.wait_rejoined(len(images))
            best[compress] = min(best.get(compress, t), t)
    return best, app


def measure_compress(bench, random_mib, heap_mib, repeat):
    """Random fill: plain against compressed checkpoints, alternating;
    python3 heap: the compressed checkpoint's ratio and speed."""
    out = {"random_mib": random_mib, "heap_mib": heap_mib,
           "repeat": repeat}
    app = bench.launch(random_mib)
    try:
        plain, comp = [], []
        for _ in range(repeat):
            plain.append(best_checkpoints(bench, False, 1))
            comp.append(best_checkpoints(bench, True, 1))
        out["random_plain_s"] = min(p[0] for p in plain)
        out["random_compress_s"] = min(c[0] for c in comp)
        out["random_stored"] = min(comp)[1]
    finally:
        bench.kill_computation(app)
    app = bench.launch(heap_mib, ["/usr/bin/python3", PY_HEAP,
                                  str(heap_mib)])
    try:
        out["heap_plain_s"], _ = best_checkpoints(bench, False, repeat)
        out["heap_compress_s"], out["heap_stored"] = best_checkpoints(
            bench, True, repeat)
        restarts, app = restart_times(bench, app, repeat)
        out["heap_restart_plain_s"] = restarts[False]
        out["heap_restart_compress_s"] = restarts[True]
    finally:
        bench.kill_computation(app)
    out["random_ratio"] = out["random_compress_s"] / out["random_plain_s"]
    saved, stored = out["heap_stored"]
    out["heap_ratio"] = saved / stored if stored else 0
    out["heap_gb_per_s"] = saved / out["heap_compress_s"] / 1e9
    zs = run([ZERO_SCAN, str(random_mib)], os.environ).stdout.decode()
    words = zs.split()
    out["zero_scan_s"], out["hash_s"] = float(words[1]), float(words[3])
    return out


def report_compress(c):
    print()
    print("compression (best of %d, ckpt_command --checkpoint [--compress]"
          ")" % c["repeat"])
    print("random %d MiB: checkpoint %s, compressed %s: %.2fx (goal <= "
          "1.2x); stored %.1f of %.1f MiB" % (
              c["random_mib"], ms(c["random_plain_s"]).strip(),
              ms(c["random_compress_s"]).strip(), c["random_ratio"],
              c["random_stored"][1] / 2**20, c["random_stored"][0] / 2**20))
    saved, stored = c["heap_stored"]
    print("python3 heap (%d MiB of objects and text): %.1f MiB saved "
          "stored in %.1f MiB: %.2fx (goal >= 3x); compressed checkpoint "
          "%s (plain %s): %.2f GB/s saved (goal >= 1 GB/s)" % (
              c["heap_mib"], saved / 2**20, stored / 2**20, c["heap_ratio"],
              ms(c["heap_compress_s"]).strip(),
              ms(c["heap_plain_s"]).strip(), c["heap_gb_per_s"]))
    print("python3 heap restart: plain image %s, compressed %s: %.2fx" % (
        ms(c["heap_restart_plain_s"]).strip(),
        ms(c["heap_restart_compress_s"]).strip(),
        c["heap_restart_compress_s"] / c["heap_restart_plain_s"]))
    print("zero-page test on %d MiB of random data: %s, %.2fx the hash "
          "of the same memory (%s)" % (
              c["random_mib"], ms(c["zero_scan_s"]).strip(),
              c["zero_scan_s"] / c["hash_s"], ms(c["hash_s"]).strip()))


# --- incremental checkpoints (--only incremental) -------------------------

def dirty_one_percent(app):
    n = len(app.lines)
    app.popen.stdin.write(b"dirty\n")
    app.popen.stdin.flush()
    app.wait_line(("dirtied",), after=n, timeout=60)


def timed_checkpoints(bench, app, count, argv_extra):
    """count checkpoints, 1% of the pages written before each: [(seconds,
    image bytes)] and the last one's images."""
    out = []
    for _ in range(count):
        dirty_one_percent(app)
        t, r = timed([tool("ckpt_command"), "--checkpoint"] + argv_extra,
                     bench.env)
        images = r.stdout.decode().split()
        if not images:
            raise BenchError("ckpt_command --checkpoint printed no image")
        out.append((t, sum(os.path.getsize(i) for i in images)))
    return out, images


def launch_uncompacted(bench, mib, chain):
    """fill_idle of mib MiB whose chain of `chain` images is measured as a
    chain: no background compaction into a full image while it grows
    (docs/image-format.md, "Compaction")."""
    bench.env["CKPT_CHAIN_COMPACT"] = str(chain + 1)
    try:
        return bench.launch(mib)
    finally:
        del bench.env["CKPT_CHAIN_COMPACT"]


def measure_incremental(bench, mib, chain, repeat):
    """Full (plain) checkpoints against the deltas of a chain of `chain`
    images, 1% of the memory written before each; restart of the chain's
    last image against the restart of the full one."""
    app = launch_uncompacted(bench, mib, chain)
    try:
        full, full_images = timed_checkpoints(bench, app, repeat, [])
        incr, chain_images = timed_checkpoints(bench, app, chain,
                                               ["--incremental"])
    finally:
        bench.kill_computation(app)
    deltas = incr[1:]
    out = {"mib": mib, "chain": chain, "repeat": repeat,
           "full_s": min(t for t, _ in full),
           "full_bytes": min(b for _, b in full),
           "first_chain_s": incr[0][0],
           "delta_s": min(t for t, _ in deltas),
           "delta_bytes": max(b for _, b in deltas)}
    best = {}
    for _ in range(repeat):
        for kind, images in (("full", full_images), ("chain", chain_images)):
            t, restarted = bench.restart(images)
            bench.wait_rejoined(len(images))
            bench.kill_computation(restarted)
            best[kind] = min(best.get(kind, t), t)
    bench.clear_images()
    out["restart_full_s"], out["restart_chain_s"] = best["full"], \
        best["chain"]
    out["time_ratio"] = out["delta_s"] / out["full_s"]
    out["size_ratio"] = out["delta_bytes"] / out["full_bytes"]
    out["restart_ratio"] = out["restart_chain_s"] / out["restart_full_s"]
    return out


def report_incremental(c):
    print()
    print("incremental checkpoints: fill_idle %d MiB writing 1%% of its "
          "pages between checkpoints (best of %d full, of the %d deltas "
          "of a chain of %d)" % (c["mib"], c["repeat"], c["chain"] - 1,
                                 c["chain"]))
    print("full checkpoint %s, %.1f MiB; incremental %s, %.1f MiB: time "
          "%.3fx, size %.3fx (goal <= 0.05x)" % (
              ms(c["full_s"]).strip(), c["full_bytes"] / 2**20,
              ms(c["delta_s"]).strip(), c["delta_bytes"] / 2**20,
              c["time_ratio"], c["size_ratio"]))
    print("first image of the chain (full, with page hashes) %s" %
          ms(c["first_chain_s"]).strip())
    print("restart from the chain of %d %s, from the full image %s: "
          "%.2fx (goal <= 1.2x)" % (
              c["chain"], ms(c["restart_chain_s"]).strip(),
              ms(c["restart_full_s"]).strip(), c["restart_ratio"]))


# --- snapshots and forked checkpoints (--only snapshots) ---------------

def app_answer(app, command, prefix):
    """Send one command line to fill_idle; the number in its answer."""
    n = len(app.lines)
    app.popen.stdin.write(command.encode() + b"\n")
    app.popen.stdin.flush()
    app.wait_line((prefix,), after=n, timeout=60)
    with app.cond:
        for _, line in app.lines[n:]:
            if line and line.startswith(prefix):
                return int(line.split()[1])
    raise BenchError("no %r answer to %r" % (prefix, command))


def checkpoint_stall_us(bench, app, extra):
    """One checkpoint (ckpt_command --checkpoint + extra): the longest
    the application was held (fill_idle's "gap") and the images."""
    app_answer(app, "gap", "gap ")
    _, r = timed([tool("ckpt_command"), "--checkpoint"] + extra, bench.env)
    images = r.stdout.decode().split()
    if not images:
        raise BenchError("ckpt_command --checkpoint printed no image")
    return app_answer(app, "gap", "gap "), images


def snapshot_timed(bench, app):
    """ckpt_command --snapshot: (seconds, the app's stall in us, id)."""
    app_answer(app, "gap", "gap ")
    t, r = timed([tool("ckpt_command"), "--snapshot"], bench.env)
    return t, app_answer(app, "gap", "gap "), r.stdout.decode().strip()


def restore_timed(bench, sid):
    """ckpt_command --restore until the restored fill_idle answers."""
    return bench.timed_until_answer([tool("ckpt_command"), "--restore",
                                     sid])


def measure_snapshot_cycle(bench, app, repeat, best):
    """Snapshots and restores of app, best of repeat; returns the app
    running at the end (a restored one)."""
    for _ in range(repeat):
        t, stall, sid = snapshot_timed(bench, app)
        best["snapshot_s"] = min(best.get("snapshot_s", t), t)
        best["snapshot_stall_us"] = min(best.get("snapshot_stall_us",
                                                 stall), stall)
        t, restored = restore_timed(bench, sid)
        app.kill()
        app = restored
        best["restore_s"] = min(best.get("restore_s", t), t)
        run([tool("ckpt_command"), "--drop", sid], bench.env)
    return app


def measure_inprocess_snapshots(bench, app, repeat, best):
    """ckpt_snapshot() from inside the app ("snapshot N us ID"), best of
    repeat; each snapshot dropped."""
    for _ in range(repeat):
        n = len(app.lines)
        app.popen.stdin.write(b"snapshot\n")
        app.popen.stdin.flush()
        app.wait_line(("snapshot ",), after=n, timeout=60)
        with app.cond:
            line = [l for _, l in app.lines[n:]
                    if l and l.startswith("snapshot ")][0]
        words = line.split()
        if len(words) != 4 or words[2] != "us":
            raise BenchError("fill_idle's ckpt_snapshot(): %r" % line)
        best["inproc_s"] = min(best.get("inproc_s", 1e9),
                               int(words[1]) / 1e6)
        run([tool("ckpt_command"), "--drop", words[3]], bench.env)


def measure_api_snapshots(bench, repeat, best):
    """build/bench/snapshot_api: snapshots and restores through
    libckpt-control, best of repeat; it kills the computation at the
    end."""
    r = run([SNAPSHOT_API, str(repeat)], bench.env)
    for line in r.stdout.decode().splitlines():
        words = line.split()
        if len(words) == 3 and words[0] == "round":
            best["api_snapshot_s"] = min(best.get("api_snapshot_s", 1e9),
                                         int(words[1]) / 1e6)
            best["api_restore_s"] = min(best.get("api_restore_s", 1e9),
                                        int(words[2]) / 1e6)
    if "api_snapshot_s" not in best:
        raise BenchError("snapshot_api printed no round: %r" % r.stdout)


def measure_snapshots(bench, sizes, repeat):
    """Per size: a plain fork() of fill_idle (the floor), the stall of a
    normal checkpoint and of a forked one, a snapshot and a restore;
    best of repeat each."""
    out = []
    for mib in sizes:
        app = bench.launch(mib)
        best = {}
        try:
            fork_us = min(app_answer(app, "fork", "fork ")
                          for _ in range(repeat))
            status_s = min(timed([tool("ckpt_command"), "--status"],
                                 bench.env)[0] for _ in range(repeat))
            for _ in range(repeat):
                for kind, extra in (("normal", []), ("forked",
                                                     ["--forked"])):
                    us, _ = checkpoint_stall_us(bench, app, extra)
                    bench.clear_images()
                    best[kind] = min(best.get(kind, us), us)
            app = measure_snapshot_cycle(bench, app, repeat, best)
            bench.wait_rejoined(1)
            measure_inprocess_snapshots(bench, app, repeat, best)
            measure_api_snapshots(bench, repeat, best)
        finally:
            bench.kill_computation(app)
        out.append({"mib": mib, "repeat": repeat, "fork_us": fork_us,
                    "normal_stall_us": best["normal"],
                    "forked_stall_us": best["forked"],
                    "snapshot_s": best["snapshot_s"],
                    "snapshot_stall_us": best["snapshot_stall_us"],
                    "restore_s": best["restore_s"],
                    "inproc_snapshot_s": best["inproc_s"],
                    "api_snapshot_s": best["api_snapshot_s"],
                    "api_restore_s": best["api_restore_s"],
                    "status_s": status_s})
    return out


def report_snapshots(rows):
    print()
    print("forked checkpoints: the application's stall (fill_idle's "
          "longest idle-loop gap) against a plain fork() of the same "
          "process, best of %d" % rows[0]["repeat"])
    print("%-8s %10s %14s %14s %18s %16s" % (
        "MiB", "fork()", "normal stall", "forked stall",
        "forked/fork", "normal/forked"))
    for r in rows:
        fork = max(r["fork_us"], 1)
        forked = max(r["forked_stall_us"], 1)
        print("%-8d %8.1f ms %11.1f ms %11.1f ms %9.2fx (<=2x) %9.1fx "
              "(>=10x)" % (
                  r["mib"], r["fork_us"] / 1000, r["normal_stall_us"] / 1000,
                  r["forked_stall_us"] / 1000, forked / fork,
                  r["normal_stall_us"] / forked))
    print_fork_table(
        "template snapshots and restores (ckpt_command --restore until the "
        "program answers), best of %d; --status: the tool's fixed cost" %
        rows[0]["repeat"],
        ("--status", "snapshot", "its stall", "snapshot/fork", "restore",
         "restore/fork"), rows,
        lambda r, fork: (msec(r["status_s"]), msec(r["snapshot_s"]),
                         msec(r["snapshot_stall_us"] / 1e6),
                         times(r["snapshot_s"] / fork, "<=2x"),
                         msec(r["restore_s"]),
                         times(r["restore_s"] / fork, "<=3x")))
    print_fork_table(
        "the same through the API (no tool to start): ckpt_snapshot() from "
        "inside; libckpt-control's snapshot, and its restore until the "
        "program answers (bench/snapshot_api.c)",
        ("ckpt_snapshot", "snapshot/fork", "control", "snapshot/fork",
         "restore", "restore/fork"), rows,
        lambda r, fork: (msec(r["inproc_snapshot_s"]),
                         times(r["inproc_snapshot_s"] / fork, "<=2x"),
                         msec(r["api_snapshot_s"]),
                         times(r["api_snapshot_s"] / fork, "<=2x"),
                         msec(r["api_restore_s"]),
                         times(r["api_restore_s"] / fork, "<=3x")))


def msec(seconds):
    return "%.1f ms" % (seconds * 1000)


def times(ratio, goal):
    return "%.1fx (%s)" % (ratio, goal)


def print_fork_table(title, columns, rows, cells):
    """One line per size: the fork() floor, then cells(row, fork seconds)
    under columns."""
    print()
    print(title)
    print("%-8s %10s" % ("MiB", "fork()") +
          "".join(" %15s" % c for c in columns))
    for r in rows:
        fork = max(r["fork_us"], 1) / 1e6
        print("%-8d %7.1f ms" % (r["mib"], fork * 1000) +
              "".join(" %15s" % c for c in cells(r, fork)))


def report_cycles(label, r):
    print("%-22s %12s %9s %9.1f %12s" % (
        label, ms(r["checkpoint_s"]),
        "-" if r["stopped_ms"] is None else
        "<20 ms" if not r["stopped_ms"] else "%d ms" % r["stopped_ms"],
        r["image_bytes"] / 2**20,
        ms(r["restart_s"])))


def report_header():
    print("%-22s %12s %9s %9s %12s" % (
        "", "checkpoint", "stopped", "image MiB", "restart"))


def report_sockets(sk):
    n = sk["connections"]
    print()
    print("tcp_conns (%d MiB, best of %d): %d TCP connections between two "
          "processes against none" % (sk["mib"], sk[0]["repeat"], n))
    report_header()
    report_cycles("0 connections", sk[0])
    report_cycles("%d connections" % n, sk[n])
    print("added by %d connections: checkpoint %+.1f ms (%.2fx), restart "
          "%+.1f ms (%.2fx); goal <= 50 ms added" % (
              n, sk["checkpoint_s_added"] * 1000, sk["checkpoint_s_ratio"],
              sk["restart_s_added"] * 1000, sk["restart_s_ratio"]))


def report_redis(rd):
    print()
    if rd.get("skipped"):
        print("redis: skipped: %s" % rd["skipped"])
        return
    print("redis-server, %d keys of %d random bytes (resident %d MiB, "
          "best of %d), against fill_idle %d MiB" % (
              rd["keys"], rd["value_bytes"], rd["resident_mib"],
              rd["redis"]["repeat"], rd["resident_mib"]))
    report_header()
    report_cycles("redis-server", rd["redis"])
    report_cycles("fill_idle", rd["fill_idle"])
    print("redis / fill_idle: checkpoint %.2fx, restart %.2fx; goal "
          "within 1.2x (restart: until redis answers PING)" % (
              rd["checkpoint_s_ratio"], rd["restart_s_ratio"]))


def report_restart_modes(rm):
    print()
    print("restart of fill_idle %d MiB, mapped from the image and --copy "
          "(best of %d)" % (rm["mib"], rm["repeat"]))
    print("%-10s %12s %8s %12s %8s %12s %8s" % (
        "", "restart", "rst/cat", "1st read", "ratio", "1st write",
        "ratio"))
    o = rm["original"]
    print("%-10s %12s %8s %12s %8s %12s %8s" % (
        "original", "", "", ms(o["read_s"]), "", ms(o["write_s"]), ""))
    for mode in ("mapped", "copy"):
        m = rm[mode]
        print("%-10s %12s %8.2f %12s %8.2f %12s %8.2f" % (
            mode, ms(m["restart_s"]), m["restart_over_cat"],
            ms(m["read_s"]), m["read_s_ratio"], ms(m["write_s"]),
            m["write_s_ratio"]))
    print("cat of the image %s; goals: restart <= 1.5x cat, first pass "
          "<= 1.2x the original's" % ms(rm["cat_s"]).strip())


def report(results, small, sockets=None, redis=None, restart_modes=None,
           compress=None):
    print()
    if results:
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
    if restart_modes:
        report_restart_modes(restart_modes)
    if sockets:
        report_sockets(sockets)
    if redis:
        report_redis(redis)
    if compress:
        report_compress(compress)
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


PARTS = ("sizes", "small", "restart", "sockets", "redis", "compress",
         "incremental", "snapshots", "wrappers", "programs", "inspect",
         "scale")
# not run unless named in --only: 8 GiB and 64 processes take minutes
OPT_IN_PARTS = ("scale",)


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
    ap.add_argument("--only", default=",".join(
                        p for p in PARTS if p not in OPT_IN_PARTS),
                    help="comma-separated parts to run among %s (default: "
                    "all but %s)" % (",".join(PARTS), ",".join(OPT_IN_PARTS)))
    ap.add_argument("--scale-mib", type=int, default=8192, metavar="MIB",
                    help="MiB of the scale part's large process (8192)")
    ap.add_argument("--scale-procs", type=int, default=64, metavar="N",
                    help="processes of the scale part's computation (64)")
    ap.add_argument("--scale-proc-mib", type=int, default=64, metavar="MIB",
                    help="MiB of each of those processes (64)")
    ap.add_argument("--restart-mib", type=int, default=1024, metavar="MIB",
                    help="MiB of the restart part's process (1024)")
    ap.add_argument("--sockets", type=int, default=1000, metavar="N",
                    help="TCP connections of the sockets part (1000)")
    ap.add_argument("--compress-mib", type=int, default=1024, metavar="MIB",
                    help="MiB of the random fill of the compress part "
                    "(1024)")
    ap.add_argument("--heap-mib", type=int, default=256, metavar="MIB",
                    help="MiB of the python3 heap of the compress part "
                    "(256)")
    ap.add_argument("--incremental-mib", type=int, default=1024,
                    metavar="MIB", help="MiB of the incremental part's "
                    "process (1024)")
    ap.add_argument("--inspect-mib", type=int, default=1024, metavar="MIB",
                    help="MiB of the inspect part's image (1024)")
    ap.add_argument("--redis", type=int, default=1024, metavar="MIB",
                    help="MiB of values redis holds in the redis part "
                    "(1024)")
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",") if x]
    parts = [x for x in args.only.split(",") if x]
    unknown = [x for x in parts if x not in PARTS]
    if unknown:
        print("bench: --only: unknown part %s (known: %s)" % (
            unknown[0], ",".join(PARTS)), file=sys.stderr)
        return 2

    missing = [p for p in [tool(t) for t in (
        "ckpt_launch", "ckpt_command", "ckpt_restart", "ckpt_coordinator")]
        + [FILL_IDLE, TCP_CONNS, ZERO_SCAN, WRAPPED_CALLS]
        if not os.path.exists(p)]
    if missing:
        print("bench: not built (run make): " + ", ".join(missing),
              file=sys.stderr)
        return 1
    workdir = tempfile.mkdtemp(prefix="ckb-", dir=args.dir or "/tmp")
    bench = Bench(workdir)
    results, small, sockets, redis, compress = [], None, None, None, None
    incremental = None
    snapshots = None
    inspect = None
    scale = None
    restart_modes = None
    wrappers = {}
    try:
        # 64 processes writing at once on a slow shared disk can go more
        # than 2 phase timeouts without finishing one write (docs/
        # performance.md, "Scale")
        bench.start_coordinator(bench_scale.COORDINATOR_OPTIONS
                                if "scale" in parts else ())
        if "sizes" in parts:
            for mib in sizes:
                print("measuring %d MiB..." % mib, flush=True)
                results.append(bench.measure_size(mib, args.repeat))
        if "small" in parts:
            print("measuring small-process latency...", flush=True)
            small = bench.small_latency(runs=args.small_runs)
        if "restart" in parts:
            print("measuring mapped and copied restart of %d MiB..." %
                  args.restart_mib, flush=True)
            restart_modes = bench.measure_restart_modes(args.restart_mib,
                                                        args.repeat)
        if "sockets" in parts:
            print("measuring %d TCP connections..." % args.sockets,
                  flush=True)
            sockets = bench.measure_sockets(args.sockets, 16, args.repeat)
        if "redis" in parts:
            if not (os.access(REDIS_SERVER, os.X_OK) and
                    os.access(REDIS_CLI, os.X_OK)):
                redis = {"skipped": "%s or %s is not installed (Debian "
                         "packages redis-server, redis-tools)" % (
                             REDIS_SERVER, REDIS_CLI)}
            else:
                print("measuring redis with %d MiB..." % args.redis,
                      flush=True)
                redis = bench.measure_redis(args.redis, args.repeat)
        if "compress" in parts:
            print("measuring compression...", flush=True)
            compress = measure_compress(bench, args.compress_mib,
                                        args.heap_mib, args.repeat)
        if "incremental" in parts:
            print("measuring incremental checkpoints of %d MiB..." %
                  args.incremental_mib, flush=True)
            incremental = measure_incremental(bench, args.incremental_mib,
                                              10, args.repeat)
        if "snapshots" in parts:
            print("measuring forked checkpoint stalls...", flush=True)
            snapshots = measure_snapshots(bench, sizes, args.repeat)
        run_wrapper_parts(bench, parts, args.repeat, wrappers)
        inspect = bench_inspect.run_inspect_part(bench, parts,
                                                 args.inspect_mib,
                                                 args.repeat)
        if "scale" in parts:
            print("measuring scale: %d MiB, %d processes of %d MiB..." % (
                args.scale_mib, args.scale_procs, args.scale_proc_mib),
                flush=True)
            scale = bench_scale.measure_scale(
                bench, args.scale_mib, args.scale_procs,
                args.scale_proc_mib, min(args.repeat, 2))
    except (BenchError, OSError, subprocess.SubprocessError) as e:
        print("bench: %s" % e, file=sys.stderr)
        report(results, small, sockets, redis, restart_modes, compress)
        if incremental:
            report_incremental(incremental)
        if snapshots:
            report_snapshots(snapshots)
        report_wrappers(wrappers.get("calls"), wrappers.get("programs"))
        return 1
    finally:
        bench.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    report(results, small, sockets, redis, restart_modes, compress)
    if incremental:
        report_incremental(incremental)
    if snapshots:
        report_snapshots(snapshots)
    report_wrappers(wrappers.get("calls"), wrappers.get("programs"))
    if inspect:
        bench_inspect.report_inspect(inspect)
    if scale:
        bench_scale.report_scale(scale)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"sizes": results, "small": small,
                       "restart_modes": restart_modes,
                       "sockets": sockets, "redis": redis,
                       "compress": compress, "incremental": incremental,
                       "snapshots": snapshots,
                       "wrappers": wrappers, "inspect": inspect,
                       "scale": scale}, f,
                      indent=2)
    return 0

if __name__ == "__main__":
    sys.exit(main())
