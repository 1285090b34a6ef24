# SPDX-License-Identifier: LGPL-2.1-or-later
"""TCP connections to a coordinator (docs/security.md, "Coordinator
connections"): the secret never travels, both ends prove they know it,
every later message is bound to that proof, a coordinator cannot send a
process's image to a directory its user did not choose, and a HELLO cannot
wrap the checkpoint numbers.

The attacker is a Python program on loopback that does not know the
secret: an impostor listening on the coordinator's port, a client, a
man-in-the-middle proxy. Each test failed on protocol version 1, where
HELLO and CMD carried the secret in clear and nothing bound later
messages to it.
"""

import os
import shutil
import socket
import struct
import sys
import tempfile
import threading
import time

import pytest

import ckpt_harness
import ckpt_wire as w
from ckpt_harness import app

GEN_MAX = 1 << 48


def log_shows(s, text, timeout=15):
    """The coordinator's log holds text, waited for (bounded): the test
    reads its stderr through a reader thread, which may not have read a
    line the coordinator wrote just before a client saw the result."""
    deadline = time.monotonic() + timeout
    while text not in s.log() and time.monotonic() < deadline:
        time.sleep(0.05)
    return text in s.log()


def launch_counter(s, addr=None):
    extra = ["--coord", addr] if addr else []
    p = s.launch([app("counter"), "100000", "50"], extra=extra)
    p.wait_line(r"^count (\d+)", minimum=3)
    return p


def assert_still_counting(p, what):
    before = int(p.wait_line(r"^count (\d+)").group(1))
    p.wait_line(r"^count (\d+)", minimum=before + 5)
    assert p.alive(), "%s: the program died: %s" % (what, p.stderr_text())


def listed(s):
    r = s.command("--list")
    assert r.returncode == 0, r.stderr
    return r.stdout


class Listener:
    """Accepts on a loopback port and runs serve(sock) per connection."""

    def __init__(self, port, serve):
        if isinstance(port, str):       # a Unix socket path
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.bind(port)
        else:
            self.sock = socket.socket()
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.sock.bind(("127.0.0.1", port))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.serve = serve
        self.stop = threading.Event()
        self.threads = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            conn.settimeout(15)
            t = threading.Thread(target=self._run, args=(conn,), daemon=True)
            t.start()
            self.threads.append(t)

    def _run(self, conn):
        try:
            self.serve(conn)
        except (OSError, AssertionError, struct.error):
            pass
        finally:
            conn.close()

    def close(self):
        self.stop.set()
        self.sock.close()
        self.thread.join(5)
        for t in self.threads:
            t.join(5)


# --- (a) an impostor on the port ---------------------------------------

def start_impostor(s, port):
    """impostor.py as user nobody: it cannot read the secret file."""
    outdir = tempfile.mkdtemp(prefix="ckt-imp-", dir="/tmp")
    os.chmod(outdir, 0o777)
    with open(os.path.join(os.path.dirname(__file__), "impostor.py")) as f:
        source = f.read()
    argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
            "--", sys.executable, "-c", source, str(port), outdir,
            os.path.join(s.dir, ".ckpt", "secret")]
    proc = s.start(argv, "impostor")
    deadline = time.monotonic() + 20
    while not os.path.exists(os.path.join(outdir, "listening")):
        assert proc.alive() and time.monotonic() < deadline, (
            "the impostor did not start: %s" % proc.stderr_text())
        time.sleep(0.05)
    return proc, outdir


def stop_impostor(proc, outdir):
    open(os.path.join(outdir, "stop"), "w").close()
    proc.wait_exit(60)
    captured = []
    for name in sorted(os.listdir(outdir)):
        if name.startswith("conn-"):
            with open(os.path.join(outdir, name), "rb") as f:
                captured.append(f.read())
    readable = os.path.exists(os.path.join(outdir, "secret-readable"))
    shutil.rmtree(outdir, ignore_errors=True)
    return captured, readable


@pytest.mark.time_limit(300)
def test_impostor_coordinator_never_sees_the_secret(tcp_session):
    """Another user (nobody) listens on the port first."""
    s = tcp_session
    imp, outdir = start_impostor(s, int(s.addr.rsplit(":", 1)[1]))
    try:
        p = s.launch([app("counter"), "100000", "50"])
        deadline = time.monotonic() + 30    # version 1 ran on: see below
        while p.alive() and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        captured, readable = stop_impostor(imp, outdir)
    assert not readable, "the other user could read the secret file"
    stolen = b"".join(captured)
    assert stolen, "ckpt_launch never talked to the impostor"
    assert s.secret not in stolen and bytes.fromhex(s.secret.decode()) \
        not in stolen, "the secret reached the impostor"
    # what the impostor got: challenges only, never a proof of the client
    types = set()
    for data in captured:
        off = 0
        while off + 16 <= len(data):
            _, _, mtype, length, _ = w.HEADER.unpack_from(data, off)
            types.add(mtype)
            off += 16 + length
    assert types == {w.MSG_AUTH_CHALLENGE}, types
    assert not p.alive() and p.wait_exit(10) != 0 and not p.lines(), (
        "the program ran under an impostor coordinator: %r" % p.lines())
    assert "did not prove it knows the secret" in p.stderr_text()

    # replayed to the real coordinator, what it captured gets nobody in
    s.start_coordinator()
    for data in captured:
        with socket.create_connection(("127.0.0.1",
                                       int(s.addr.rsplit(":", 1)[1])),
                                      timeout=10) as c:
            c.sendall(data)
            c.settimeout(3)
            try:
                while c.recv(4096):
                    pass
            except socket.timeout:
                pass
    assert "counter" not in listed(s)
    assert "joined" not in s.log()


# --- (b) a client without the secret ------------------------------------

@pytest.mark.time_limit(300)
def test_client_without_the_secret_cannot_command(tcp_session):
    s = tcp_session
    s.start_coordinator()
    p = launch_counter(s)
    host, port = s.addr.rsplit(":", 1)

    # v1 style: the secret itself, as sniffed off the wire, in a CMD
    with w.connect_tcp(s.addr) as sock:
        c = w.Conn(sock, version=1)
        c.send(w.MSG_CMD, w.CMD.pack(w.CMD_KILL, 0, s.secret, b""))
        with pytest.raises((ConnectionResetError, AssertionError,
                            socket.timeout)):
            c.recv()
    # version 2 framing, no handshake
    with w.connect_tcp(s.addr) as sock:
        c = w.Conn(sock)
        c.send(w.MSG_CMD, w.CMD.pack(w.CMD_KILL, 0, s.secret, b""))
        with pytest.raises((ConnectionResetError, socket.timeout)):
            c.recv()
    # a wrong secret: the coordinator's proof does not check out, and a
    # made-up answer is refused
    with w.connect_tcp(s.addr) as sock:
        c = w.Conn(sock)
        with pytest.raises(AssertionError):
            c.client_handshake(b"0" * 32)
        c.send(w.MSG_AUTH_RESPONSE, os.urandom(32))
        c.send(w.MSG_CMD, w.CMD.pack(w.CMD_KILL, 0, b"", b""))
        with pytest.raises((ConnectionResetError, socket.timeout)):
            c.recv()
    # reflection: the coordinator's own proof sent back as the client's
    with w.connect_tcp(s.addr) as sock:
        c = w.Conn(sock)
        c.send(w.MSG_AUTH_CHALLENGE, os.urandom(32))
        mtype, payload = c.recv()
        assert mtype == w.MSG_AUTH_PROOF
        c.send(w.MSG_AUTH_RESPONSE, payload[32:])
        c.send(w.MSG_CMD, w.CMD.pack(w.CMD_KILL, 0, b"", b""))
        with pytest.raises((ConnectionResetError, socket.timeout)):
            c.recv()
    # ckpt_command of another user (another $HOME, another secret)
    other = s.path("other-home")
    os.mkdir(other, 0o700)
    env = dict(s.env, HOME=other)
    r = ckpt_harness.run([s.tool("ckpt_command"), "--kill"], 60, env=env)
    assert r.returncode == 1
    assert "did not prove it knows the secret" in r.stderr

    assert_still_counting(p, "after the unauthenticated commands")
    for said in ("did not start with the authentication handshake",
                 "closing a protocol version 1 connection",
                 "did not prove it knows the secret"):
        assert log_shows(s, said), (said, s.log())
    assert "fakeapp" not in s.log() and "counter" in listed(s)
    # the real secret works: a full round over TCP
    images = s.checkpoint()
    assert len(images) == 1


# --- (c) a man in the middle ---------------------------------------------

class Proxy:
    """Forwards loopback TCP to the coordinator; may alter the first CMD
    a client sends (tamper) and can inject bytes toward a client."""

    def __init__(self, upstream, tamper=None):
        self.upstream = upstream
        self.tamper = tamper
        self.clients = []
        self.port = w.free_port()
        self.listener = Listener(self.port, self._serve)

    def _serve(self, client):
        up = w.connect_tcp(self.upstream)
        up.settimeout(None)
        client.settimeout(None)
        self.clients.append(client)
        back = threading.Thread(target=self._pump_back, args=(up, client),
                                daemon=True)
        back.start()
        try:
            self._pump_frames(client, up)
        finally:
            try:
                up.shutdown(socket.SHUT_RDWR)   # the coordinator sees EOF
            except OSError:
                pass
            back.join(5)
            up.close()

    def _pump_back(self, up, client):
        try:
            while True:
                data = up.recv(65536)
                if not data:
                    break
                client.sendall(data)
        except OSError:
            pass
        try:
            client.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _pump_frames(self, client, up):
        authed = False
        while True:
            hdr = w.recv_exact(client, 16)
            _, _, mtype, length, _ = w.HEADER.unpack(hdr)
            body = w.recv_exact(client, length)
            trailer = b""
            if authed and mtype not in w.AUTH_TYPES:
                trailer = w.recv_exact(client, w.MAC_LEN)
            if mtype == w.MSG_AUTH_RESPONSE:
                authed = True
            if mtype == w.MSG_CMD and self.tamper:
                body = self.tamper(body)
            up.sendall(hdr + body + trailer)

    def inject_to_clients(self, data):
        """To every client still connected; returns how many."""
        n = 0
        for c in self.clients:
            try:
                c.sendall(data)
                n += 1
            except OSError:
                pass            # closed: a probe or the command
        return n

    def close(self):
        for c in self.clients:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.listener.close()


def checkpoint_into_kill(body):
    cmd, arg = struct.unpack_from("<II", body)
    if cmd == w.CMD_CHECKPOINT:
        body = struct.pack("<II", w.CMD_KILL, arg) + body[8:]
    return body


@pytest.mark.time_limit(300)
def test_altered_or_injected_message_closes_the_connection(tcp_session):
    s = tcp_session
    s.start_coordinator()
    # the process joins through the proxy: the handshake passes a relay
    proxy = Proxy(s.addr, tamper=checkpoint_into_kill)
    try:
        via = "127.0.0.1:%d" % proxy.port
        p = launch_counter(s, via)
        assert "counter" in listed(s)

        # a CHECKPOINT the proxy turns into KILL
        env = dict(s.env, CKPT_COORD=via)
        r = ckpt_harness.run([s.tool("ckpt_command"), "--checkpoint"], 60,
                             env=env)
        assert r.returncode != 0, r.stdout
        assert log_shows(s, "wrong MAC"), s.log()
        assert_still_counting(p, "after the altered CMD")
        assert "counter" in listed(s)

        # a DO_KILL injected toward the process, with a made-up MAC
        assert proxy.inject_to_clients(w.Conn(None).frame(w.MSG_DO_KILL) +
                                       os.urandom(w.MAC_LEN)) >= 1
        # the process drops that connection (and joins again, on a new
        # one with a new handshake: a process never stays without its
        # coordinator, docs/protocol.md "Losing the coordinator")
        deadline = time.monotonic() + 30
        while ("lost the coordinator" not in p.stderr_text()
               and time.monotonic() < deadline):
            time.sleep(0.2)
        assert_still_counting(p, "after the injected DO_KILL")
        assert "wrong MAC" in p.stderr_text()
        assert "lost the coordinator" in p.stderr_text()
    finally:
        proxy.close()


# --- (d) a ckpt_dir nobody of this user chose ----------------------------

@pytest.mark.time_limit(300)
def test_ckpt_dir_outside_the_rule_is_refused(session):
    """The rule is libckpt's, whatever the transport: the rogue here is
    this user's own coordinator on its Unix socket, speaking version 1
    frames (which libckpt still takes there) so it fails on the old
    code for the right reason: the image lands in the evil directory."""
    s = session
    nobody = 65534
    evil = s.path("evil")               # another user's, open to all
    os.mkdir(evil)
    os.chmod(evil, 0o777)
    os.chown(evil, nobody, nobody)
    open_own = s.path("open-own")       # ours, but others may write
    os.mkdir(open_own)
    os.chmod(open_own, 0o777)
    private = s.path("private")         # ours, private: but via a symlink
    os.mkdir(private, 0o700)
    link = s.path("link")
    chosen = s.path("chosen")           # ours, private: taken
    os.mkdir(chosen, 0o700)
    os.symlink(private, link)
    refused = [evil, open_own, link, evil + "/../private"]
    results = []
    done = threading.Event()

    def order(c, mtype, gen, d=None):
        c.send(mtype, b"" if d is None else
               w.DO_CHECKPOINT.pack(gen, d.encode()))
        while True:
            rtype, payload = c.recv()
            if rtype != w.MSG_UNRESTORED:
                break
        g, err, _, path, msg = w.unpack_result(payload)
        results.append((d, rtype, g, err, w.cstr(msg), w.cstr(path)))
        return rtype

    def rogue(conn):
        """Knows the secret (it is this user's coordinator) and orders
        writes where it should not."""
        c = w.Conn(conn, version=1)
        mtype, _ = c.recv()
        if mtype != w.MSG_HELLO:
            return
        c.send(w.MSG_WELCOME, w.WELCOME.pack(7, 0, 0))
        gen = 1
        for d in refused:
            rtype = order(c, w.MSG_DO_SUSPEND, gen, d)
            if rtype == w.MSG_SUSPENDED:    # version 1 went on: DO_WRITE
                order(c, w.MSG_DO_WRITE, gen, d)
            gen += 1
        # the rule, not a broken fake: a directory of ours that nobody
        # else may write takes the image (the whole two-phase round)
        assert order(c, w.MSG_DO_SUSPEND, gen, chosen) == w.MSG_SUSPENDED
        assert order(c, w.MSG_DO_WRITE, gen, chosen) == w.MSG_WRITTEN
        assert order(c, w.MSG_DO_RESUME, gen) == w.MSG_SYNCED
        assert order(c, w.MSG_DO_COMMIT, gen) == w.MSG_DURABLE
        done.set()
        time.sleep(5)

    fake = Listener(s.coord, rogue)
    try:
        p = s.launch([app("counter"), "100000", "50"])
        p.wait_line(r"^count (\d+)", minimum=3)
        assert done.wait(120), "the rogue coordinator got %r" % results
        assert_still_counting(p, "after the refused directories")
    finally:
        fake.close()
    for d in (evil, open_own, private):
        assert os.listdir(d) == [], "an image went to %s" % d
    refusals = [r for r in results if r[0] in refused]
    assert [r[1] for r in refusals] == [w.MSG_FAILED] * len(refused), results
    assert all(r[3] == 1 for r in refusals), results     # EPERM
    assert "refusing the coordinator's checkpoint directory" in \
        p.stderr_text()
    assert results[-1][1] == w.MSG_DURABLE, results
    assert os.path.dirname(results[-1][5]) == chosen, results
    assert [f for f in os.listdir(chosen) if f.endswith(".img")] == \
        [os.path.basename(results[-1][5])]


# --- (e) generation numbers that would wrap -------------------------------

@pytest.mark.time_limit(300)
def test_hello_generation_beyond_bound_is_rejected(session):
    s = session
    coord = s.start([s.tool("ckpt_coordinator"), "--coord", s.coord],
                    "coordinator")
    deadline = time.monotonic() + 20
    while not os.path.exists(s.coord):
        assert time.monotonic() < deadline and coord.alive()
        time.sleep(0.05)
    for gen in (2 ** 64 - 1, GEN_MAX + 1):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(10)
        sock.connect(s.coord)
        c = w.Conn(sock, version=1)    # taken on Unix by old and new
        c.send(w.MSG_HELLO, w.hello(generation=gen, flags=1 | 4 | 8))
        with pytest.raises(ConnectionResetError):
            c.recv()
        c.close()
    # stderr is read by a thread: give the line a moment to arrive
    want = "checkpoint generation 18446744073709551615 is beyond"
    deadline = time.monotonic() + 10
    while want not in coord.stderr_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert want in coord.stderr_text()
    # a real process joins; the numbering did not move
    p = s.launch([app("counter"), "100000", "50"])
    p.wait_line(r"^count (\d+)", minimum=3)
    s.checkpoint()
    r = s.command("--status")
    assert "generation 1," in r.stdout, r.stdout
