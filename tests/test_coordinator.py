# SPDX-License-Identifier: LGPL-2.1-or-later
"""ckpt_coordinator, ckpt_command and ckpt_launch, tested against fake
processes that speak the protocol of include/ckpt/protocol.h from Python.

Build first: `make` from the repository root. Every test uses its own
coordinator address in a fresh temporary directory and kills what it
started; every wait has a timeout.
"""

import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "security"))
import ckpt_wire as wire  # noqa: E402
BIN = os.path.join(ROOT, "build", "bin")
COORDINATOR = os.path.join(BIN, "ckpt_coordinator")
COMMAND = os.path.join(BIN, "ckpt_command")
LAUNCH = os.path.join(BIN, "ckpt_launch")
LIBCKPT = os.path.join(ROOT, "build", "lib", "ckpt", "libckpt.so")

pytestmark = pytest.mark.skipif(
    not all(os.access(p, os.X_OK) for p in (COORDINATOR, COMMAND, LAUNCH)),
    reason="build the tools first: make")

# --- the protocol, as in include/ckpt/protocol.h -------------------------

# the framing and the structs version 2 shares with version 1 (what a
# libckpt of either speaks on a Unix socket): tests/security/ckpt_wire.py
from ckpt_wire import (MAGIC, HEADER, WELCOME, DO_CHECKPOINT,  # noqa: E402
                       RESULT, CMD, CMD_REPLY, MSG_HELLO, MSG_SUSPENDED,
                       MSG_WRITTEN, MSG_DURABLE, MSG_FAILED, MSG_SYNCED,
                       MSG_UNRESTORED, MSG_WELCOME, MSG_DO_SUSPEND,
                       MSG_DO_WRITE, MSG_DO_ABORT, MSG_DO_KILL,
                       MSG_DO_COMMIT, MSG_DO_RESUME, MSG_CMD, MSG_CMD_REPLY,
                       CMD_CHECKPOINT, CMD_STATUS, CMD_LIST, CMD_INTERVAL,
                       CMD_KILL, CMD_QUIT, HELLO_F_RESUME_BARRIER)

VERSION = 1     # these fakes speak version 1: no computation id in HELLO
HELLO = struct.Struct("<iiiIQ64s64s64s33s7s")
HELLO_F_RESTARTED, HELLO_F_ACCEL = 1, 2
HELLO_F_IMAGE_GENERATION = 8
WELCOME_F_UNRESTORED = 1

TIMEOUT = 10.0


def test_struct_sizes_match_header():
    assert (HEADER.size, HELLO.size, WELCOME.size, DO_CHECKPOINT.size,
            RESULT.size, CMD.size, CMD_REPLY.size) == \
        (16, 256, 16, 4104, 4624, 48, 8)


def send_msg(sock, mtype, payload=b""):
    if isinstance(sock, wire.Conn):     # authenticated TCP: MAC framed
        sock.send(mtype, payload)
        return
    sock.sendall(HEADER.pack(MAGIC, VERSION, mtype, len(payload), 0) +
                 payload)


recv_exact = wire.recv_exact


def recv_msg(sock):
    if isinstance(sock, wire.Conn):
        return sock.recv()
    magic, version, mtype, length, _ = HEADER.unpack(
        recv_exact(sock, HEADER.size))
    assert magic == MAGIC and version == VERSION
    return mtype, recv_exact(sock, length)


def cstr(b):
    return b.split(b"\0", 1)[0].decode()


def is_tcp(addr):
    return ":" in addr and not addr.startswith("/")


def connect(addr, timeout=TIMEOUT, secret=b""):
    """With a secret, a TCP connection runs the handshake of
    docs/protocol.md, "Authentication" (the secret never travels) and
    is a wire.Conn, whose messages carry their MACs."""
    if is_tcp(addr):
        host, port = addr.rsplit(":", 1)
        sock = socket.create_connection((host, int(port)), timeout=timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if secret:
            conn = wire.Conn(sock)
            conn.client_handshake(secret)
            return conn
    else:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        sock.connect(addr)
    return sock


def command(addr, cmd, arg=0, secret=b"", timeout=TIMEOUT):
    """One command through the protocol directly: (status, text)."""
    with connect(addr, timeout, secret) as sock:
        send_msg(sock, MSG_CMD, CMD.pack(cmd, arg, b"", b""))
        mtype, payload = recv_msg(sock)
    assert mtype == MSG_CMD_REPLY
    status, text_len = CMD_REPLY.unpack_from(payload)
    return status, payload[CMD_REPLY.size:CMD_REPLY.size + text_len]\
        .rstrip(b"\0").decode()


class FakeProcess:
    """A process as libckpt would be: HELLO, then answers the round.

    behaviour: "ok", "fail_suspend", "fail_write", "disconnect_suspend",
    "ignore_kill", "slow_suspend" (answers after `delay` seconds),
    "stale_first" (sends a wrong-generation SUSPENDED before the real one),
    "two_phase" (as libckpt: WRITTEN, SYNCED, then DURABLE on DO_COMMIT);
    "barrier" (as libckpt today, with flags=HELLO_F_RESUME_BARRIER: waits
    `delay` s, WRITTEN, then SYNCED only on DO_RESUME, DURABLE on
    DO_COMMIT); "fail_write" waits `delay` seconds before it fails.
    """

    def __init__(self, addr, vpid, program="fakeapp", behaviour="ok",
                 flags=0, generation=0, secret=b"", delay=0.0,
                 computation_id=0, unrestored="", hostname=b"testhost",
                 real_pid=None, sock=None, serve=True):
        self.vpid = vpid
        self.program = program
        self.behaviour = behaviour
        self.delay = delay
        self.unrestored = unrestored
        self.received = []
        self.generations = []
        self.killed = threading.Event()
        self.closed = threading.Event()
        # sock: connected by the process it speaks for (its SO_PEERCRED)
        self.sock = sock or connect(addr, secret=secret)
        hello = HELLO.pack(real_pid or os.getpid(), vpid, 1, flags,
                           generation, program.encode(), b"uid-%d" % vpid,
                           hostname, b"", b"")
        # appended field: the computation it belonged to
        hello += struct.pack("<Q", computation_id)
        send_msg(self.sock, MSG_HELLO, hello)
        if serve:
            self.serve()

    def serve(self):
        """As libckpt once its HELLO is sent (and the program runs):
        WELCOME, then the rounds, in a thread."""
        mtype, payload = recv_msg(self.sock)
        assert mtype == MSG_WELCOME
        self.computation_id, self.interval_s, self.welcome_flags = \
            WELCOME.unpack_from(payload)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def result(self, mtype, generation, path="", error=0, message=""):
        send_msg(self.sock, mtype,
                 RESULT.pack(generation, error, 0, path.encode(),
                             message.encode()))

    def _on_suspend(self, g):
        b = self.behaviour
        if b == "disconnect_suspend":
            self.sock.shutdown(socket.SHUT_RDWR)
            return False
        if b == "fail_suspend":
            self.result(MSG_FAILED, g, error=13,
                        message="cannot suspend thread 7: injected")
            return True
        if b == "slow_suspend":
            time.sleep(self.delay)
        if b == "stale_first":
            self.result(MSG_SUSPENDED, g + 100)
        if self.unrestored and self.welcome_flags & WELCOME_F_UNRESTORED:
            text = self.unrestored.encode() + b"\0"
            send_msg(self.sock, MSG_UNRESTORED,
                     struct.pack("<QII", g, len(text), 0) + text)
        self.result(MSG_SUSPENDED, g)
        return True

    def _on_write(self, g):
        if self.behaviour == "fail_write":
            time.sleep(self.delay)
            self.result(MSG_FAILED, g, error=28,
                        message="write ckpt_%d.img: injected" % self.vpid)
            return
        path = "/fake/ckpt_%s_%d_gen%d.img" % (self.program, self.vpid, g)
        if self.behaviour == "barrier":
            time.sleep(self.delay)
            self.written_at = time.monotonic()
            self.written = (g, path)
            self.result(MSG_WRITTEN, g)
            return
        self.result(MSG_WRITTEN, g)
        if self.behaviour == "two_phase":
            self.synced = (g, path)
            self.result(MSG_SYNCED, g, path=path + ".tmp")
            return
        self.result(MSG_DURABLE, g, path=path)

    def _on_resume(self):
        self.resumed_at = time.monotonic()
        self.synced, self.written = self.written, None
        self.result(MSG_SYNCED, self.synced[0], path=self.synced[1] + ".tmp")

    def _on_commit(self):
        g, path = self.synced
        self.synced = None
        self.result(MSG_DURABLE, g, path=path)

    def _on_abort(self):
        held = getattr(self, "written", None) or getattr(self, "synced",
                                                         None)
        if held:   # as libckpt: image removed
            g, _ = held
            self.synced = self.written = None
            self.result(MSG_FAILED, g, error=125,
                        message="image discarded: the checkpoint failed "
                        "elsewhere")

    def _serve(self):
        self.sock.settimeout(120)
        try:
            while True:
                mtype, payload = recv_msg(self.sock)
                self.received.append(mtype)
                if mtype in (MSG_DO_SUSPEND, MSG_DO_WRITE):
                    # a newer coordinator appends fields: ignored
                    g, _ = DO_CHECKPOINT.unpack_from(payload)
                    self.generations.append(g)
                if mtype == MSG_DO_SUSPEND and not self._on_suspend(g):
                    break
                elif mtype == MSG_DO_WRITE:
                    self._on_write(g)
                elif mtype == MSG_DO_RESUME:
                    self._on_resume()
                elif mtype == MSG_DO_COMMIT:
                    self._on_commit()
                elif mtype == MSG_DO_ABORT:
                    self._on_abort()
                elif mtype == MSG_DO_KILL:
                    self.killed.set()
                    if self.behaviour != "ignore_kill":
                        break
        except (OSError, ConnectionResetError, AssertionError):
            pass
        finally:
            self.sock.close()
            self.closed.set()

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.closed.wait(TIMEOUT)


def wait_for(pred, timeout=TIMEOUT, step=0.01):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(step)
    return pred()


def run(args, env=None, timeout=60, **kw):
    return subprocess.run(args, env=env, timeout=timeout,
                          capture_output=True, text=True, **kw)


class Coordinator:
    def __init__(self, addr, env, args=(), log=None, start_timeout=5,
                 **popen_kw):
        self.addr = addr
        self.log = log
        self.proc = subprocess.Popen(
            [COORDINATOR, "--coord", addr, *args], env=env,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=open(log, "w") if log else subprocess.DEVNULL,
            **popen_kw)
        assert wait_for(self.answers, start_timeout), \
            "coordinator did not start"

    def answers(self):
        try:
            connect(self.addr, 1).close()
            return True
        except OSError:
            return False

    def logtext(self):
        with open(self.log) as f:
            return f.read()

    def wait_exit(self, timeout=TIMEOUT):
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            if self.wait_exit(5) is None:
                self.proc.kill()
                self.proc.wait(5)


@pytest.fixture
def env():
    # short path: Unix socket paths are limited to 107 bytes
    d = tempfile.mkdtemp(prefix="ckc", dir="/tmp")
    e = dict(os.environ)
    e["CKPT_COORD"] = os.path.join(d, "coord.sock")
    e["CKPT_DIR"] = d
    e["HOME"] = d
    e.pop("LD_PRELOAD", None)
    e["TESTDIR"] = d
    yield e
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def coord(env):
    started = []

    def start(*args, addr=None):
        c = Coordinator(addr or env["CKPT_COORD"], env, args,
                        log=os.path.join(env["TESTDIR"],
                                         "coord%d.log" % len(started)))
        started.append(c)
        return c
    yield start
    for c in started:
        c.stop()


@pytest.fixture
def fakes():
    made = []

    def make(*args, **kw):
        p = FakeProcess(*args, **kw)
        made.append(p)
        return p
    yield make
    for p in made:
        p.close()


# --- the tools' basics ---------------------------------------------------

@pytest.mark.time_limit(60)
@pytest.mark.parametrize("tool", [COORDINATOR, COMMAND, LAUNCH])
def test_help_and_version(tool):
    r = run([tool, "--help"])
    assert r.returncode == 0 and "Usage: " + os.path.basename(tool) in r.stdout
    r = run([tool, "--version"])
    assert r.returncode == 0 and "(ckpt) " in r.stdout


@pytest.mark.time_limit(60)
def test_bad_usage(env):
    r = run([COMMAND], env=env)
    assert r.returncode == 2 and "no command given" in r.stderr
    r = run([COMMAND, "--status", "--list"], env=env)
    assert r.returncode == 2 and "exactly one command" in r.stderr
    r = run([COMMAND, "--interval", "soon"], env=env)
    assert r.returncode == 2 and "bad interval 'soon'" in r.stderr
    r = run([COORDINATOR, "-i", "-3"], env=env)
    assert r.returncode == 2 and "bad interval" in r.stderr


@pytest.mark.time_limit(60)
def test_command_without_coordinator(env):
    r = run([COMMAND, "--status"], env=env)
    assert r.returncode == 1
    assert r.stderr.startswith("ckpt_command: no coordinator at %s: " %
                               env["CKPT_COORD"])
    assert r.stderr.count("\n") == 1


@pytest.mark.time_limit(60)
def test_status_and_list(env, coord, fakes):
    c = coord()
    r = run([COMMAND, "--status"], env=env)
    assert r.returncode == 0, r.stderr
    assert "coordinator: %s" % env["CKPT_COORD"] in r.stdout
    assert "processes: 0" in r.stdout and "interval: off" in r.stdout
    assert "last checkpoint: none" in r.stdout and "round: idle" in r.stdout

    fakes(c.addr, 40001, program="alpha", flags=HELLO_F_ACCEL)
    fakes(c.addr, 40002, program="beta", flags=HELLO_F_RESTARTED)
    r = run([COMMAND, "--status"], env=env)
    assert "processes: 2" in r.stdout
    assert "alpha (vpid 40001" in r.stdout and \
        "memory with the ckpt_accel kernel module" in r.stdout
    assert "beta (vpid 40002" in r.stdout and \
        "through /proc (no ckpt_accel kernel module)" in r.stdout
    assert "accel=" not in r.stdout

    r = run([COMMAND, "--list"], env=env)
    assert r.returncode == 0
    lines = sorted(r.stdout.splitlines())
    assert len(lines) == 2
    assert lines[0] == ("vpid=40001 pid=%d host=testhost program=alpha "
                        "id=uid-40001 restarted=no" % os.getpid())
    assert lines[1].endswith("program=beta id=uid-40002 restarted=yes")


@pytest.mark.time_limit(60)
def test_checkpoint_finds_a_process_whose_hello_waits_unread(env, coord,
                                                            fakes):
    """libckpt sends HELLO and lets the program run without waiting for
    WELCOME: a launched program may already answer its clients while its
    connection still waits in the listener's queue, its HELLO unread. A
    checkpoint the coordinator takes up then must count it. Made certain
    here: with the coordinator stopped (SIGSTOP), a process connects and
    says HELLO, and a command connection accepted before asks for the
    checkpoint; the coordinator, continued, reads the request first (it
    accepts after reading its connections). It found no process."""
    c = coord()
    cmd_sock = connect(c.addr)
    send_msg(cmd_sock, MSG_CMD, CMD.pack(CMD_STATUS, 0, b"", b""))
    assert recv_msg(cmd_sock)[0] == MSG_CMD_REPLY   # accepted, a command
    os.kill(c.proc.pid, signal.SIGSTOP)
    try:
        p = fakes(c.addr, 40011, program="early", serve=False)
        send_msg(cmd_sock, MSG_CMD, CMD.pack(CMD_CHECKPOINT, 0, b"", b""))
    finally:
        os.kill(c.proc.pid, signal.SIGCONT)
    p.serve()
    mtype, payload = recv_msg(cmd_sock)
    assert mtype == MSG_CMD_REPLY
    status, text_len = CMD_REPLY.unpack_from(payload)
    text = payload[CMD_REPLY.size:CMD_REPLY.size + text_len]\
        .rstrip(b"\0").decode()
    assert status == 0, text
    assert "/fake/ckpt_early_40011_gen1.img" in text, text
    assert p.generations == [1, 1], p.generations
    cmd_sock.close()


@pytest.mark.time_limit(60)
def test_interval_command(env, coord, fakes):
    coord()
    r = run([COMMAND, "--interval", "42"], env=env)
    assert r.returncode == 0 and "interval: 42 s" in r.stdout
    assert "interval: 42 s" in run([COMMAND, "-s"], env=env).stdout
    p = fakes(env["CKPT_COORD"], 1)
    assert p.interval_s == 42          # WELCOME carries it
    r = run([COMMAND, "--interval", "0"], env=env)
    assert "interval: off" in r.stdout


@pytest.mark.time_limit(60)
def test_second_coordinator_refused(env, coord):
    coord()
    r = run([COORDINATOR, "--coord", env["CKPT_COORD"]], env=env,
            timeout=20)
    assert r.returncode == 1
    assert "another coordinator already" in r.stderr
    assert env["CKPT_COORD"] in r.stderr
    assert run([COMMAND, "--status"], env=env).returncode == 0


@pytest.mark.time_limit(60)
def test_stale_socket_replaced(env, coord):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(env["CKPT_COORD"])
    s.close()                          # leaves a dead socket file behind
    c = coord()
    assert "replaced stale socket" in c.logtext()
    assert run([COMMAND, "--status"], env=env).returncode == 0


@pytest.mark.time_limit(60)
def test_refuses_to_replace_a_regular_file(env):
    with open(env["CKPT_COORD"], "w") as f:
        f.write("not a socket")
    r = run([COORDINATOR, "--coord", env["CKPT_COORD"]], env=env)
    assert r.returncode == 1 and "is not a socket" in r.stderr


@pytest.mark.time_limit(60)
def test_socket_file_removed_on_exit(env, coord):
    c = coord()
    assert os.path.exists(c.addr)
    c.proc.terminate()
    assert c.wait_exit() == 0
    assert not os.path.exists(c.addr)


OTHER_UID_CLIENT = r"""
import socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(10)
s.connect(sys.argv[1])
hello = struct.pack("<iiiIQ64s64s64s33s7s", 1, 1, 0, 0, 0, b"intruder",
                    b"x", b"h", b"", b"")
try:
    s.sendall(struct.pack("<IHHII", 0x434B5054, 1, 1, len(hello), 0) + hello)
    data = s.recv(64)
except OSError as e:
    print("reset", e)
    sys.exit(0)
print("got", len(data))
sys.exit(0 if not data else 3)
"""


@pytest.mark.time_limit(60)
@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"),
                    reason="needs root and setpriv to act as another uid")
def test_other_uid_rejected(env, coord):
    c = coord()
    os.chmod(env["TESTDIR"], 0o755)
    os.chmod(c.addr, 0o666)            # let uid 65534 reach SO_PEERCRED
    r = run(["setpriv", "--reuid", "65534", "--regid", "65534",
             "--clear-groups", "/usr/bin/python3", "-c", OTHER_UID_CLIENT,
             c.addr], env=env, timeout=30)
    assert r.returncode == 0, r.stdout + r.stderr
    assert wait_for(lambda: "rejected a connection from uid 65534"
                    in c.logtext())
    assert "processes: 0" in run([COMMAND, "--status"], env=env).stdout


@pytest.mark.time_limit(60)
def test_refuses_insecure_default_dir(env):
    e = dict(env)
    del e["CKPT_COORD"]
    e["XDG_RUNTIME_DIR"] = env["TESTDIR"]
    d = os.path.join(env["TESTDIR"], "ckpt-%d" % os.geteuid())
    os.mkdir(d)
    os.chmod(d, 0o777)
    r = run([COMMAND, "--status"], env=e)
    assert r.returncode == 1
    assert "refusing directory %s: writable by group or others" % d \
        in r.stderr
    os.chmod(d, 0o700)
    r = run([COMMAND, "--status"], env=e)
    assert "no coordinator at %s/coordinator.sock" % d in r.stderr


# --- lifetime -----------------------------------------------------------

@pytest.mark.time_limit(60)
def test_exits_when_last_process_leaves(env, coord, fakes):
    c = coord()
    a = fakes(c.addr, 1)
    b = fakes(c.addr, 2)
    a.close()
    time.sleep(0.2)
    assert c.proc.poll() is None       # one is left
    b.close()
    assert c.wait_exit() == 0
    assert "the last process left" in c.logtext()
    assert not os.path.exists(c.addr)


@pytest.mark.time_limit(60)
def test_daemon_stays_without_processes(env):
    r = run([COORDINATOR, "--daemon"], env=env, timeout=20)
    assert r.returncode == 0 and "in the background (pid " in r.stdout
    pid = int(r.stdout.split("(pid ")[1].split(")")[0])
    try:
        p = FakeProcess(env["CKPT_COORD"], 5)
        p.close()
        time.sleep(0.3)
        r = run([COMMAND, "--status"], env=env)
        assert r.returncode == 0 and "(pid %d," % pid in r.stdout
        r = run([COMMAND, "--quit"], env=env)
        assert r.returncode == 0
        assert wait_for(lambda: not os.path.exists("/proc/%d" % pid) or
                        open("/proc/%d/stat" % pid).read().split()[2]
                        == "Z")
    finally:
        if os.path.exists("/proc/%d" % pid):
            os.kill(pid, 9)


@pytest.mark.time_limit(60)
def test_quit_stops_coordinator_and_processes(env, coord, fakes):
    c = coord()
    p = fakes(c.addr, 7)
    r = run([COMMAND, "--quit"], env=env)
    assert r.returncode == 0 and "coordinator exiting" in r.stdout
    assert p.killed.is_set()
    assert c.wait_exit() == 0


@pytest.mark.time_limit(60)
def test_kill(env, coord, fakes):
    c = coord()
    ps = [fakes(c.addr, v) for v in (11, 12, 13)]
    r = run([COMMAND, "--kill"], env=env)
    assert r.returncode == 0 and "all processes gone" in r.stdout
    assert all(p.killed.is_set() and p.closed.wait(TIMEOUT) for p in ps)
    assert c.wait_exit() == 0          # the last process left


@pytest.mark.time_limit(60)
def test_kill_reports_survivor(env, coord, fakes):
    c = coord()
    fakes(c.addr, 21)
    fakes(c.addr, 22, program="stubborn", behaviour="ignore_kill")
    t0 = time.monotonic()
    r = run([COMMAND, "--kill"], env=env)
    took = time.monotonic() - t0
    assert r.returncode == 1
    assert "stubborn (vpid 22, pid %d, host testhost): still connected " \
        "10 s after DO_KILL" % os.getpid() in r.stderr
    assert 9 < took < 30
    assert c.proc.poll() is None


@pytest.mark.time_limit(60)
def test_new_connection_must_speak(env, coord):
    c = coord()
    s = connect(c.addr)
    s.settimeout(15)
    assert s.recv(1) == b""            # closed after 5 s of silence
    s.close()
    assert "sent nothing within 5 s" in c.logtext()


@pytest.mark.time_limit(60)
def test_bad_magic_closes_connection(env, coord):
    c = coord()
    s = connect(c.addr)
    s.sendall(b"GET / HTTP/1.0\r\n\r\n")
    assert s.recv(1) == b""
    s.close()
    assert "bad message header" in c.logtext()


# --- ckpt_launch --------------------------------------------------------

@pytest.mark.time_limit(60)
def test_launch_missing_program(env):
    r = run([LAUNCH, "/nonexistent/program"], env=env)
    assert r.returncode == 127
    assert "ckpt_launch: /nonexistent/program: " in r.stderr
    r = run([LAUNCH, "no-such-program-xyz"], env=env)
    assert r.returncode == 127 and "command not found" in r.stderr
    # and no coordinator was started for it
    assert not os.path.exists(env["CKPT_COORD"])


@pytest.mark.time_limit(60)
def test_launch_bad_ckptdir(env):
    afile = os.path.join(env["TESTDIR"], "afile")
    open(afile, "w").close()
    bad = os.path.join(afile, "dir")
    r = run([LAUNCH, "--ckptdir", bad, "true"], env=env)
    assert r.returncode == 1
    assert "checkpoint directory %s: Not a directory" % bad in r.stderr, \
        r.stderr
    r = run([LAUNCH, "--ckptdir", afile, "true"], env=env)
    assert r.returncode == 1
    assert "checkpoint directory %s: not a directory" % afile in r.stderr


@pytest.mark.time_limit(60)
def test_launch_makes_a_missing_ckptdir(env):
    new = os.path.join(env["TESTDIR"], "new", "sub")
    r = run([LAUNCH, "--ckptdir", new, "true"], env=env)
    assert r.returncode == 0, r.stderr
    assert "made the checkpoint directory %s (mode 0700)" % new in r.stderr
    for d in (new, os.path.dirname(new)):
        assert os.stat(d).st_mode & 0o777 == 0o700, oct(os.stat(d).st_mode)


@pytest.fixture
def envprinter(env):
    """A static program: LD_PRELOAD does not touch it, so these tests do
    not depend on libckpt.so working."""
    src = os.path.join(env["TESTDIR"], "printenv.c")
    exe = os.path.join(env["TESTDIR"], "printenv")
    with open(src, "w") as f:
        f.write('#include <stdio.h>\n#include <stdlib.h>\n'
                '#include <dirent.h>\n'
                'int main(int c, char **v) { const char *n[] = {'
                '"CKPT_COORD", "CKPT_DIR", "LD_PRELOAD"}; int fds = 0;\n'
                'for (int i = 0; i < 3; i++) printf("%s=%s\\n", n[i], '
                'getenv(n[i]) ? getenv(n[i]) : "");\n'
                'DIR *d = opendir("/proc/self/fd"); while (readdir(d)) '
                'fds++; printf("fds=%d\\n", fds - 3);\n'
                'printf("args=%d %s\\n", c, c > 1 ? v[1] : ""); '
                'return 7; }\n')
    r = run(["cc", "-static", "-O", "-o", exe, src])
    if r.returncode:
        pytest.skip("cannot build a static program: " + r.stderr)
    return exe


def coordinator_pid(env):
    r = run([COMMAND, "--status"], env=env)
    assert r.returncode == 0, r.stderr
    return int(r.stdout.split("(pid ")[1].split(",")[0])


def stop_spawned(env):
    try:
        pid = coordinator_pid(env)
    except (AssertionError, IndexError):
        return
    run([COMMAND, "--quit"], env=env)
    if not wait_for(lambda: not os.path.exists("/proc/%d" % pid)):
        os.kill(pid, 9)


@pytest.mark.time_limit(60)
@pytest.mark.skipif(not os.path.exists(LIBCKPT), reason="no libckpt.so")
def test_launch_spawns_coordinator_and_sets_env(env, envprinter):
    work = os.path.join(env["TESTDIR"], "images")
    os.mkdir(work)
    e = dict(env)
    e["LD_PRELOAD"] = "/lib/other.so"
    try:
        r = run([LAUNCH, "--ckptdir", work, "-i", "33", "--", envprinter,
                 "--an-option-for-the-program"], env=e)
        assert r.returncode == 7, r.stderr
        out = dict(l.split("=", 1) for l in r.stdout.splitlines())
        assert out["CKPT_COORD"] == env["CKPT_COORD"]
        assert out["CKPT_DIR"] == work
        assert out["LD_PRELOAD"] == os.path.realpath(LIBCKPT) + \
            " /lib/other.so"
        assert out["fds"] == "3", "the probe connection leaked into exec"
        assert out["args"] == "2 --an-option-for-the-program"
        # the spawned coordinator runs detached, with the interval
        st = run([COMMAND, "--status"], env=env)
        assert "interval: 33 s" in st.stdout
        # a second launch reuses it and sets the interval by command
        r = run([LAUNCH, "-i", "44", envprinter], env=env,
                cwd=env["TESTDIR"])
        assert r.returncode == 7
        assert "CKPT_DIR=%s\n" % env["TESTDIR"] in r.stdout
        assert "interval: 44 s" in run([COMMAND, "-s"], env=env).stdout
    finally:
        stop_spawned(env)


def coordinators_on(addr):
    found = []
    for pid in os.listdir("/proc"):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if argv[0].endswith(b"ckpt_coordinator") and addr.encode() in argv:
            found.append(int(pid))
    return found


@pytest.mark.time_limit(60)
@pytest.mark.skipif(not os.path.exists(LIBCKPT), reason="no libckpt.so")
def test_parallel_launches_share_one_coordinator(env, envprinter):
    try:
        procs = [subprocess.Popen([LAUNCH, envprinter], env=env,
                                  stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True)
                 for _ in range(6)]
        for p in procs:
            _, err = p.communicate(timeout=30)
            assert p.returncode == 7, err
        assert wait_for(lambda: len(coordinators_on(env["CKPT_COORD"]))
                        == 1)
        assert coordinators_on(env["CKPT_COORD"]) == [coordinator_pid(env)]
    finally:
        stop_spawned(env)


@pytest.mark.time_limit(60)
@pytest.mark.skipif(not os.path.exists(LIBCKPT), reason="no libckpt.so")
def test_launch_relative_coord_path_made_absolute(env, envprinter):
    try:
        r = run([LAUNCH, "--coord", "rel.sock", envprinter], env=env,
                cwd=env["TESTDIR"])
        assert r.returncode == 7, r.stderr
        assert "CKPT_COORD=%s/rel.sock\n" % env["TESTDIR"] in r.stdout
    finally:
        e = dict(env)
        e["CKPT_COORD"] = os.path.join(env["TESTDIR"], "rel.sock")
        stop_spawned(e)


# --- checkpoint rounds --------------------------------------------------

def checkpoint(env):
    return run([COMMAND, "--checkpoint"], env=env, timeout=120)


@pytest.mark.time_limit(120)
def test_checkpoint_round(env, coord, fakes):
    c = coord()
    ps = [fakes(c.addr, 100 + i, program="app%d" % i) for i in range(3)]
    r = checkpoint(env)
    assert r.returncode == 0, r.stderr
    paths = sorted(r.stdout.splitlines())
    assert paths == ["/fake/ckpt_app%d_%d_gen1.img" % (i, 100 + i)
                     for i in range(3)]
    for p in ps:
        assert p.received == [MSG_DO_SUSPEND, MSG_DO_WRITE]
        assert p.generations == [1, 1]
    st = run([COMMAND, "--status"], env=env).stdout
    assert "last checkpoint: generation 1, 3 process(es)" in st

    # latency of the round itself, without starting ckpt_command
    times = []
    for _ in range(20):
        t0 = time.perf_counter()
        status, text = command(c.addr, CMD_CHECKPOINT)
        times.append((time.perf_counter() - t0) * 1000)
        assert status == 0 and len(text.splitlines()) == 3
    times.sort()
    print("\ncheckpoint round trip, 3 fake processes: median %.2f ms, "
          "max %.2f ms" % (times[len(times) // 2], times[-1]))
    assert times[len(times) // 2] < 200
    assert ps[0].generations[-1] == 21


@pytest.mark.time_limit(60)
def test_checkpoint_without_processes(env, coord):
    coord()
    r = checkpoint(env)
    assert r.returncode == 1 and "no processes are connected" in r.stderr


@pytest.mark.time_limit(60)
def test_failed_suspend_aborts_others(env, coord, fakes):
    c = coord()
    good = fakes(c.addr, 201, program="good")
    bad = fakes(c.addr, 202, program="badapp", behaviour="fail_suspend")
    r = checkpoint(env)
    assert r.returncode == 1
    lines = r.stderr.splitlines()
    assert lines == ["badapp (vpid 202, pid %d, host testhost): checkpoint "
                     "1 failed: cannot suspend thread 7: injected "
                     "(Permission denied)" % os.getpid()]
    assert wait_for(lambda: MSG_DO_ABORT in good.received)
    assert MSG_DO_WRITE not in good.received
    assert MSG_DO_WRITE not in bad.received
    # the next round works once the failure is gone
    bad.behaviour = "ok"
    r = checkpoint(env)
    assert r.returncode == 0 and len(r.stdout.splitlines()) == 2
    assert "gen2.img" in r.stdout
    st = run([COMMAND, "--status"], env=env).stdout
    assert "last checkpoint: generation 2" in st


@pytest.mark.time_limit(60)
def test_failed_write(env, coord, fakes):
    c = coord()
    fakes(c.addr, 301, program="ok1")
    fakes(c.addr, 302, program="full", behaviour="fail_write")
    fakes(c.addr, 303, program="full2", behaviour="fail_write")
    r = checkpoint(env)
    assert r.returncode == 1
    lines = sorted(r.stderr.splitlines())
    assert len(lines) == 2, r.stderr   # one line per failed process
    assert lines[0].startswith("full (vpid 302, pid ")
    assert "write ckpt_302.img: injected (No space left on device)" \
        in lines[0]
    assert lines[1].startswith("full2 (vpid 303")


@pytest.mark.time_limit(60)
def test_disconnect_mid_round(env, coord, fakes):
    c = coord()
    good = fakes(c.addr, 401, program="stays")
    fakes(c.addr, 402, program="leaver", behaviour="disconnect_suspend")
    r = checkpoint(env)
    assert r.returncode == 1
    assert "leaver (vpid 402" in r.stderr
    assert "disconnected while suspending" in r.stderr
    assert wait_for(lambda: MSG_DO_ABORT in good.received)
    assert c.proc.poll() is None       # "stays" is still there
    r = checkpoint(env)
    assert r.returncode == 0 and r.stdout.count("\n") == 1


@pytest.mark.time_limit(60)
def test_stale_generation_ignored(env, coord, fakes):
    c = coord()
    fakes(c.addr, 501, behaviour="stale_first")
    fakes(c.addr, 502)
    r = checkpoint(env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("\n") == 2


@pytest.mark.time_limit(60)
def test_generation_continues_after_restart(env, coord, fakes):
    """A process restarted from an image of checkpoint 41 makes the next
    checkpoint 42, and the coordinator takes the computation id of the
    restarted images as its own."""
    c = coord()
    fakes(c.addr, 601, flags=HELLO_F_RESTARTED | HELLO_F_IMAGE_GENERATION,
          generation=41, computation_id=0x1234abcd5678ef00)
    r = checkpoint(env)
    assert r.returncode == 0 and "gen42.img" in r.stdout
    later = fakes(c.addr, 602)
    assert later.computation_id == 0x1234abcd5678ef00
    r = run([COMMAND, "--status"], env=env)
    assert "computation 1234abcd5678ef00" in r.stdout, r.stdout


@pytest.mark.time_limit(60)
def test_generation_after_restart_of_older_libckpt(env, coord, fakes):
    """An older libckpt says 41 for an image of checkpoint 42 (its memory
    was saved before that round committed): 43 follows, never 42 again."""
    c = coord()
    fakes(c.addr, 603, flags=HELLO_F_RESTARTED, generation=41)
    r = checkpoint(env)
    assert r.returncode == 0 and "gen43.img" in r.stdout


@pytest.mark.time_limit(60)
def test_unrestored_reaches_the_command(env, coord, fakes):
    """What a process says its restart will not restore reaches
    ckpt_command's stderr, one line each, named by process; the
    checkpoint succeeds."""
    c = coord()
    fakes(c.addr, 611, program="server",
          unrestored="fd 5: an eventfd: not restored yet\nfd 6: a UDP "
                     "socket: not restored yet\n")
    fakes(c.addr, 612, program="quiet")
    r = checkpoint(env)
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.split()) == 2, r.stdout
    lines = r.stderr.splitlines()
    assert lines == [
        "warning: server (vpid 611, pid %d, host testhost): fd 5: an "
        "eventfd: not restored yet" % os.getpid(),
        "warning: server (vpid 611, pid %d, host testhost): fd 6: a UDP "
        "socket: not restored yet" % os.getpid()], r.stderr


@pytest.mark.time_limit(60)
def test_concurrent_checkpoints_are_queued(env, coord, fakes):
    c = coord()
    slow = fakes(c.addr, 701, behaviour="slow_suspend", delay=0.5)
    socks = [connect(c.addr) for _ in range(3)]
    try:
        send_msg(socks[0], MSG_CMD, CMD.pack(CMD_CHECKPOINT, 0, b"", b""))
        assert wait_for(lambda: slow.received)
        # these two arrive during round 1: they share round 2
        for s in socks[1:]:
            send_msg(s, MSG_CMD, CMD.pack(CMD_CHECKPOINT, 0, b"", b""))
        texts = []
        for s in socks:
            mtype, payload = recv_msg(s)
            status, _ = CMD_REPLY.unpack_from(payload)
            assert mtype == MSG_CMD_REPLY and status == 0
            texts.append(payload[CMD_REPLY.size:].rstrip(b"\0").decode())
    finally:
        for s in socks:
            s.close()
    assert texts[0] == "/fake/ckpt_fakeapp_701_gen1.img\n"
    assert texts[1] == texts[2] == "/fake/ckpt_fakeapp_701_gen2.img\n"
    assert slow.generations == [1, 1, 2, 2]


@pytest.mark.time_limit(90)
def test_suspend_timeout(env, coord, fakes):
    c = coord()
    good = fakes(c.addr, 711, program="prompt")
    hung = fakes(c.addr, 712, program="hung", behaviour="slow_suspend",
                 delay=40)
    t0 = time.monotonic()
    r = checkpoint(env)
    took = time.monotonic() - t0
    assert r.returncode == 1
    assert r.stderr.splitlines() == [
        "hung (vpid 712, pid %d, host testhost): checkpoint 1 failed: "
        "stalled in the suspend phase: did not answer DO_SUSPEND within "
        "5.0 s (ckpt_coordinator --phase-timeout)" % os.getpid()]
    assert 4.9 < took < 20  # the default phase timeout, 5 s
    # the reply may come before the fake reads its DO_ABORT
    assert wait_for(lambda: MSG_DO_ABORT in good.received)
    assert "round: idle" in run([COMMAND, "-s"], env=env).stdout


@pytest.mark.time_limit(60)
def test_process_joining_while_suspending_joins_the_round(env, coord, fakes):
    """A process that connects while the round is still suspending (a
    child forked just before its parent stopped) is part of that round."""
    c = coord()
    slow = fakes(c.addr, 801, program="slow", behaviour="slow_suspend",
                 delay=1.0)
    cmd = subprocess.Popen([COMMAND, "--checkpoint"], env=env,
                           stdout=subprocess.PIPE, text=True)
    assert wait_for(lambda: slow.received)
    late = fakes(c.addr, 802, program="late")
    out, _ = cmd.communicate(timeout=60)
    assert cmd.returncode == 0
    assert sorted(out.splitlines()) == ["/fake/ckpt_late_802_gen1.img",
                                        "/fake/ckpt_slow_801_gen1.img"]
    assert late.received
    slow.behaviour = "ok"
    r = checkpoint(env)
    assert r.returncode == 0 and r.stdout.count("\n") == 2


@pytest.mark.time_limit(60)
def test_failed_round_commits_no_image(env, coord, fakes):
    """Two-phase commit: a process whose image is synced renames it only
    on DO_COMMIT, sent once every image is synced; when another process
    fails, it gets DO_ABORT instead, so every previous image stays."""
    c = coord()
    good = fakes(c.addr, 1001, program="good", behaviour="two_phase")
    bad = fakes(c.addr, 1002, program="bad", behaviour="fail_write",
                delay=0.5)
    r = checkpoint(env)
    assert r.returncode != 0 and "injected" in r.stderr, r.stderr
    # only the process that failed is reported; the discarded one is not
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert wait_for(lambda: good.received.count(MSG_DO_ABORT) == 1)
    assert MSG_DO_COMMIT not in good.received
    bad.behaviour = "two_phase"
    r = checkpoint(env)
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.split()) == ["/fake/ckpt_bad_1002_gen2.img",
                                        "/fake/ckpt_good_1001_gen2.img"]
    assert good.received.count(MSG_DO_COMMIT) == 1
    assert bad.received.count(MSG_DO_COMMIT) == 1


@pytest.mark.time_limit(60)
def test_resume_waits_for_every_image(env, coord, fakes):
    """Resume barrier: a process that has written its image stays stopped
    (no DO_RESUME) until every process has written its own, so memory or
    offsets it shares with a slower one cannot change while that one
    saves them; an older libckpt (no flag) never gets DO_RESUME."""
    c = coord()
    fast = fakes(c.addr, 1101, program="fast", behaviour="barrier",
                 flags=HELLO_F_RESUME_BARRIER)
    slow = fakes(c.addr, 1102, program="slow", behaviour="barrier",
                 flags=HELLO_F_RESUME_BARRIER, delay=0.7)
    old = fakes(c.addr, 1103, program="old", behaviour="two_phase")
    r = checkpoint(env)
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.split()) == 3, r.stdout
    assert fast.resumed_at >= slow.written_at
    assert fast.resumed_at - fast.written_at > 0.5
    assert MSG_DO_RESUME not in old.received
    # one process fails writing: the one waiting to resume is told to
    # discard its image (and so resumes) instead
    slow.behaviour, slow.delay = "fail_write", 0.5
    r = checkpoint(env)
    assert r.returncode != 0 and "injected" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert fast.received.count(MSG_DO_RESUME) == 1
    assert wait_for(lambda: fast.received.count(MSG_DO_ABORT) == 1)
    assert fast.written is None


@pytest.mark.time_limit(60)
def test_interval_checkpoints(env, coord, fakes):
    c = coord("-i", "1")
    p = fakes(c.addr, 901)
    assert wait_for(lambda: len(p.generations) >= 4, timeout=6)
    assert p.generations[:4] == [1, 1, 2, 2]


COUNTER = os.path.join(ROOT, "build", "tests", "apps", "counter")


@pytest.mark.time_limit(120)
@pytest.mark.skipif(not (os.path.exists(LIBCKPT) and os.path.exists(COUNTER)),
                    reason="needs libckpt.so and tests/apps/counter built")
def test_real_process_round_latency(env, coord):
    """End to end with the real libckpt: a small process checkpoints in
    well under 50 ms (asserted loosely: the machine is noisy)."""
    c = coord()
    app = subprocess.Popen([LAUNCH, COUNTER, "100000", "20"], env=env,
                           stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
    try:
        assert wait_for(lambda: "processes: 1" in
                        run([COMMAND, "-s"], env=env).stdout), \
            "the launched process did not join"
        times = []
        for _ in range(10):
            t0 = time.perf_counter()
            status, text = command(c.addr, CMD_CHECKPOINT, timeout=60)
            times.append((time.perf_counter() - t0) * 1000)
            assert status == 0, text
            assert os.path.exists(text.strip())
        times.sort()
        print("\ncheckpoint of a real small process: median %.1f ms, "
              "max %.1f ms" % (times[len(times) // 2], times[-1]))
        assert times[len(times) // 2] < 1000
        assert app.poll() is None
    finally:
        run([COMMAND, "--kill"], env=env)
        try:
            app.wait(10)
        except subprocess.TimeoutExpired:
            app.kill()
            app.wait(5)


# --- TCP ----------------------------------------------------------------

free_port = wire.free_port


@pytest.mark.time_limit(60)
def test_tcp_with_secret(env, coord):
    """The TCP handshake of docs/protocol.md, "Authentication" (more in
    tests/security): a client with the wrong secret is refused, one with
    the right one joins and is checkpointed."""
    import sys
    sys.path.insert(0, os.path.join(ROOT, "tests", "security"))
    import ckpt_wire as w

    addr = "127.0.0.1:%d" % free_port()
    e = dict(env)
    e["CKPT_COORD"] = addr
    c = coord(addr=addr)
    secret_file = os.path.join(env["HOME"], ".ckpt", "secret")
    assert oct(os.stat(secret_file).st_mode & 0o777) == "0o600"
    secret = open(secret_file).read().strip().encode()
    assert len(secret) == 32

    r = run([COMMAND, "--status"], env=e)
    assert r.returncode == 0 and "coordinator: %s" % addr in r.stdout
    r = run([COMMAND, "--coord", "localhost:%s" % addr.split(":")[1],
             "--list"], env=env)
    assert r.returncode == 0, r.stderr

    with w.connect_tcp(addr) as sock:
        conn = w.Conn(sock)
        with pytest.raises(AssertionError):
            conn.client_handshake(b"0" * 32)    # its proof fails ours
        conn.send(w.MSG_AUTH_RESPONSE, b"\0" * 32)
        with pytest.raises((ConnectionResetError, OSError)):
            conn.recv()
    assert "did not prove it knows the secret" in c.logtext()

    with w.connect_tcp(addr) as sock:
        conn = w.Conn(sock)
        conn.client_handshake(secret)
        conn.send(w.MSG_HELLO, w.hello(vpid=2, flags=0))
        assert conn.recv()[0] == w.MSG_WELCOME
        r = run([COMMAND, "--list"], env=e)
        assert r.returncode == 0 and "vpid=2" in r.stdout, r.stdout


@pytest.mark.time_limit(60)
def test_tcp_port_in_use(env):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    addr = "127.0.0.1:%d" % s.getsockname()[1]
    try:
        r = run([COORDINATOR, "--coord", addr], env=env, timeout=20)
        assert r.returncode == 1
        assert "already answers on %s" % addr in r.stderr
    finally:
        s.close()


# --- the C client library, used the way libckpt uses it ----------------

PROBE_C = r"""
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "ckpt/coord_client.h"

static int answer(int fd, uint16_t type, uint64_t g, const char *path)
{
	struct ckpt_msg_result r;

	memset(&r, 0, sizeof(r));
	r.generation = g;
	strcpy(r.path, path);
	return ckpt_msg_send(fd, type, &r, sizeof(r));
}

/* A too small buffer gives -EMSGSIZE and leaves the stream in step. */
static int check_msgsize(const char *addr)
{
	struct ckpt_msg_cmd cmd = { .cmd = CKPT_CMD_STATUS };
	char buf[4096];
	uint32_t len;
	int fd = ckpt_coord_connect(addr, 5000), t1, t2;

	if (fd < 0)
		return fd;
	ckpt_msg_send(fd, CKPT_MSG_CMD, &cmd, sizeof(cmd));
	t1 = ckpt_msg_recv(fd, buf, 8, &len, 5000);
	ckpt_msg_send(fd, CKPT_MSG_CMD, &cmd, sizeof(cmd));
	t2 = ckpt_msg_recv(fd, buf, sizeof(buf), &len, 5000);
	close(fd);
	return t1 == -EMSGSIZE && t2 == CKPT_MSG_CMD_REPLY ? 0 : -EPROTO;
}

int main(void)
{
	char addr[512], payload[8192];
	struct ckpt_msg_hello h;
	struct ckpt_msg_do_checkpoint *d = (void *)payload;
	uint32_t len;
	int fd, t;

	if (ckpt_coord_resolve_addr(NULL, addr, sizeof(addr)) < 0)
		return 10;
	fd = ckpt_coord_connect_or_spawn(addr, 5000);
	if (fd < 0) {
		printf("connect: %s\n", strerror(-fd));
		return 11;
	}
	memset(&h, 0, sizeof(h));
	h.real_pid = getpid();
	h.vpid = 777;
	strcpy(h.program, "probe");
	strcpy(h.hostname, "probehost");
	if (ckpt_msg_send(fd, CKPT_MSG_HELLO, &h, sizeof(h)) < 0)
		return 12;
	t = ckpt_msg_recv(fd, payload, sizeof(payload), &len, 5000);
	if (t != CKPT_MSG_WELCOME || len != sizeof(struct ckpt_msg_welcome))
		return 13;
	if (check_msgsize(addr) < 0)
		return 14;
	t = ckpt_msg_recv(fd, payload, sizeof(payload), &len, 50);
	printf("welcome %s\n", t == -ETIMEDOUT ? "timeout-ok" : "bad");
	fflush(stdout);
	for (;;) {
		t = ckpt_msg_recv(fd, payload, sizeof(payload), &len, 20000);
		if (t == CKPT_MSG_DO_SUSPEND)
			answer(fd, CKPT_MSG_SUSPENDED, d->generation, "");
		else if (t == CKPT_MSG_DO_WRITE) {
			answer(fd, CKPT_MSG_WRITTEN, d->generation, "");
			answer(fd, CKPT_MSG_DURABLE, d->generation,
			       "/c/probe.img");
		} else if (t == CKPT_MSG_DO_KILL) {
			return 0;
		} else {
			printf("unexpected %d\n", t);
			return 15;
		}
	}
}
"""


@pytest.mark.time_limit(90)
def test_c_client_library_spawns_and_serves(env):
    """connect_or_spawn from inside a shared library, as libckpt does:
    it finds PREFIX/bin/ckpt_coordinator from PREFIX/lib/ckpt/."""
    d = env["TESTDIR"]
    for sub in ("bin", "lib/ckpt", "app"):
        os.makedirs(os.path.join(d, sub))
    os.symlink(COORDINATOR, os.path.join(d, "bin", "ckpt_coordinator"))
    lib = os.path.join(d, "lib", "ckpt", "libclient.so")
    srcs = [os.path.join(ROOT, "protocol", f)
            for f in sorted(os.listdir(os.path.join(ROOT, "protocol")))
            if f.startswith("client") and f.endswith(".c")]
    r = run(["cc", "-shared", "-fPIC", "-O2", "-D_GNU_SOURCE",
             "-I" + os.path.join(ROOT, "include"), "-o", lib, *srcs])
    assert r.returncode == 0, r.stderr
    src = os.path.join(d, "probe.c")
    exe = os.path.join(d, "app", "probe")
    with open(src, "w") as f:
        f.write(PROBE_C)
    r = run(["cc", "-O2", "-I" + os.path.join(ROOT, "include"), "-o", exe,
             src, lib, "-Wl,-rpath," + os.path.dirname(lib)])
    assert r.returncode == 0, r.stderr

    e = dict(env)
    e["LD_PRELOAD"] = lib              # must not reach the coordinator
    probe = subprocess.Popen([exe], env=e, stdout=subprocess.PIPE, text=True)
    coord_pid = None
    try:
        assert probe.stdout.readline() == "welcome timeout-ok\n"
        coord_pid = coordinator_pid(env)
        stat = open("/proc/%d/stat" % coord_pid).read()
        assert int(stat.rsplit(")", 1)[1].split()[1]) != probe.pid
        assert b"LD_PRELOAD" not in \
            open("/proc/%d/environ" % coord_pid, "rb").read()
        r = checkpoint(env)
        assert r.returncode == 0 and r.stdout == "/c/probe.img\n", r.stderr
        r = run([COMMAND, "--kill"], env=env)
        assert r.returncode == 0
        assert probe.wait(10) == 0
        # it was the only process: the spawned coordinator goes too
        assert wait_for(lambda: not os.path.exists(env["CKPT_COORD"]))
        coord_pid = None
    finally:
        if probe.poll() is None:
            probe.kill()
        probe.wait(10)
        if coord_pid:
            stop_spawned(env)
