# SPDX-License-Identifier: LGPL-2.1-or-later
"""ckpt-gdb: snapshots and reverse execution in gdb on top of ckpt.

    (gdb) source PREFIX/share/ckpt/gdb/ckpt-gdb.py
    (gdb) ckpt run ARGS...        run the program under ckpt_launch
    (gdb) ckpt snapshot           snapshot the stopped program
    (gdb) ckpt snapshots          list them
    (gdb) ckpt restore N          go back to snapshot N
    (gdb) ckpt reverse-continue   back to the previous stop
    (gdb) ckpt reverse-step       back to the previous line step
    (gdb) ckpt reverse-next       back to the previous line here
    (gdb) ckpt reverse-finish     back to the caller, before the call
    (gdb) ckpt reverse-watch EXPR the last change of EXPR before now
    (gdb) ckpt bisect EXPR        the first moment EXPR stopped holding
    (gdb) ckpt auto [hits K] [max M]  snapshot every K stops, keep M

Going back = restoring the nearest earlier snapshot and re-executing
forward, counting stops or line steps, to the wanted point (FReD's
approach); libckpt records the inputs and the threads' lock order and
replays them on re-execution (wrappers/record_inputs.c, lock_order.c). A
snapshot is taken through a *backend*: ImageBackend (checkpoint images,
ckpt_restart --stopped, gdb attaches to the restored process) is the one
here; a backend for in-memory snapshots implements the same four methods.
docs/reversible-debugging.md tells how it works and its limits.
"""

import contextlib
import ctypes
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time

import gdb

# libckpt-preload/internal.h, enum ckpt_debugger_event_kind
EV_SIGNAL, EV_SIGNALED, EV_RELEASING, EV_RESTORED, EV_ROUND_DONE = 1, 2, 3, 4, 5
EV_LOCK_EVENT, EV_LOCK_ENTER = 6, 7
HOOK = "ckpt_debugger_event"
LOCK_HOOK = "ckpt_debugger_lock_event"
MANAGER_NAME = "ckpt-manager"
STEP_TIMEOUT = float(os.environ.get("CKPT_GDB_TIMEOUT", "30"))
KILL_GRACE = 5
SYS_TGKILL = 234 if os.uname().machine == "x86_64" else 131  # aarch64
HW_WATCH = int(os.environ.get("CKPT_GDB_HW_WATCH", "0") == "1")
# line steps a reverse-step/next/finish may re-execute from one snapshot
MAX_STEPS = int(os.environ.get("CKPT_GDB_MAX_STEPS", "2000"))


class CkptError(gdb.GdbError):
    pass


# `make install` writes PREFIX/bin here
INSTALLED_BINDIR = "@CKPT_BINDIR@"


def find_tool(name):
    """The ckpt tools: $CKPT_BIN, the installed PREFIX/bin, then PATH."""
    for d in (os.environ.get("CKPT_BIN"), INSTALLED_BINDIR):
        if d and os.access(os.path.join(d, name), os.X_OK):
            return os.path.realpath(os.path.join(d, name))
    path = shutil.which(name)
    if not path:
        raise CkptError("ckpt: %s not found (set CKPT_BIN to the directory "
                        "holding the ckpt tools)" % name)
    return path


def run_quiet(cmd):
    return gdb.execute(cmd, to_string=True)


@contextlib.contextmanager
def quiet_stops():
    """gdb prints each stop (its frame, its line) even under to_string:
    not the extension's own ones, which the user did not ask for."""
    run_quiet("set suppress-cli-notifications on")
    try:
        yield
    finally:
        run_quiet("set suppress-cli-notifications off")


# --- the inferior's stops ------------------------------------------------

class Stop:
    """Where the program stopped: enough to recognise it on re-execution."""

    def __init__(self, index, counted=True):
        frame = gdb.selected_frame()
        thread = gdb.selected_thread()
        # counted: a stop `continue` reaches again (breakpoint, watchpoint,
        # signal); else the end of a step, next or finish after stop index
        self.counted = counted
        self.index = index
        self.pc = frame.pc()
        self.handle = bytes(thread.handle())
        sal = frame.find_sal()
        self.where = "%s:%d" % (sal.symtab.filename if sal.symtab else "??",
                                sal.line)

    def same_place(self, other):
        return self.pc == other.pc and self.handle == other.handle


SCALAR_TYPES = (gdb.TYPE_CODE_INT, gdb.TYPE_CODE_PTR, gdb.TYPE_CODE_ENUM,
                gdb.TYPE_CODE_BOOL, gdb.TYPE_CODE_CHAR, gdb.TYPE_CODE_FLT)


def frame_height(frame):
    """Frames from the outermost to this one: a call makes it grow."""
    height = 0
    while frame is not None:
        height += 1
        frame = frame.older()
    return height


def frame_locals(frame):
    """The scalar arguments and locals of the frame's function: what tells
    two passes at one line apart (a loop's iterations)."""
    try:
        block = frame.block()
    except RuntimeError:
        return ()
    values = []
    while block is not None:
        for sym in block:
            if not (sym.is_variable or sym.is_argument):
                continue
            try:
                v = sym.value(frame)
                if v.type.strip_typedefs().code in SCALAR_TYPES:
                    values.append((sym.name, str(v)))
            except (gdb.error, RuntimeError, TypeError):
                pass
        if block.function:
            break
        block = block.superblock
    return tuple(values)


class Place(Stop):
    """A point of a line-step walk: a stop, plus the stack height and the
    locals, to recognise the same pass at a line (recursion, loops)."""

    def __init__(self, index, counted):
        super().__init__(index, counted)
        frame = gdb.selected_frame()
        self.height = frame_height(frame)
        self.locals = frame_locals(frame)
        sal = frame.find_sal()
        self.line = (sal.symtab.filename if sal.symtab else "??", sal.line)

    def same_pass(self, other):
        return (self.same_place(other) and self.index == other.index and
                self.height == other.height and self.locals == other.locals)


class Walk:
    """Line steps re-executed from a snapshot (points[0] is the snapshot's
    place, each next one a `step` further); the program is at points[at].
    Going back again from there needs no new walk."""

    def __init__(self, snap, points, at):
        self.snap, self.points, self.at = snap, points, at


class Snapshot:
    def __init__(self, number, stop, data, events):
        self.number = number
        self.stop = stop          # the stop it was taken at
        self.data = data          # the backend's (an image path)
        self.events = events      # lock events done by then
        self.taken = time.time()


# --- the lock order (wrappers/lock_order.c) -------------------------------

def libckpt_value(name, default=0):
    """A variable of libckpt in the program (0 when there is none)."""
    try:
        return int(gdb.parse_and_eval(name))
    except gdb.error:
        return default


def set_libckpt(name, value):
    run_quiet("set var %s = %d" % (name, value))


WATCH_COPY = 64     # ckpt_lock_order_watch_copy


def watched_bytes(expr):
    """Address and size of expr, for libckpt to compare."""
    value = gdb.parse_and_eval(expr)
    if value.address is None:
        raise CkptError("ckpt reverse-watch: %s is not in memory (give an "
                        "lvalue)" % expr)
    if value.type.sizeof > WATCH_COPY:
        raise CkptError("ckpt reverse-watch: %s is %d bytes; with several "
                        "threads at most %d" % (expr, value.type.sizeof,
                                                WATCH_COPY))
    return int(value.address), value.type.sizeof


def stopped_at_event(kind):
    """Stopped at libckpt's lock-order trap of this kind."""
    try:
        return (gdb.selected_frame().name() == LOCK_HOOK and
                int(gdb.parse_and_eval("$rdi")) == kind)
    except gdb.error:
        return False


def threads_to_try(first):
    """first, then the program's other threads not blocked in a call."""
    yield first
    for t in sorted(gdb.selected_inferior().threads(), key=lambda t: t.num):
        if (t.is_valid() and t.ptid != first.ptid and
                t.name != MANAGER_NAME and not in_system_call(t)):
            yield t


def holds(expr):
    try:
        return bool(gdb.parse_and_eval("(%s) != 0" % expr))
    except gdb.error as e:
        raise CkptError("ckpt bisect: %s: %s" % (expr, e))


def user_threads():
    return [t for t in gdb.selected_inferior().threads()
            if t.name != MANAGER_NAME]


def in_system_call(thread):
    """Blocked in a system call when gdb stopped it (orig_rax is the call;
    -1 in user code): stepping it would wait with it."""
    thread.switch()
    try:
        reg = "$orig_rax" if os.uname().machine == "x86_64" else "$x8"
        return int(gdb.parse_and_eval(reg)) >= 0
    except gdb.error:
        return False


# --- waiting on gdb with a bound ------------------------------------------

def stop_every_thread(pid):
    """SIGSTOP to each running thread: the only signal ckpt's manager
    (which blocks all the others) cannot block; gdb reports it as a stop.
    Not to those gdb holds stopped: theirs would stay pending and stop the
    user's next continue."""
    libc = ctypes.CDLL(None, use_errno=True)
    try:
        tids = [int(t) for t in os.listdir("/proc/%d/task" % pid)]
    except OSError:
        return
    for tid in tids:
        if process_state(tid) not in ("t", "T", None):
            libc.syscall(SYS_TGKILL, pid, tid, signal.SIGSTOP)


def stopped_by_sigstop():
    try:
        return int(gdb.parse_and_eval("$_siginfo.si_signo")) == \
            signal.SIGSTOP
    except gdb.error:
        return False


def continue_bounded(what, timeout=STEP_TIMEOUT, command="continue",
                     give_up=None, sigstop_stops=True):
    """`continue`, bounded: after timeout seconds, or as soon as
    give_up() says so, every running thread gets SIGSTOP (a stop for gdb
    while this waits); if that does not end the wait (sigstop_stops False:
    the SIGSTOPs of a --stopped restart are still coming), the program is
    killed KILL_GRACE seconds later. Outside these waits gdb ignores
    SIGSTOP: one sent here or by --stopped may still be pending."""
    fired = []
    pid = gdb.selected_inferior().pid
    done = threading.Event()

    def expire():
        if not fired:
            fired.append("stopped")
            stop_every_thread(pid)

    def watch():
        while not done.wait(0.1):
            if give_up():
                expire()
                return

    def kill():
        fired.append("killed")
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass

    timers = [threading.Timer(timeout, expire),
              threading.Timer(timeout + KILL_GRACE, kill)]
    if give_up:
        timers.append(threading.Thread(target=watch, daemon=True))
    for t in timers:
        t.start()
    try:
        # (gdb's noprint implies nostop)
        run_quiet("handle SIGSTOP %s nopass" %
                  ("stop print" if sigstop_stops else "nostop noprint"))
        run_quiet(command)
        # a late SIGSTOP of a --stopped restart is not ours: go on
        for _ in range(8):
            if fired or not stopped_by_sigstop():
                break
            run_quiet("continue")
    finally:
        done.set()
        for t in timers[:2]:
            t.cancel()
        run_quiet("handle SIGSTOP nostop noprint nopass")
    if fired:
        raise CkptError("ckpt: %s did not happen (waited at most %.0f s); "
                        "the program was %s" % (what, timeout, fired[-1]))


class SignalHook(gdb.Breakpoint):
    """A breakpoint on libckpt's ckpt_debugger_event (libckpt-preload/
    debugger.c) for the start of the program only: learns the checkpoint
    signal, then goes (a breakpoint's int3 must not be in memory when an
    image is written: it would be saved in it)."""

    def __init__(self, session):
        run_quiet("set breakpoint pending on")
        super().__init__(HOOK, internal=True)
        self.session = session

    def stop(self):
        try:
            if int(gdb.parse_and_eval("$rdi")) == EV_SIGNAL:
                self.session.pass_signal(int(gdb.parse_and_eval("$rsi")))
                gdb.post_event(self.session.drop_signal_hook)
        except gdb.error as e:
            print("ckpt: reading the checkpoint signal: %s" % e)
        return False


def writer_line():
    """The line of the instruction laid out just before the pc: the one
    that wrote, when a watchpoint reports after a store (stores do not
    jump, so the writer falls through to the pc)."""
    frame = gdb.selected_frame()
    pc = frame.pc()
    try:
        block = frame.block()
    except RuntimeError:
        return "pc 0x%x" % pc
    while block and not block.function:
        block = block.superblock
    start = block.start if block else pc - 64
    for insn in frame.architecture().disassemble(start, pc):
        if insn["addr"] + insn["length"] == pc:
            sal = gdb.find_pc_line(insn["addr"])
            if sal.symtab:
                return "%s:%d" % (sal.symtab.filename, sal.line)
    sal = frame.find_sal()
    return "%s:%d" % (sal.symtab.filename if sal.symtab else "??", sal.line)


def file_mappings(pid):
    """(start, end, file offset, path) of each file mapped in pid."""
    maps = []
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            fields = line.split(None, 5)
            if len(fields) == 6 and fields[5].startswith("/"):
                lo, hi = (int(x, 16) for x in fields[0].split("-"))
                maps.append((lo, hi, int(fields[2], 16),
                             fields[5].strip()))
    return maps


def repair_saved_breakpoints(pid):
    """gdb's own breakpoints (the shared-library event in ld.so, and the
    like) are in memory while a snapshot's image is written, so the image
    holds their int3. Before gdb inserts anything in the restored process,
    put back the byte of the file at each such address."""
    inferior = gdb.selected_inferior()
    text = run_quiet("maint info breakpoints")
    addrs = {int(a, 16) for a in re.findall(r"\s(0x[0-9a-f]+)\s", text)}
    maps = file_mappings(pid)
    for addr in addrs:
        for lo, hi, off, path in maps:
            if not lo <= addr < hi:
                continue
            try:
                with open(path, "rb") as f:
                    f.seek(addr - lo + off)
                    orig = f.read(1)
                if (orig and orig != b"\xcc" and
                        bytes(inferior.read_memory(addr, 1)) == b"\xcc"):
                    inferior.write_memory(addr, orig)
            except (OSError, gdb.error):
                pass
            break


HITS_AT_RESUME = {}


def note_hit_counts(event):
    """At each resume: the breakpoints' hit counts, to tell a breakpoint
    that stopped the program from one a step ended on."""
    HITS_AT_RESUME.clear()
    for b in gdb.breakpoints() or ():
        if b.is_valid():
            HITS_AT_RESUME[b.number] = b.hit_count


def really_hit(event):
    """A step that ends at a breakpoint whose condition is false is
    reported with it all the same; its hit count did not move."""
    for b in event.breakpoints:
        if not b.is_valid():        # a temporary one, deleted when hit
            return True
        if b.hit_count > HITS_AT_RESUME.get(b.number, 0):
            return True
    return False


def counts_as_stop(event):
    """The stops re-execution counts: those `continue` reaches again. Not
    the end of a step, next or finish, nor an interrupt (Ctrl-C)."""
    if isinstance(event, gdb.BreakpointEvent):
        return really_hit(event)
    return (isinstance(event, gdb.SignalEvent) and
            event.stop_signal != "SIGINT")


def set_trap_events(on):
    """libckpt traps at each event while this is set (debugger.c)."""
    run_quiet("set var *(int *)&ckpt_debugger_trap_events = %d" % on)


def continue_to_event(wanted, what, command="continue", give_up=None):
    """Continue until libckpt traps at one of the events `wanted`."""
    continue_bounded(what, command=command, give_up=give_up)
    frame = gdb.selected_frame()
    if frame.name() != HOOK:
        raise CkptError("ckpt: %s: the program stopped elsewhere (%s)" %
                        (what, frame.name() or hex(frame.pc())))
    event = int(gdb.parse_and_eval("$rdi"))
    if gdb.selected_inferior().architecture().name().startswith("aarch64"):
        run_quiet("set var $pc = $pc + 4")     # past the brk
    if event not in wanted:
        raise CkptError("ckpt: %s: the checkpoint failed (event %d)" %
                        (what, event))
    return event


# --- the backend ----------------------------------------------------------

class CommandJob:
    """A ckpt tool run in the background. Its exit status is read from its
    own output: gdb may reap the child (waitpid(-1)) before Popen can."""

    def __init__(self, argv):
        self.proc = subprocess.Popen(
            ["/bin/sh", "-c", '"$@"; echo "ckpt-exit=$?" >&2', "sh"] + argv,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        self.out = self.err = ""
        self.done = threading.Event()
        threading.Thread(target=self.collect, daemon=True).start()

    def collect(self):
        try:
            self.out, self.err = self.proc.communicate()
        except (OSError, ValueError):
            pass
        self.done.set()

    def wait(self, timeout):
        return self.done.wait(timeout)

    def status(self):
        """The exit status; None while it runs (or when it said none)."""
        if not self.done.is_set():
            return None
        m = re.search(r"^ckpt-exit=(\d+)$", self.err, re.M)
        return int(m.group(1)) if m else None

    def failed(self):
        return self.done.is_set() and self.status() != 0

    def said(self):
        text = re.sub(r"^ckpt-exit=\d+\n?", "", self.err, flags=re.M)
        return (text.strip() or self.out.strip())

    def kill(self):
        try:
            self.proc.kill()
        except OSError:
            pass


def keep_image(image, kept):
    """kept names the image as it is now. A hard link where it can: the
    next checkpoint replaces the image by rename, never in place
    (docs/image-format.md), so the link keeps this one's bytes without
    a copy; a copy across filesystems."""
    try:
        os.unlink(kept)
    except FileNotFoundError:
        pass
    try:
        os.link(image, kept)
    except OSError:
        shutil.copyfile(image, kept)


class ImageBackend:
    """Snapshots as checkpoint images: take = ckpt_command --checkpoint,
    restore = ckpt_restart --stopped + attach. An in-memory backend
    (issue 11's ckpt_command --snapshot/--restore) implements the same
    take/finish_take/restore/discard."""

    def __init__(self, session):
        self.s = session

    def take(self, number):
        """Start the checkpoint; the session drives the threads meanwhile.
        Returns the running command (a CommandJob)."""
        return CommandJob([find_tool("ckpt_command"), "--coord",
                           self.s.coord, "--checkpoint"])

    def finish_take(self, job, number):
        if not job.wait(STEP_TIMEOUT):
            job.kill()
            raise CkptError("ckpt: the checkpoint did not end within %.0f s"
                            % STEP_TIMEOUT)
        if job.status() != 0:
            raise CkptError("ckpt: checkpoint failed: %s" % job.said())
        image = self.image_of(job.out)
        kept = os.path.join(self.s.dir, "snapshot-%d.img" % number)
        keep_image(image, kept)
        return kept

    def image_of(self, out):
        for word in out.split():
            if word.endswith(".img") and os.path.exists(word):
                return word
        images = [os.path.join(self.s.ckptdir, f)
                  for f in os.listdir(self.s.ckptdir) if f.endswith(".img")]
        if not images:
            raise CkptError("ckpt: the checkpoint named no image: %r" % out)
        return max(images, key=os.path.getmtime)

    def restore(self, data):
        """Start the restored process, stopped; returns its pid."""
        proc = subprocess.Popen(
            [find_tool("ckpt_restart"), "--stopped", "--coord",
             self.s.coord, "--ckptdir", self.s.ckptdir, data],
            stdin=subprocess.DEVNULL)
        self.s.restarts.append(proc)
        deadline = time.monotonic() + STEP_TIMEOUT
        while time.monotonic() < deadline:
            state = process_state(proc.pid)
            if state in ("T", "t"):
                return proc.pid
            # gdb may reap the child itself: look at the process, not
            # at Popen's status
            if state in (None, "Z", "X") or proc.poll() is not None:
                raise CkptError("ckpt: ckpt_restart %s failed (its message "
                                "is above)" % data)
            time.sleep(0.01)
        proc.kill()
        raise CkptError("ckpt: the restored process %d did not stop within "
                        "%.0f s" % (proc.pid, STEP_TIMEOUT))

    def discard(self, data):
        try:
            os.unlink(data)
        except OSError:
            pass


def process_state(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


# --- the session ------------------------------------------------------------

class Session:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="ckpt-gdb-")
        self.coord = os.path.join(self.dir, "coord.sock")
        self.ckptdir = os.path.join(self.dir, "images")
        os.makedirs(self.ckptdir)
        self.backend = ImageBackend(self)
        self.snapshots = []
        self.next_number = 1
        self.history = []         # Stop per stop index of this timeline
        self.position = 0         # stops seen so far
        self.exe = None
        self.hook = None
        self.passed = set()
        self.restarts = []
        self.replaying = False
        self.auto_hits = 0
        self.auto_seconds = 0
        self.auto_max = 8
        self.started = time.time()
        self.running = False
        # after reverse-watch: (snapshot, expression, change number) of
        # the point between two stops the program is at; None at a stop
        self.between = None
        # after a step, next or finish: where it ended (a Stop not counted)
        self.off_stop = None
        # after reverse-step/next/finish: the line steps re-executed
        self.walk = None
        self.last_event = None
        # lock-order divergences libckpt counted at the last restore
        self.divergences_base = 0

    # signals
    def pass_signal(self, sig):
        if sig > 0 and sig not in self.passed:
            self.passed.add(sig)
            # gdb names real-time signals SIG34..SIG64 by number
            run_quiet("handle SIG%d nostop noprint pass" % sig)

    def watch_signal_choice(self):
        self.drop_signal_hook()
        self.hook = SignalHook(self)

    def drop_signal_hook(self):
        if self.hook is not None and self.hook.is_valid():
            self.hook.delete()
        self.hook = None

    def pass_current_signal(self):
        """The checkpoint signal may have moved since the start."""
        try:
            sig = int(gdb.parse_and_eval(
                "*(int *)&ckpt_debugger_signal"))
        except gdb.error:
            raise CkptError("ckpt: libckpt is not in the program (run it "
                            "with `ckpt run`)")
        self.pass_signal(sig)

    # stops
    def on_stop(self, event):
        self.last_event = event
        if self.replaying or not self.running:
            return
        if gdb.selected_inferior().pid == 0:
            return
        self.between = None
        self.walk = None
        if not counts_as_stop(event):
            try:
                self.off_stop = Stop(self.position, counted=False)
            except gdb.error:
                self.off_stop = None
            return
        self.off_stop = None
        self.position += 1
        del self.history[self.position - 1:]
        try:
            self.history.append(Stop(self.position))
        except gdb.error:
            self.history.append(None)
            return
        if self.auto_due(event):
            self.auto_snapshot()

    def auto_due(self, event):
        """Every K breakpoint stops, or at the first stop T seconds of
        run time after the last snapshot."""
        if (self.auto_hits and isinstance(event, gdb.BreakpointEvent) and
                self.position % self.auto_hits == 0):
            return True
        if not self.auto_seconds or isinstance(event, gdb.SignalEvent):
            return False
        last = self.snapshots[-1].taken if self.snapshots else self.started
        return time.time() - last >= self.auto_seconds

    def auto_snapshot(self):
        try:
            self.snapshot(quiet=True)
        except gdb.GdbError as e:
            print(str(e))

    def current_stop(self):
        if self.between:
            raise CkptError("ckpt: the program is between two stops (after "
                            "reverse-watch); continue to a stop first")
        if self.off_stop:
            return self.off_stop
        if self.position == 0 or not self.history[self.position - 1]:
            raise CkptError("ckpt: the program is not stopped at a known "
                            "point (run it with `ckpt run` and stop it)")
        return self.history[self.position - 1]

    def manager_thread(self):
        for t in gdb.selected_inferior().threads():
            if t.name == MANAGER_NAME:
                return t
        raise CkptError("ckpt: no %s thread: the program was not started "
                        "with `ckpt run` (libckpt is not loaded)" %
                        MANAGER_NAME)

    def thread_by_handle(self, handle):
        for t in gdb.selected_inferior().threads():
            if bytes(t.handle()) == handle:
                return t
        raise CkptError("ckpt: the thread of the snapshot is gone")

    # snapshot while stopped
    def snapshot(self, quiet=False):
        stop = self.current_stop()
        self.pass_current_signal()
        events = libckpt_value("ckpt_lock_order_events")
        number = self.next_number
        user_bps = self.disable_user_breakpoints()
        proc = self.backend.take(number)
        self.replaying = True
        try:
            self.park_threads_for_checkpoint(proc.failed)
            self.return_to(stop)
            data = self.backend.finish_take(proc, number)
        except gdb.GdbError as e:
            raise self.take_failure(proc, stop, e)
        finally:
            if not proc.done.is_set():
                proc.kill()
            self.replaying = False
            run_quiet("set scheduler-locking off")
            self.enable(user_bps)
        self.next_number += 1
        self.snapshots.append(Snapshot(number, stop, data, events))
        self.thin()
        if not quiet:
            print("ckpt: snapshot %d at stop %d (%s)" %
                  (number, stop.index, stop.where))
        return number

    def take_failure(self, proc, stop, error):
        """The error of a failed snapshot, with what the checkpoint command
        said; the stopped thread is selected again."""
        proc.wait(1)
        try:
            self.thread_by_handle(stop.handle).switch()
        except gdb.GdbError:
            pass
        if proc.failed():
            return CkptError("ckpt: snapshot failed: %s" % proc.said())
        return error

    def park_threads_for_checkpoint(self, failed):
        """Only ckpt's manager runs until it has signaled every thread;
        then all run: each user thread enters ckpt's handler at once (the
        signal is pending) and executes no instruction of its own."""
        stopped_in = gdb.selected_thread()
        set_trap_events(1)
        try:
            run_quiet("set scheduler-locking on")
            self.manager_thread().switch()
            continue_to_event((EV_SIGNALED,),
                              "ckpt's manager signaling the threads",
                              give_up=failed)
            run_quiet("set scheduler-locking off")
            # `signal 0`: the stopped thread does not take the signal it
            # stopped with (a SIGSEGV would end the program)
            stopped_in.switch()
            continue_to_event((EV_RELEASING,), "the checkpoint's write",
                              command="signal 0", give_up=failed)
            # the image is written; the manager alone finishes the round
            run_quiet("set scheduler-locking on")
            self.manager_thread().switch()
            continue_to_event((EV_ROUND_DONE,), "the checkpoint's commit")
        finally:
            set_trap_events(0)
        stopped_in.switch()

    def return_to(self, stop):
        """Let the stopped thread out of ckpt's handler up to its stop."""
        thread = self.thread_by_handle(stop.handle)
        thread.switch()
        run_quiet("set scheduler-locking on")
        run_quiet("tbreak *0x%x thread %d" % (stop.pc, thread.num))
        continue_bounded("the return to %s" % stop.where)
        run_quiet("set scheduler-locking off")
        self.check_at(stop)

    def check_lock_order(self):
        """libckpt found the threads off their recorded lock order."""
        n = libckpt_value("ckpt_lock_order_divergences")
        if n > self.divergences_base:
            self.divergences_base = n
            text = gdb.parse_and_eval(
                "ckpt_lock_order_divergence_text").string()
            raise CkptError("ckpt: divergence: %s; the program is not "
                            "where it was" % text)

    def check_at(self, stop):
        self.check_lock_order()
        here = Stop(stop.index)
        if not here.same_place(stop):
            raise CkptError("ckpt: divergence: expected stop %d at %s "
                            "(pc 0x%x), the program is at %s (pc 0x%x)" %
                            (stop.index, stop.where, stop.pc, here.where,
                             here.pc))

    def disable_user_breakpoints(self):
        bps = [b for b in (gdb.breakpoints() or ())
               if b.enabled and b.number > 0 and b.is_valid()]
        for b in bps:
            b.enabled = False
        return bps

    @staticmethod
    def enable(bps):
        for b in bps:
            if b.is_valid():
                b.enabled = True

    # bounded count, thinned logarithmically: keep the newest, then one
    # per doubling distance back
    def thin(self):
        while len(self.snapshots) > self.auto_max > 1:
            newest = self.snapshots[-1].stop.index
            worst, gap = None, None
            for i in range(1, len(self.snapshots) - 1):
                prev, cur = self.snapshots[i - 1], self.snapshots[i]
                dist = max(newest - cur.stop.index, 1)
                g = (cur.stop.index - prev.stop.index) / dist
                if gap is None or g < gap:
                    worst, gap = i, g
            if worst is None:
                break
            self.backend.discard(self.snapshots.pop(worst).data)

    # restore
    def restore(self, snap, quiet=False):
        pid = self.backend.restore(snap.data)
        self.replaying = True
        try:
            if gdb.selected_inferior().pid:
                run_quiet("kill")
            with quiet_stops():
                run_quiet("attach %d" % pid)
            repair_saved_breakpoints(pid)
            self.divergences_base = libckpt_value(
                "ckpt_lock_order_divergences")
            user_bps = self.disable_user_breakpoints()
            try:
                self.resume_restored(snap.stop)
            finally:
                self.enable(user_bps)
        finally:
            self.replaying = False
        self.position = snap.stop.index
        self.between = None
        self.walk = None
        self.off_stop = None if snap.stop.counted else snap.stop
        if not quiet:
            gdb.execute("frame")

    def resume_restored(self, stop):
        thread = self.thread_by_handle(stop.handle)
        thread.switch()
        run_quiet("break *0x%x thread %d" % (stop.pc, thread.num))
        bp = gdb.breakpoints()[-1]
        # the SIGSTOP of --stopped may be reported by any thread, now or
        # a little later
        try:
            with quiet_stops():
                continue_bounded("the restored thread's return to %s" %
                                 stop.where, sigstop_stops=False)
        finally:
            bp.delete()
        self.check_at(stop)

    def snapshot_before(self, index):
        best = None
        for s in self.snapshots:
            # one taken after a step past stop N comes after stop N
            usable = s.stop.index < index or (s.stop.index == index and
                                              s.stop.counted)
            if usable and (best is None or s.stop.index > best.stop.index):
                best = s
        if best is None and not self.snapshots:
            raise CkptError("ckpt: cannot go back before the first snapshot "
                            "(none taken yet: `ckpt snapshot`, or `ckpt "
                            "auto` to take them as the program runs)")
        if best is None:
            raise CkptError("ckpt: cannot go back before the first snapshot "
                            "(stop %d; the target is stop %d)" %
                            (self.snapshots[0].stop.index, index))
        return best

    def count_stop(self):
        """The re-execution reached a stop: the next one of the history."""
        self.position += 1
        self.off_stop = None
        if self.position > len(self.history):
            raise CkptError("ckpt: divergence: re-execution went past the "
                            "last stop seen")
        self.check_at(self.history[self.position - 1])

    def replay_to(self, index):
        """From the restored position, continue until stop `index`,
        checking each stop against the history."""
        self.replaying = True
        try:
            while self.position < index:
                with quiet_stops():
                    continue_bounded("stop %d" % (self.position + 1))
                self.count_stop()
        finally:
            self.replaying = False

    def reverse_continue(self):
        if self.between or self.off_stop:
            target = self.position       # the stop before this point
        else:
            target = self.current_stop().index - 1
        if target < 1:
            raise CkptError("ckpt: no earlier stop than this one")
        snap = self.snapshot_before(target)
        self.restore(snap, quiet=True)
        self.replay_to(target)
        gdb.execute("frame")

    def reverse_watch(self, expr):
        """The last change of expr before now: from the newest snapshot
        back, re-execute to now counting the watchpoint's hits; restore
        the first snapshot that saw any and run to its last hit."""
        if self.between and self.between[1] == expr and self.between[2] > 1:
            snap, hits = self.between[0], self.between[2] - 1
            self.restore(snap, quiet=True)
            self.run_to_change(snap, expr, hits)
            return
        if self.between:
            until = self.between[0].stop.index
        else:
            until = self.current_stop().index
        gdb.parse_and_eval(expr)     # an error here names the expression
        candidates = sorted((s for s in self.snapshots
                             if s.stop.index <= until and
                             not (self.between and s is self.between[0])),
                            key=lambda s: -s.stop.index)
        if not candidates:
            self.snapshot_before(-1)   # raises the error
        if libckpt_value("ckpt_lock_order_events") > candidates[-1].events:
            return self.reverse_watch_threads(expr, until, candidates)
        for snap in candidates:
            hits = self.count_changes(snap, expr, until)
            if hits:
                self.restore(snap, quiet=True)
                self.run_to_change(snap, expr, hits)
                return
        raise CkptError("ckpt: %s did not change since the first snapshot "
                        "(stop %d)" % (expr, candidates[-1].stop.index))

    def watch(self, expr):
        # hardware watchpoints never fire on some VMs (this one): software
        # ones single-step, slowly but everywhere; CKPT_GDB_HW_WATCH=1
        run_quiet("set can-use-hw-watchpoints %d" % HW_WATCH)
        return gdb.Breakpoint(expr, gdb.BP_WATCHPOINT, internal=True)

    def run_counting(self, expr, done):
        """Continue from a restored snapshot, counting the stops (checked
        against the history) and the changes of expr until done(changes)."""
        wp = self.watch(expr)
        self.replaying = True
        # only the program's thread runs: a software watchpoint sees a
        # change in whichever thread it steps, ckpt's manager included
        # (several threads: stage 2, docs/reversible-debugging.md)
        run_quiet("set scheduler-locking on")
        try:
            while not done(wp.hit_count):
                before = wp.hit_count
                continue_bounded("stop %d" % (self.position + 1))
                if wp.hit_count > before:
                    continue
                self.count_stop()
            return wp.hit_count
        finally:
            run_quiet("set scheduler-locking off")
            self.replaying = False
            wp.delete()

    def count_changes(self, snap, expr, until):
        """Re-execute from snap to stop `until`, counting changes of expr."""
        self.restore(snap, quiet=True)
        return self.run_counting(
            expr, lambda hits: self.position >= until)

    def run_to_change(self, snap, expr, hits):
        self.run_counting(expr, lambda n: n >= hits)
        self.between = (snap, expr, hits)
        self.report_change(expr)

    def report_change(self, expr):
        thread = gdb.selected_thread()
        print("ckpt: %s last changed before stop %d, at %s, in thread %d "
              "(%s): now %s" % (expr, self.position + 1, writer_line(),
                                thread.num, thread.name,
                                gdb.parse_and_eval(expr)))
        gdb.execute("frame")

    # reverse-watch with several threads: libckpt compares the watched
    # bytes at each lock event; the change lies between two events, where
    # one thread at a time runs with a software watchpoint
    def reverse_watch_threads(self, expr, until, candidates):
        addr, size = watched_bytes(expr)
        for snap in candidates:
            start = self.change_window(snap, addr, size, until)
            if start is None:
                continue
            self.restore(snap, quiet=True)
            if start >= snap.events:
                self.run_to_event(start)
            if self.step_threads_to_change(expr) is None:
                raise CkptError(
                    "ckpt: %s changed after lock event %d, but no thread "
                    "run alone from there wrote it (a write without the "
                    "lock, racing?)" % (expr, start))
            self.between = (snap, expr, 0)
            self.report_change(expr)
            return
        raise CkptError("ckpt: %s did not change since the first snapshot "
                        "(stop %d)" % (expr, candidates[-1].stop.index))

    def change_window(self, snap, addr, size, until):
        """Re-execute from snap to stop `until`, libckpt comparing the
        bytes at each lock event. The event after which the last change
        came (snap.events - 1: from the snapshot's stop), or None."""
        self.restore(snap, quiet=True)
        inferior = gdb.selected_inferior()
        copy = int(gdb.parse_and_eval(
            "(long)&ckpt_lock_order_watch_copy"))
        inferior.write_memory(copy, inferior.read_memory(addr, size))
        set_libckpt("ckpt_lock_order_changed_at", -1)
        set_libckpt("ckpt_lock_order_watch_addr", addr)
        set_libckpt("ckpt_lock_order_watch_len", size)
        try:
            self.replay_to(until)
        finally:
            set_libckpt("ckpt_lock_order_watch_len", 0)
        events = libckpt_value("ckpt_lock_order_events")
        if (bytes(inferior.read_memory(addr, size)) !=
                bytes(inferior.read_memory(copy, size))):
            return max(events - 1, snap.events - 1)
        changed = libckpt_value("ckpt_lock_order_changed_at", -1)
        return None if changed < 0 else max(changed - 1, snap.events - 1)

    def run_to_event(self, event):
        """Continue until libckpt traps once lock event `event` is done,
        checking the stops on the way against the history."""
        set_libckpt("ckpt_lock_order_trap_at", event)
        self.replaying = True
        try:
            while True:
                self.last_event = None
                with quiet_stops():
                    continue_bounded("lock event %d" % event)
                if stopped_at_event(EV_LOCK_EVENT):
                    return
                if not counts_as_stop(self.last_event):
                    raise CkptError("ckpt: the re-execution stopped at %s "
                                    "before lock event %d" %
                                    (Stop(0).where, event))
                self.count_stop()
        finally:
            self.replaying = False
            set_libckpt("ckpt_lock_order_trap_at", -1)

    def step_threads_to_change(self, expr):
        """One thread at a time, from the selected one, runs with a
        software watchpoint on expr until it changes it (the writer,
        returned, selected) or comes to its next lock event (libckpt
        traps there)."""
        first = gdb.selected_thread()
        wp = self.watch(expr)
        set_libckpt("ckpt_lock_order_trap_enter", 1)
        run_quiet("set scheduler-locking on")
        self.replaying = True
        try:
            for thread in threads_to_try(first):
                thread.switch()
                before = wp.hit_count
                try:
                    with quiet_stops():
                        continue_bounded("thread %d's next lock event" %
                                         thread.num,
                                         timeout=min(STEP_TIMEOUT, 10))
                except CkptError:
                    continue        # blocked outside the lock events
                if wp.hit_count > before:
                    return thread
            return None
        finally:
            self.replaying = False
            run_quiet("set scheduler-locking off")
            set_libckpt("ckpt_lock_order_trap_enter", 0)
            wp.delete()

    # bisect: the first stop at which a condition that held at the first
    # snapshot is false, by binary search over the stops (one
    # re-execution a probe), then the change itself, watched from the
    # last stop where it held
    def bisect(self, expr):
        now = self.current_stop()
        if holds(expr):
            raise CkptError("ckpt bisect: %s holds now: nothing to find" %
                            expr)
        first = self.snapshot_before(now.index)
        for s in self.snapshots:
            if s.stop.index < first.stop.index:
                first = s
        self.reexecutions = 0
        lo = first.stop.index
        hi = now.index if now.counted else now.index + 1
        if not self.probe(expr, first, lo):
            raise CkptError("ckpt bisect: %s does not hold at the first "
                            "snapshot (stop %d): no start to search from "
                            "(the program is at that snapshot now)" %
                            (expr, lo))
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.probe(expr, self.snapshot_before(mid), mid):
                lo = mid
            else:
                hi = mid
        snap = self.snapshot_before(lo)
        if self.position != lo or self.off_stop:
            self.probe(expr, snap, lo)
        self.find_break(expr, snap, lo, hi)

    def probe(self, expr, snap, index):
        """Restore snap, re-execute to stop index: does expr hold?"""
        self.restore(snap, quiet=True)
        self.reexecutions += 1
        self.replay_to(index)
        return holds(expr)

    def find_break(self, expr, snap, lo, hi):
        """From stop lo (expr holds) on to where it stops holding: watched
        with one thread; with several, the first stop where it is false."""
        if len(user_threads()) == 1:
            self.run_counting("(%s) != 0" % expr, lambda n: n >= 1)
            where = "at %s" % writer_line()
        else:
            self.replay_to(hi)
            where = "by stop %d" % hi
        self.between = (snap, None, 0)
        thread = gdb.selected_thread()
        print("ckpt: %s first false %s, in thread %d (%s), after stop %d "
              "(where it held); %d re-executions" % (
                  expr, where, thread.num, thread.name, lo,
                  self.reexecutions))
        gdb.execute("frame")

    # going back by lines: re-execute `step` by `step` from a snapshot to
    # here (FReD's way), then again up to the wanted step
    def reverse_by_steps(self, what, choose):
        """choose(earlier points, here) -> the index of the point to go
        back to, or None when this walk does not reach back far enough."""
        if self.walk:
            walk = self.walk
            j = choose(walk.points[:walk.at], walk.points[walk.at])
            if j is not None:
                return self.land(walk.snap, walk.points, j)
            here = walk.points[walk.at]
            older = [s for s in self.snapshots
                     if s.stop.index < walk.snap.stop.index]
        else:
            here = self.here_place()
            older = self.snapshots_before_place(here)
        for snap in sorted(older, key=lambda s: -s.stop.index):
            points = self.walk_to(snap, here, what)
            j = choose(points[:-1], points[-1])
            if j is not None:
                return self.land(snap, points, j)
        if not older:
            self.snapshot_before(-1)     # raises: none, or the first
        raise CkptError("ckpt: %s: nothing to go back to since the first "
                        "snapshot (stop %d)" % (what, older[-1].stop.index
                                                if older else 0))

    def here_place(self):
        stop = self.current_stop()
        return Place(stop.index, stop.counted)

    def snapshots_before_place(self, here):
        """Snapshots taken before here: at an earlier stop, or at here's
        stop when here is past it (one taken after a step past stop N may
        lie after here: left out)."""
        return [s for s in self.snapshots
                if s.stop.index < here.index or
                (s.stop.index == here.index and s.stop.counted and
                 not here.counted)]

    def walk_to(self, snap, here, what):
        """Restore snap and step until here; the points passed."""
        self.restore(snap, quiet=True)
        points = [Place(self.position, snap.stop.counted)]
        while not points[-1].same_pass(here):
            if len(points) > MAX_STEPS:
                raise CkptError(
                    "ckpt: %s: %d line steps from snapshot %d (stop %d) do "
                    "not reach the current point (%s); take snapshots "
                    "closer to it (ckpt auto), or raise CKPT_GDB_MAX_STEPS"
                    % (what, MAX_STEPS, snap.number, snap.stop.index,
                       here.where))
            if self.position > here.index:
                raise CkptError(
                    "ckpt: %s: divergence: re-executing from snapshot %d "
                    "went past stop %d without passing the current point "
                    "(%s)" % (what, snap.number, here.index, here.where))
            points.append(self.step_once())
        self.check_lock_order()
        return points

    def step_once(self):
        """One `step` of the re-execution; its end, checked against the
        history when it is a stop `continue` reaches too."""
        self.last_event = None
        self.replaying = True
        try:
            with quiet_stops():
                continue_bounded("a line step at stop %d" % self.position,
                                 command="step", sigstop_stops=False)
        finally:
            self.replaying = False
        if gdb.selected_inferior().pid == 0:
            raise CkptError("ckpt: divergence: the program ended while "
                            "re-executing line steps")
        counted = self.last_event is not None and \
            counts_as_stop(self.last_event)
        if counted:
            self.count_stop()
        return Place(self.position, counted)

    def land(self, snap, points, j):
        """Restore snap and step j times: to points[j], checked."""
        self.restore(snap, quiet=True)
        for k in range(1, j + 1):
            got = self.step_once()
            if not got.same_pass(points[k]):
                raise CkptError(
                    "ckpt: divergence: line step %d from snapshot %d "
                    "expected %s (pc 0x%x), the program is at %s (pc 0x%x)"
                    % (k, snap.number, points[k].where, points[k].pc,
                       got.where, got.pc))
        target = points[j]
        self.off_stop = None if target.counted else target
        self.walk = Walk(snap, points, j)
        gdb.execute("frame")

    def reverse_step(self):
        self.reverse_by_steps(
            "reverse-step", lambda before, here: len(before) - 1
            if before else None)

    def reverse_next(self):
        """Back to the previous line of this function (over calls), or to
        the caller's line at the function's first line."""
        self.reverse_by_steps("reverse-next", lambda before, here: last_index(
            before, lambda p: p.height <= here.height))

    def reverse_finish(self):
        """Back to the caller's line, before the call."""
        self.reverse_by_steps(
            "reverse-finish", lambda before, here: last_index(
                before, lambda p: p.height < here.height))

    def cleanup(self):
        try:
            subprocess.run([find_tool("ckpt_command"), "--coord", self.coord,
                            "--quit"], capture_output=True, timeout=10)
        except (gdb.GdbError, OSError, subprocess.TimeoutExpired):
            pass
        for p in self.restarts:
            if p.poll() is None:
                try:
                    p.kill()
                except OSError:
                    pass
        shutil.rmtree(self.dir, ignore_errors=True)


def last_index(points, wanted):
    for i in range(len(points) - 1, -1, -1):
        if wanted(points[i]):
            return i
    return None


SESSION = Session()


# --- commands -----------------------------------------------------------

class CkptCommand(gdb.Command):
    """ckpt: snapshots and reverse execution (docs/reversible-debugging.md).
Subcommands: run, snapshot, snapshots, restore, reverse-continue,
reverse-step, reverse-next, reverse-finish, reverse-watch, bisect, auto."""

    def __init__(self):
        super().__init__("ckpt", gdb.COMMAND_RUNNING, prefix=True)


class CkptRun(gdb.Command):
    """ckpt run [ARGS...]: run the program under ckpt_launch."""

    def __init__(self):
        super().__init__("ckpt run", gdb.COMMAND_RUNNING)

    def invoke(self, arg, from_tty):
        s = SESSION
        launch = find_tool("ckpt_launch")
        run_quiet("set exec-wrapper %s --coord %s --ckptdir %s" %
                  (launch, s.coord, s.ckptdir))
        # libckpt records time, random bytes and outside reads there;
        # re-executions replay them (wrappers/record_inputs.c)
        run_quiet("set environment CKPT_RECORD_INPUTS %s" %
                  os.path.join(s.dir, "inputs"))
        s.exe = gdb.current_progspace().filename
        s.position = 0
        s.history = []
        s.running = True
        s.started = time.time()
        s.watch_signal_choice()
        gdb.execute("run %s" % arg, from_tty)


class CkptSnapshot(gdb.Command):
    """ckpt snapshot: snapshot the stopped program."""

    def __init__(self):
        super().__init__("ckpt snapshot", gdb.COMMAND_RUNNING)

    def invoke(self, arg, from_tty):
        SESSION.snapshot()


class CkptSnapshots(gdb.Command):
    """ckpt snapshots: list the snapshots."""

    def __init__(self):
        super().__init__("ckpt snapshots", gdb.COMMAND_STATUS)

    def invoke(self, arg, from_tty):
        if not SESSION.snapshots:
            print("ckpt: no snapshots")
        for snap in SESSION.snapshots:
            print("%3d  %s %-5d %s" % (
                snap.number, "stop" if snap.stop.counted else "after",
                snap.stop.index, snap.stop.where))


class CkptRestore(gdb.Command):
    """ckpt restore N: go back to snapshot N."""

    def __init__(self):
        super().__init__("ckpt restore", gdb.COMMAND_RUNNING)

    def invoke(self, arg, from_tty):
        try:
            n = int(arg)
        except ValueError:
            raise CkptError("ckpt restore: %r is not a snapshot number "
                            "(see `ckpt snapshots`)" % arg)
        for snap in SESSION.snapshots:
            if snap.number == n:
                SESSION.restore(snap)
                return
        raise CkptError("ckpt restore: no snapshot %d (see `ckpt "
                        "snapshots`)" % n)


class CkptReverseContinue(gdb.Command):
    """ckpt reverse-continue: back to the previous stop."""

    def __init__(self):
        super().__init__("ckpt reverse-continue", gdb.COMMAND_RUNNING)

    def invoke(self, arg, from_tty):
        SESSION.reverse_continue()


class CkptReverseWatch(gdb.Command):
    """ckpt reverse-watch EXPR: stop where EXPR last changed before now."""

    def __init__(self):
        super().__init__("ckpt reverse-watch", gdb.COMMAND_RUNNING)

    def invoke(self, arg, from_tty):
        if not arg.strip():
            raise CkptError("ckpt reverse-watch: give an expression")
        SESSION.reverse_watch(arg)


class SessionCommand(gdb.Command):
    """A `ckpt` subcommand without arguments: one Session method."""

    def __init__(self, name, method, doc):
        self.__doc__ = "ckpt %s: %s" % (name, doc)
        self.method = method
        super().__init__("ckpt " + name, gdb.COMMAND_RUNNING)

    def invoke(self, arg, from_tty):
        if arg.strip():
            raise CkptError("ckpt: %s takes no argument (%r)" %
                            (self.method.__name__.replace("_", "-"), arg))
        self.method()


class CkptAuto(gdb.Command):
    """ckpt auto [hits K] [seconds T] [max M]: snapshot every K breakpoint
stops, or at the first stop T seconds after the last snapshot, keeping at
most M (older ones thinned out logarithmically); 0: off."""

    def __init__(self):
        super().__init__("ckpt auto", gdb.COMMAND_RUNNING)

    def invoke(self, arg, from_tty):
        words = arg.split()
        if len(words) % 2:
            raise CkptError("ckpt auto: hits K | seconds T | max M")
        for key, val in zip(words[::2], words[1::2]):
            if key not in ("hits", "seconds", "max") or not val.isdigit():
                raise CkptError("ckpt auto: %s %s: expected hits K, "
                                "seconds T or max M" % (key, val))
            if key == "hits":
                SESSION.auto_hits = int(val)
            elif key == "seconds":
                SESSION.auto_seconds = int(val)
            else:
                SESSION.auto_max = max(2, int(val))
        print("ckpt: a snapshot every %d stop(s) and after %d s, at most "
              "%d kept" % (SESSION.auto_hits, SESSION.auto_seconds,
                          SESSION.auto_max))


for cls in (CkptCommand, CkptRun, CkptSnapshot, CkptSnapshots, CkptRestore,
            CkptReverseContinue, CkptReverseWatch, CkptAuto):
    cls()
SessionCommand("reverse-step", SESSION.reverse_step,
               "back to the previous line step (into the last line of a "
               "function that returned since).")
SessionCommand("reverse-next", SESSION.reverse_next,
               "back to the previous line of this function (over calls); "
               "at its first line, to the caller's line.")
class CkptBisect(gdb.Command):
    """ckpt bisect EXPR: the first moment EXPR, true at the first snapshot,
is false: a binary search over the stops seen, then the change watched."""

    def __init__(self):
        super().__init__("ckpt bisect", gdb.COMMAND_RUNNING)

    def invoke(self, arg, from_tty):
        if not arg.strip():
            raise CkptError("ckpt bisect: give a condition")
        SESSION.bisect(arg)


CkptBisect()
SessionCommand("reverse-finish", SESSION.reverse_finish,
               "back to the caller's line, before the call.")
gdb.events.cont.connect(note_hit_counts)
gdb.events.stop.connect(SESSION.on_stop)
gdb.events.gdb_exiting.connect(lambda e: SESSION.cleanup())
