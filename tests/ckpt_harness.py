# SPDX-License-Identifier: LGPL-2.1-or-later
"""Shared helpers for the end-to-end checkpoint/restart tests.

A Session owns one coordinator address (a Unix socket in a private short
directory), one checkpoint directory, and every process the test starts.
Its teardown quits the coordinator and SIGKILLs whatever the test started
that is still alive; it never kills anything by name.

Every wait here is bounded: a helper that times out raises AssertionError
with what it was waiting for and the output seen so far.
"""

import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "build", "bin")
APPS = os.path.join(ROOT, "build", "tests", "apps")
LIBCKPT = os.path.join(ROOT, "build", "lib", "ckpt", "libckpt.so")
TOOLS = ("ckpt_launch", "ckpt_command", "ckpt_restart", "ckpt_coordinator")

# Generous: the CI machine has 2 cores shared with other work.
COMMAND_TIMEOUT = 120
PROGRESS_TIMEOUT = 120
FINISH_TIMEOUT = 300


def tool(name):
    return os.path.join(BIN, name)


def app(name):
    return os.path.join(APPS, name)


def missing_core():
    """Names of the built core pieces that do not exist yet."""
    paths = [tool(t) for t in TOOLS] + [LIBCKPT]
    return [p for p in paths if not os.path.exists(p)]


class Output:
    """Collects the lines of one pipe in a thread; waits are bounded."""

    def __init__(self, pipe, name):
        self.name = name
        self.lines = []
        self.closed = False
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._read, args=(pipe,),
                                        daemon=True)
        self._thread.start()

    def _read(self, pipe):
        try:
            for raw in iter(pipe.readline, b""):
                line = raw.decode("utf-8", "replace").rstrip("\n")
                with self._cond:
                    self.lines.append(line)
                    self._cond.notify_all()
        except (OSError, ValueError):
            pass
        finally:
            with self._cond:
                self.closed = True
                self._cond.notify_all()

    def snapshot(self):
        with self._cond:
            return list(self.lines)

    def wait_for(self, pred, timeout, what):
        """Wait until pred(lines) is true; return its value."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                value = pred(self.lines)
                if value:
                    return value
                left = deadline - time.monotonic()
                if left <= 0 or self.closed:
                    break
                self._cond.wait(min(left, 1.0))
        raise AssertionError(
            "%s: %s %s; last lines: %r" % (
                self.name, "closed before" if self.closed else
                "timed out after %ds waiting for" % timeout, what,
                self.lines[-10:]))

    def wait_closed(self, timeout):
        self._thread.join(timeout)
        return not self._thread.is_alive()


class Proc:
    """A started process with its stdout and stderr collected."""

    def __init__(self, argv, env, name, stdin=subprocess.DEVNULL,
                 stdout=subprocess.PIPE, cwd=None, preexec_fn=None,
                 own_session=False):
        """own_session: the process starts a session of its own, and
        sigkill ends every process in it (kill_session), not only this
        one: for a process that leaves children behind when it dies
        (timeout(1) and its emulator in tests/cross)."""
        self.argv = argv
        self.name = name
        self.own_session = own_session
        self.popen = subprocess.Popen(
            argv, env=env, stdin=stdin, stdout=stdout,
            stderr=subprocess.PIPE, cwd=cwd, preexec_fn=preexec_fn,
            start_new_session=own_session)
        self.pid = self.popen.pid
        self.out = (Output(self.popen.stdout, name + " stdout")
                    if stdout == subprocess.PIPE else None)
        self.err = Output(self.popen.stderr, name + " stderr")

    def alive(self):
        return self.popen.poll() is None

    def lines(self):
        return self.out.snapshot() if self.out else []

    def stderr_text(self):
        return "\n".join(self.err.snapshot())

    def wait_line(self, regex, timeout=PROGRESS_TIMEOUT, minimum=None):
        """Wait for a stdout line matching regex. With minimum, the regex's
        first group is an integer that must reach it. Returns the match."""
        rx = re.compile(regex)

        def pred(lines):
            for line in reversed(lines):
                m = rx.search(line)
                if m and (minimum is None or int(m.group(1)) >= minimum):
                    return m
            return None
        try:
            return self.out.wait_for(pred, timeout, "/%s/%s" % (
                regex, "" if minimum is None else " >= %d" % minimum))
        except AssertionError as e:
            raise AssertionError("%s\n%s exit %s, stderr:\n%s" % (
                e, self.name, self.popen.poll(), self.stderr_text()))

    def wait_exit(self, timeout=FINISH_TIMEOUT):
        try:
            rc = self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                "%s did not finish within %ds; last lines %r; stderr:\n%s"
                % (self.name, timeout, self.lines()[-5:],
                   self.stderr_text()))
        if self.out:
            self.out.wait_closed(10)
        self.err.wait_closed(10)
        return rc

    def sigkill(self):
        if self.own_session:
            kill_session(self.pid)
        elif self.alive():
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            self.popen.wait(30)
        except subprocess.TimeoutExpired:
            raise AssertionError("%s (pid %d) survived SIGKILL for 30 s"
                                 % (self.name, self.pid))


def session_members(sid):
    """The pids of the processes in session sid (from /proc)."""
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as f:
                stat = f.read()
        except OSError:
            continue
        # after "(comm)": state ppid pgrp session
        if int(stat.rsplit(")", 1)[1].split()[3]) == sid:
            pids.append(int(name))
    return pids


def kill_session(sid):
    """SIGKILL every process of session sid, again until none is left
    (one may fork while the first pass runs); bounded."""
    for _ in range(20):
        pids = session_members(sid)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.05)


def run(argv, timeout, env=None, own_session=False, **kw):
    """Run a command to completion (bounded); returns CompletedProcess.
    own_session: in a session of its own, all of it killed on a timeout
    (Proc's own_session)."""
    if not own_session:
        try:
            return subprocess.run(argv, env=env, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, timeout=timeout,
                                  text=True, **kw)
        except subprocess.TimeoutExpired as e:
            raise AssertionError("%s did not finish within %ds (stdout %r, "
                                 "stderr %r)" % (" ".join(argv), timeout,
                                                 e.stdout, e.stderr))
    with subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, start_new_session=True, **kw) as p:
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_session(p.pid)
            out, err = p.communicate()
            raise AssertionError("%s did not finish within %ds (stdout %r, "
                                 "stderr %r)" % (" ".join(argv), timeout,
                                                 out, err))
        finally:
            kill_session(p.pid)
    return subprocess.CompletedProcess(argv, p.returncode, out, err)


_reference_cache = {}


def reference_output(argv, timeout=FINISH_TIMEOUT, env=None, cache=True):
    """stdout lines of an uninterrupted run without ckpt (cached)."""
    key = tuple(argv)
    if key not in _reference_cache or not cache:
        r = run(list(argv), timeout, env=env)
        assert r.returncode == 0, "reference run %s: exit %d, stderr %s" % (
            " ".join(argv), r.returncode, r.stderr)
        _reference_cache[key] = r.stdout.splitlines()
    return _reference_cache[key]


class BackgroundReference:
    """reference_output run in a thread while the test goes on: for a
    program that mostly sleeps (ticks, pauses, pipe delays) and shares
    no file, directory or port with the run under test. lines() waits
    for it (bounded by the run's own timeout) and returns the lines."""

    def __init__(self, argv, timeout=FINISH_TIMEOUT, env=None):
        self.argv, self.timeout = list(argv), timeout
        self.result, self.error = None, None
        self.thread = threading.Thread(target=self._run, args=(env,),
                                       daemon=True)
        self.thread.start()

    def _run(self, env):
        try:
            self.result = reference_output(self.argv, self.timeout, env)
        except AssertionError as e:
            self.error = e

    def lines(self):
        self.thread.join(self.timeout + 30)
        assert not self.thread.is_alive(), \
            "reference run %s did not end" % " ".join(self.argv)
        if self.error:
            raise self.error
        return self.result


class Session:
    """One test's coordinator, checkpoint directory and processes."""

    def __init__(self, run_as=None):
        self.bin_dir = BIN
        # The socket path must stay short (sun_path is 108 bytes).
        self.dir = tempfile.mkdtemp(prefix="ckt-", dir="/tmp")
        self.ckptdir = os.path.join(self.dir, "ckpt")
        os.mkdir(self.ckptdir, 0o700)
        self.coord = os.path.join(self.dir, "c.sock")
        self.procs = []
        self.run_as = run_as
        if run_as is not None:
            os.chown(self.dir, run_as, run_as)
            os.chown(self.ckptdir, run_as, run_as)
        self.env = dict(os.environ)
        for var in list(self.env):
            if var.startswith("CKPT_") or var == "LD_PRELOAD":
                del self.env[var]
        self.env["CKPT_COORD"] = self.coord
        self.env["CKPT_DIR"] = self.ckptdir

    def path(self, name):
        return os.path.join(self.dir, name)

    def tool(self, name):
        return os.path.join(self.bin_dir, name)

    def _argv(self, argv):
        if self.run_as is None:
            return argv
        return ["setpriv", "--reuid", str(self.run_as), "--regid",
                str(self.run_as), "--clear-groups", "--"] + argv

    def start(self, argv, name, **kw):
        p = Proc(self._argv(argv), self.env, name, **kw)
        self.procs.append(p)
        return p

    def launch(self, argv, name=None, extra=(), **kw):
        """Start argv under ckpt_launch."""
        return self.start([self.tool("ckpt_launch")] + list(extra) + ["--"]
                          + list(argv),
                          name or "launch " + os.path.basename(argv[0]),
                          **kw)

    def restart(self, images, name=None, **kw):
        return self.start([self.tool("ckpt_restart")] + list(images),
                          name or "restart " + " ".join(
                              os.path.basename(i) for i in images), **kw)

    def command(self, *args, timeout=COMMAND_TIMEOUT):
        return run(self._argv([self.tool("ckpt_command")] + list(args)),
                   timeout, env=self.env)

    def checkpoint(self, expect_images=1):
        """Checkpoint; returns the image paths it printed."""
        t0 = time.monotonic()
        r = self.command("--checkpoint")
        elapsed = time.monotonic() - t0
        assert r.returncode == 0, (
            "ckpt_command --checkpoint: exit %d after %.1fs; stderr:\n%s"
            "\nstdout:\n%s" % (r.returncode, elapsed, r.stderr, r.stdout))
        images = [l.strip() for l in r.stdout.splitlines() if l.strip()]
        assert len(images) == expect_images, (
            "ckpt_command --checkpoint printed %r, expected %d image path(s)"
            % (r.stdout, expect_images))
        for img in images:
            check_image(img, self.ckptdir)
        return images

    def wait_members(self, n, timeout=30):
        """Until `ckpt_command --list` shows n processes (a checkpoint
        counts a process whose HELLO is unread: docs/protocol.md,
        "Members of a round"; this waits for processes still starting)."""
        deadline = time.monotonic() + timeout
        while True:
            r = self.command("--list")
            have = sum(1 for l in r.stdout.splitlines()
                       if l.startswith("vpid="))
            if have >= n:
                return
            assert time.monotonic() < deadline, (
                "%d of %d processes joined the coordinator within %d s: "
                "%r" % (have, n, timeout, r.stdout))
            time.sleep(0.05)

    def inspect(self, img):
        """ckpt_inspect's description of one image."""
        r = run([self.tool("ckpt_inspect"), img], COMMAND_TIMEOUT)
        assert r.returncode == 0, "ckpt_inspect %s: exit %d: %s" % (
            img, r.returncode, r.stderr)
        return r.stdout

    def kill_all(self):
        """ckpt_command --kill; asserts success."""
        r = self.command("--kill")
        assert r.returncode == 0, "ckpt_command --kill: exit %d: %s" % (
            r.returncode, r.stderr)

    def close(self):
        try:
            run(self._argv([self.tool("ckpt_command"), "--quit"]), 15,
                env=self.env)
        except (AssertionError, OSError):
            pass
        for p in self.procs:
            try:
                p.sigkill()
            except AssertionError:
                pass
        shutil.rmtree(self.dir, ignore_errors=True)


NOBODY = 65534


def unprivileged_session(programs=()):
    """A session whose processes run as nobody when we are root (root
    writes into a 0500 directory regardless, and some servers refuse to
    run as root), using a copy of the built tools that nobody can read
    wherever the work tree itself lives, and copies of programs there.
    Returns (session, [paths of the copies])."""
    if os.geteuid() != 0:
        return Session(), list(programs)
    s = Session(run_as=NOBODY)
    inst = s.path("inst")
    shutil.copytree(BIN, os.path.join(inst, "bin"))
    shutil.copytree(os.path.dirname(LIBCKPT),
                    os.path.join(inst, "lib", "ckpt"))
    copies = []
    for prog in programs:
        copies.append(os.path.join(inst, os.path.basename(prog)))
        shutil.copy2(prog, copies[-1])
    for root, dirs, files in os.walk(inst):
        for d in dirs:
            os.chmod(os.path.join(root, d), 0o755)
    os.chmod(inst, 0o755)
    os.chmod(s.dir, 0o755)  # nobody must traverse it; ckptdir stays 0700
    s.bin_dir = os.path.join(inst, "bin")
    return s, copies


def check_image(img, ckptdir):
    assert os.path.isabs(img), "image path %r is not absolute" % img
    assert os.path.isfile(img), "image %s does not exist" % img
    assert os.path.dirname(img) == ckptdir, (
        "image %s is not in the checkpoint directory %s" % (img, ckptdir))
    base = os.path.basename(img)
    assert re.fullmatch(r"ckpt_.+_.+\.img", base), (
        "image name %s does not follow ckpt_<program>_<id>.img" % base)
    mode = os.stat(img).st_mode & 0o7777
    assert mode == 0o600, "image %s has mode %o, expected 600" % (img, mode)


def numbers(lines, regex):
    """The integers of group 1 of regex over the lines that match."""
    rx = re.compile(regex)
    out = []
    for line in lines:
        m = rx.search(line)
        if m:
            out.append(int(m.group(1)))
    return out


def assert_resumed(before, after, regex, last, seen_at_checkpoint, step=1):
    """Check progress continuity across a restart.

    before: progress numbers printed by the original process before it was
    killed; after: those printed by the restarted process; last: the final
    number; step: the distance between two progress numbers. The restarted
    process must resume just past the checkpoint, which was taken after
    `seen_at_checkpoint` had been printed and before the kill: its first
    number is in [seen_at_checkpoint + step, max(before) + step] (a line
    the original printed after the checkpoint is printed again), then the
    numbers go on by step up to `last`. Returns the first number.
    """
    assert before, "the original process printed no %s progress" % regex
    assert before == list(range(before[0], before[-1] + 1, step)), (
        "original progress has gaps: %r" % before)
    assert before[-1] < last, (
        "the original process reached the end (%d of %d) before it was "
        "killed: the test proves nothing; make the run longer" % (
            before[-1], last))
    assert after, "the restarted process printed no %s progress" % regex
    first = after[0]
    assert first > before[0], (
        "the restarted process started over from %d" % first)
    assert seen_at_checkpoint + step <= first <= before[-1] + step, (
        "the restarted process resumed at %d, but the checkpoint was taken "
        "after %d and before %d" % (first, seen_at_checkpoint,
                                    before[-1] + step))
    assert after == list(range(first, last + 1, step)), (
        "progress after restart is not continuous from %d to %d by %d: %r"
        % (first, last, step, after[:20]))
    return first


def copy_image(img, dest_dir):
    """Keep a copy of an image (a later checkpoint may replace it)."""
    os.makedirs(dest_dir, exist_ok=True)
    dest = os.path.join(dest_dir, os.path.basename(img))
    shutil.copy2(img, dest)
    return dest


def tail_after_progress(lines, progress):
    """The lines after the last progress line (the final result)."""
    rx = re.compile(progress)
    last = -1
    for i, line in enumerate(lines):
        if rx.search(line):
            last = i
    return lines[last + 1:]


def checkpoint_and_kill(s, proc, progress, checkpoint_at, kill="sigkill"):
    """Wait for progress >= checkpoint_at, checkpoint, kill the computation.

    Returns (images, seen, before): the image paths, the progress number
    seen before the checkpoint was requested, and all progress numbers the
    process printed before it died.
    """
    proc.wait_line(progress, minimum=checkpoint_at)
    seen = max(numbers(proc.lines(), progress))
    images = s.checkpoint()
    assert proc.alive(), (
        "%s exited (status %s) during the checkpoint; stderr:\n%s" % (
            proc.name, proc.popen.poll(), proc.stderr_text()))
    if kill == "sigkill":
        proc.sigkill()
    else:
        s.kill_all()
        try:
            proc.popen.wait(30)
        except subprocess.TimeoutExpired:
            raise AssertionError("%s still runs 30 s after ckpt_command "
                                 "--kill returned" % proc.name)
    assert proc.out is None or proc.out.wait_closed(15), (
        "%s: its stdout stayed open after the kill: the program outlived "
        "ckpt_launch (pid %d) or the kill" % (proc.name, proc.pid))
    before = numbers(proc.lines(), progress)
    print("%s: checkpoint requested after progress %d, images %s, killed "
          "(%s) at %s" % (proc.name, seen, images, kill,
                          before[-1] if before else None))
    return images, seen, before


def restart_to_end(s, images, progress, last, seen, before,
                   timeout=FINISH_TIMEOUT, step=1, **kw):
    """Restart from images, wait for the end, check continuity.

    Returns (proc, first): the finished restart and the first progress
    number it printed."""
    r = s.restart(images, **kw)
    rc = r.wait_exit(timeout)
    assert rc == 0, "%s: exit %d; last lines %r; stderr:\n%s" % (
        r.name, rc, r.lines()[-5:], r.stderr_text())
    after = numbers(r.lines(), progress)
    first = assert_resumed(before, after, progress, last, seen, step)
    print("%s: resumed at %d, finished at %d" % (r.name, first, after[-1]))
    return r, first


def checkpoint_silently(s, expect_images=None):
    """ckpt_command --checkpoint must succeed and say nothing on stderr
    (no fd or resource named as not restored). Returns the image paths."""
    r = s.command("--checkpoint")
    assert r.returncode == 0, r.stderr
    assert r.stderr.strip() == "", (
        "the checkpoint says something is not restored:\n%s" % r.stderr)
    images = r.stdout.split()
    if expect_images is not None:
        assert len(images) == expect_images, r.stdout
    return images


def checkpoint_while_running(s, proc):
    """One ckpt_command --checkpoint of a computation that goes on: it must
    succeed and proc must still run. Returns the image paths."""
    r = s.command("--checkpoint")
    assert r.returncode == 0, (
        "a checkpoint of %s failed: %s" % (proc.name, r.stderr))
    assert proc.alive(), "%s ended during the checkpoints: %r" % (
        proc.name, proc.lines()[-3:])
    return [l for l in r.stdout.splitlines() if l.strip()]


def restart_and_checkpoint_again(s, images, progress, minimum):
    """Restart images, wait for progress >= minimum, checkpoint the
    restarted computation (silently) and kill it. Returns (the restarted
    Proc, the progress seen before the checkpoint, the new images)."""
    r1 = s.restart(images)
    r1.wait_line(progress, minimum=minimum)
    seen = max(numbers(r1.lines(), progress))
    images = checkpoint_silently(s)
    s.kill_all()
    r1.popen.wait(30)
    return r1, seen, images
