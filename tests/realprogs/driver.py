# SPDX-License-Identifier: LGPL-2.1-or-later
"""Run one unmodified Debian program natively, then under ckpt through two
checkpoint -> kill -> restart cycles, and compare the results.

A test describes its program with a Program: how to prepare its input
(natively, before each run), its command line, and a progress measure
read from the files it writes (a count of lines, of objects, of bytes, or
the time since the current run segment started). The driver

1. prepares a fresh work directory and runs the program there without
   ckpt, keeping its stdout, stderr, exit status and produced files;
2. prepares the same directory again (same path, so paths in outputs
   match) and launches the program under ckpt_launch, with stdout and
   stderr redirected to regular files as a user's `> out 2> err` would;
3. waits until progress reaches the first mark, checkpoints, kills the
   computation (ckpt_command --kill), checks the program had not finished,
   and restarts it with `ckpt_restart ckpt_*.img` as the README says;
4. waits in the restarted computation until the second mark, checkpoints
   again, kills, restarts again, and waits for the end;
5. asserts the exit status, stdout, stderr (less ckpt's own `ckpt[pid]:`
   lines) and produced files equal the native run's.

Marks are fractions of the progress the native run reached at its end, so
checkpoints land mid-run whatever the machine's speed. Every wait is
bounded. The work directory is on disk (build/realprogs), not in /tmp:
ckpt saves files on temporary storage with their contents, files
elsewhere by reference, as a user's project directory would be. A
checkout that is itself on temporary storage (cloned under /tmp) puts it
under $HOME/.cache/ckpt-realprogs instead; files on temporary storage
have their own tests (tests/test_tmp_*.py, test_save_files.py).
"""

import glob
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time

import pytest

from ckpt_harness import FINISH_TIMEOUT, PROGRESS_TIMEOUT, ROOT, Proc



def on_temporary_storage(path):
    """As libckpt decides (saved_files_on_temporary_storage)."""
    path = os.path.realpath(path)
    if path.startswith(("/tmp/", "/var/tmp/")):
        return True
    try:
        out = subprocess.run(["stat", "-f", "-c", "%T", path],
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.stdout.strip() in ("tmpfs", "ramfs")


def work_root():
    here = os.path.join(ROOT, "build", "realprogs")
    home = os.path.expanduser("~")
    if not on_temporary_storage(ROOT) or on_temporary_storage(home):
        return here
    tag = hashlib.sha256(os.path.realpath(ROOT).encode()).hexdigest()[:12]
    return os.path.join(home, ".cache", "ckpt-realprogs", tag)


WORK_ROOT = work_root()
CKPT_LINE = re.compile(r"^ckpt(_\w+)?\[\d+\]: ")
POLL = 0.02
CHECKPOINT_ATTEMPTS = 3
TRANSIENT = "the process disconnected while"


def require(path, package):
    """Skip the test when the program is not installed (install-deps
    installs it; a machine without it cannot run the test)."""
    if not os.path.exists(path):
        pytest.skip("%s is not installed (Debian package %s; run "
                    ".ci/install-deps)" % (path, package))


class Program:
    """One real program; tests subclass it and fill in the blanks."""

    name = None
    # progress values (fractions of the native run's final progress) at
    # which the first (original process) and second (restarted process)
    # checkpoints are taken; with progress_kind "time" each counts from
    # the start of its own run segment (kept small: the restarted run may
    # go faster than the native one did on a busy machine)
    marks = (0.25, 0.55)
    native_timeout = FINISH_TIMEOUT
    # "time": progress is the time (s) since the current segment started
    progress_kind = "files"

    # after the second restart has ended, restart its images once more
    # (the program's first run has exited meanwhile and removed what it
    # removes at exit) and compare again
    restart_again = False

    def setup(self, work):
        """Prepare the input in an empty directory (once per test; each
        run gets a copy of it as its work directory)."""

    def argv(self, run):
        raise NotImplementedError

    def env(self, run):
        return {}

    def launch_options(self, run):
        """Extra ckpt_launch options."""
        return []

    def progress(self, run):
        """A number that grows as the program advances (run: a Run)."""
        return len(run.stdout_lines())

    def finished(self, run):
        """True once the program has produced its final result."""
        return False

    def files(self, work):
        """What the program produced: path -> sha256 of every file."""
        return hash_tree(work)


class Run:
    """The work directory and stdio files of one run of a program."""

    def __init__(self, base):
        self.base = base
        self.work = os.path.join(base, "work")
        self.stdout = os.path.join(base, "stdout")
        self.stderr = os.path.join(base, "stderr")
        # the program's scratch space on temporary storage (sort -T)
        self.tmp = os.path.join("/tmp", "ckpt-realprogs-" +
                                os.path.basename(base))
        self.started = time.monotonic()
        self.state = {}     # for progress measures that keep state

    def fresh(self, prog):
        """An empty work directory holding a copy of the prepared input
        (prepared once per test: git repositories, javac, big inputs)."""
        template = os.path.join(self.base, "template")
        if not os.path.isdir(template):
            os.makedirs(template)
            prog.setup(template)
        shutil.rmtree(self.work, ignore_errors=True)
        shutil.copytree(template, self.work, symlinks=True)
        for f in (self.stdout, self.stderr):
            if os.path.exists(f):
                os.unlink(f)
        shutil.rmtree(self.tmp, ignore_errors=True)
        os.makedirs(self.tmp)
        self.state = {}

    def read(self, path):
        try:
            with open(path, "rb") as f:
                return f.read()
        except FileNotFoundError:
            return b""

    def stdout_lines(self):
        return self.read(self.stdout).decode("utf-8", "replace") \
            .splitlines()

    def path(self, *names):
        return os.path.join(self.work, *names)


class Result:
    def __init__(self, status, stdout, stderr, files):
        self.status = status
        self.stdout = stdout
        self.stderr = stderr
        self.files = files

    def __repr__(self):
        return "Result(status %r, %d bytes of stdout, %d of stderr, %d " \
               "files)" % (self.status, len(self.stdout), len(self.stderr),
                           len(self.files))


def hash_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def hash_tree(top, skip=()):
    """relative path -> sha256 of every regular file under top."""
    out = {}
    for d, dirs, names in os.walk(top):
        dirs.sort()
        for n in sorted(names):
            p = os.path.join(d, n)
            rel = os.path.relpath(p, top)
            if any(re.search(s, rel) for s in skip) or not \
                    os.path.isfile(p) or os.path.islink(p):
                continue
            out[rel] = hash_file(p)
    return out


def program_stderr(text):
    """stderr without ckpt's own messages."""
    return "\n".join(l for l in text.decode("utf-8", "replace")
                     .splitlines() if not CKPT_LINE.search(l))


def clean_env(extra):
    env = dict(os.environ)
    for var in list(env):
        if var.startswith("CKPT_") or var == "LD_PRELOAD":
            del env[var]
    env["LC_ALL"] = "C"
    env.update(extra)
    return env


class FileProc(Proc):
    """A process whose stdout and stderr go to regular files; it joins the
    session's list so the session's teardown kills it if still alive."""

    def __init__(self, argv, env, run, name):
        self.argv = argv
        self.name = name
        self.run = run
        self.out = None
        self.own_session = False
        with open(run.stdout, "wb") as out, open(run.stderr, "wb") as err:
            self.popen = subprocess.Popen(argv, env=env, cwd=run.work,
                                          stdin=subprocess.DEVNULL,
                                          stdout=out, stderr=err)
        self.pid = self.popen.pid

    def stderr_text(self):
        return self.run.read(self.run.stderr).decode("utf-8", "replace")


def new_run(prog):
    os.makedirs(WORK_ROOT, exist_ok=True)
    return Run(tempfile.mkdtemp(prefix=prog.name + "-", dir=WORK_ROOT))


def native(prog, run):
    """Run prog without ckpt; returns (Result, final progress, seconds)."""
    run.fresh(prog)
    env = clean_env(prog.env(run))
    run.started = time.monotonic()
    p = FileProc(prog.argv(run), env, run, "native " + prog.name)
    deadline = run.started + prog.native_timeout
    # progress is polled as it will be under ckpt (some measures keep
    # state: what they have seen so far)
    while p.alive() and time.monotonic() < deadline:
        current(prog, run)
        time.sleep(POLL)
    if p.alive():
        p.sigkill()
        raise AssertionError("native %s did not finish within %d s" % (
            prog.name, prog.native_timeout))
    status = p.popen.wait(10)
    elapsed = time.monotonic() - run.started
    final = elapsed if prog.progress_kind == "time" else prog.progress(run)
    res = Result(status, run.read(run.stdout), program_stderr(
        run.read(run.stderr)), prog.files(run.work))
    print("native %s: %r in %.1f s, final progress %s" % (
        prog.name, res, elapsed, final))
    return res, final, elapsed


def process_tree(root):
    """One line per live process under root (pid, command, state, what
    it waits in): where a hung program sits."""
    parent, info = {}, {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                stat = f.read()
            with open("/proc/%s/wchan" % d) as f:
                wchan = f.read()
        except OSError:
            continue
        rest = stat[stat.rindex(")") + 2:].split()
        parent[int(d)] = int(rest[1])
        info[int(d)] = "%s %s %s wchan=%s" % (
            d, stat[stat.index("("):stat.rindex(")") + 1], rest[0], wchan)
    lines, todo = [], [root]
    while todo:
        pid = todo.pop()
        if pid in info:
            lines.append(info[pid])
        todo.extend(sorted(c for c, pp in parent.items() if pp == pid))
    return "\n".join(lines) or "(no process left)"


def describe(proc, run):
    text = proc.stderr_text()
    if not isinstance(proc, FileProc):
        text += "\nprogram stderr file:\n" + run.read(run.stderr).decode(
            "utf-8", "replace")[-3000:]
    return "%s exit %s; last lines of stdout %r; processes:\n%s\n" \
        "stderr:\n%s" % (proc.name, proc.popen.poll(),
                          run.stdout_lines()[-5:], process_tree(proc.pid),
                          text[-6000:])


def current(prog, run):
    if prog.progress_kind == "time":
        return time.monotonic() - run.started
    return prog.progress(run)


def wait_progress(prog, run, proc, mark, what):
    deadline = time.monotonic() + PROGRESS_TIMEOUT
    while True:
        value = current(prog, run)
        if value >= mark:
            return value
        if not proc.alive():
            raise AssertionError("%s: ended before progress reached %s (at "
                                 "%s), %s" % (what, mark, value,
                                              describe(proc, run)))
        if time.monotonic() > deadline:
            raise AssertionError("%s: progress %s after %d s, waiting for "
                                 "%s; %s" % (what, value, PROGRESS_TIMEOUT,
                                             mark, describe(proc, run)))
        time.sleep(POLL)


def checkpoint_kill(session, prog, run, proc, mark, what):
    """Wait for mark, checkpoint, kill; returns the image paths."""
    seen = wait_progress(prog, run, proc, mark, what)
    t0 = time.monotonic()
    for attempt in range(1, CHECKPOINT_ATTEMPTS + 1):
        r = session.command("--checkpoint")
        # documented (docs/protocol.md, Failures): a round fails when a
        # process of it exits meanwhile; a user checkpoints again
        if r.returncode == 0 or TRANSIENT not in r.stderr or \
                not proc.alive():
            break
        print("%s: checkpoint attempt %d failed: %s" % (
            what, attempt, r.stderr.strip()))
    took = time.monotonic() - t0
    assert r.returncode == 0, "%s: ckpt_command --checkpoint at progress " \
        "%s: exit %d after %.1f s: %s\n%s" % (
            what, seen, r.returncode, took, r.stderr, describe(proc, run))
    images = r.stdout.split()
    assert images, "%s: the checkpoint printed no image" % what
    if r.stderr.strip():
        print("%s: ckpt_command said: %s" % (what, r.stderr.strip()))
    assert proc.alive(), "%s ended during the checkpoint: %s" % (
        what, describe(proc, run))
    k = session.command("--kill")
    assert k.returncode == 0, "ckpt_command --kill: %s" % k.stderr
    try:
        proc.popen.wait(30)
    except subprocess.TimeoutExpired:
        raise AssertionError("%s still runs 30 s after --kill" % proc.name)
    after = current(prog, run)
    print("%s: checkpoint at progress %s (%.1f s, %d images), killed at %s"
          % (what, seen, took, len(images), after))
    assert not prog.finished(run), (
        "%s finished before it was killed: the checkpoint did not land "
        "mid-run; make the run longer" % prog.name)
    return images, after


def restart(session, prog, run, what):
    """ckpt_restart ckpt_*.img, as the README says."""
    images = sorted(glob.glob(os.path.join(session.ckptdir, "ckpt_*.img")))
    run.started = time.monotonic()
    return session.restart(images, name=what)


def under_ckpt(session, prog, run, native_final):
    """Two checkpoint -> kill -> restart cycles; returns the Result."""
    run.fresh(prog)
    mark1, mark2 = (m * native_final if isinstance(m, float) else m
                    for m in prog.marks)
    argv = [session.tool("ckpt_launch")] + prog.launch_options(run) \
        + ["--"] + prog.argv(run)
    env = dict(session.env)
    env.update(clean_env(prog.env(run)))
    env["CKPT_COORD"], env["CKPT_DIR"] = session.coord, session.ckptdir
    run.started = t0 = time.monotonic()
    p = FileProc(argv, env, run, "ckpt_launch " + prog.name)
    session.procs.append(p)
    _, killed_at = checkpoint_kill(session, prog, run, p, mark1, "cycle 1")
    r1 = restart(session, prog, run, "restart 1 " + prog.name)
    if prog.progress_kind != "time":
        # the original went on between the checkpoint and the kill: the
        # second checkpoint must find the restarted computation past that
        mark2 = max(mark2, killed_at + 1)
    checkpoint_kill(session, prog, run, r1, mark2, "cycle 2")
    r2 = restart(session, prog, run, "restart 2 " + prog.name)
    status = r2.wait_exit(FINISH_TIMEOUT)
    for r in (r1, r2):
        if r.stderr_text().strip():
            print("%s said:\n%s" % (r.name, r.stderr_text()[-3000:]))
    res = Result(status, run.read(run.stdout), program_stderr(
        run.read(run.stderr)), prog.files(run.work))
    print("under ckpt %s: %r in %.1f s" % (prog.name, res,
                                            time.monotonic() - t0))
    return res, r2


def assert_same(native_res, ckpt_res, detail=""):
    """The run under ckpt ended exactly like the native run."""
    def first_diff(a, b):
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return "first difference at byte %d: %r vs %r" % (
                    i, a[max(0, i - 60):i + 60], b[max(0, i - 60):i + 60])
        return "lengths %d vs %d" % (len(a), len(b))
    detail = "\nprogram stderr under ckpt:\n%s%s" % (
        ckpt_res.stderr[-3000:], detail)
    assert ckpt_res.stdout == native_res.stdout, (
        "stdout differs from the native run's: %s%s" % (
            first_diff(native_res.stdout, ckpt_res.stdout), detail))
    assert ckpt_res.stderr == native_res.stderr, (
        "stderr (less ckpt's lines) differs: native %r%s" % (
            native_res.stderr[-2000:], detail))
    changed = sorted(k for k in set(native_res.files) | set(ckpt_res.files)
                     if native_res.files.get(k) != ckpt_res.files.get(k))
    assert not changed, "produced files differ from the native run's: " \
        "%s%s" % (", ".join(changed[:20]), detail)
    assert ckpt_res.status == native_res.status, (
        "exit status %s, native %s%s" % (ckpt_res.status, native_res.status,
                                         detail))


def check_program(session, prog):
    """The whole test: native run, run under ckpt, comparison."""
    run = new_run(prog)
    keep = False
    try:
        native_res, final, _ = native(prog, run)
        assert final > 0, "the native run of %s made no progress" % prog.name
        ckpt_res, r2 = under_ckpt(session, prog, run, final)
        assert_same(native_res, ckpt_res, "\nlast restart's stderr:\n%s" % (
            r2.stderr_text()[-3000:]))
        if prog.restart_again:
            r3 = restart(session, prog, run, "restart 3 " + prog.name)
            status = r3.wait_exit(FINISH_TIMEOUT)
            again = Result(status, run.read(run.stdout), program_stderr(
                run.read(run.stderr)), prog.files(run.work))
            assert_same(native_res, again, "\nafter restarting the second "
                        "checkpoint's images again, once the program had "
                        "ended; stderr:\n%s" % r3.stderr_text()[-3000:])
    except BaseException:
        if os.environ.get("CKPT_REALPROGS_KEEP"):
            print("kept %s and %s" % (run.base, run.tmp))
            keep = True
        raise
    finally:
        if not keep:
            shutil.rmtree(run.base, ignore_errors=True)
            shutil.rmtree(run.tmp, ignore_errors=True)
