# SPDX-License-Identifier: LGPL-2.1-or-later
"""The coordinator protocol of include/ckpt/protocol.h (version 2) from
Python, with the TCP handshake and message MACs of docs/protocol.md,
"Authentication", computed with hmac/hashlib: used by tests/security to
play a coordinator or a client that does (or does not) know the secret.
"""

import hashlib
import hmac
import os
import socket
import struct

MAGIC = 0x434B5054
VERSION = 2
HEADER = struct.Struct("<IHHII")
HELLO = struct.Struct("<iiiIQ64s64s64s33s7sQ")
WELCOME = struct.Struct("<QII")
DO_CHECKPOINT = struct.Struct("<Q4096s")
RESULT = struct.Struct("<QiI4096s512s")
CMD = struct.Struct("<II33s7s")
CMD_REPLY = struct.Struct("<iI")
NONCE_LEN = MAC_LEN = 32

MSG_HELLO, MSG_SUSPENDED, MSG_WRITTEN, MSG_DURABLE, MSG_FAILED = 1, 2, 3, 4, 5
MSG_SYNCED, MSG_UNRESTORED = 6, 7
MSG_WELCOME, MSG_DO_SUSPEND, MSG_DO_WRITE, MSG_DO_ABORT, MSG_DO_KILL = \
    16, 17, 18, 19, 20
MSG_DO_COMMIT, MSG_DO_RESUME = 21, 22
MSG_CMD, MSG_CMD_REPLY = 32, 33
MSG_AUTH_CHALLENGE, MSG_AUTH_PROOF, MSG_AUTH_RESPONSE = 48, 49, 50
AUTH_TYPES = (MSG_AUTH_CHALLENGE, MSG_AUTH_PROOF, MSG_AUTH_RESPONSE)
CMD_CHECKPOINT, CMD_STATUS, CMD_LIST, CMD_INTERVAL, CMD_KILL, CMD_QUIT = \
    1, 2, 3, 4, 5, 6
HELLO_F_RESUME_BARRIER = 4

LABELS = {
    "coordinator proof": b"ckpt-v2 coordinator proof\0",
    "client proof": b"ckpt-v2 client proof\0",
    "to coordinator": b"ckpt-v2 key client to coordinator\0",
    "to client": b"ckpt-v2 key coordinator to client\0",
}


def derive(secret, label, client_nonce, coord_nonce):
    return hmac.new(secret, LABELS[label] + client_nonce + coord_nonce,
                    hashlib.sha256).digest()


def read_secret(home):
    with open(os.path.join(home, ".ckpt", "secret"), "rb") as f:
        return f.read().strip()


def recv_exact(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionResetError("peer closed the connection")
        data += chunk
    return data


def connect_tcp(addr, timeout=10.0):
    host, port = addr.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


class Conn:
    """One connection; after a handshake every message carries its MAC."""

    def __init__(self, sock, version=VERSION):
        self.sock = sock
        self.version = version
        self.send_key = self.recv_key = None
        self.send_seq = self.recv_seq = 0

    def _mac(self, key, seq, header, payload):
        return hmac.new(key, struct.pack("<Q", seq) + header + payload,
                        hashlib.sha256).digest()

    def frame(self, mtype, payload=b""):
        header = HEADER.pack(MAGIC, self.version, mtype, len(payload), 0)
        if self.send_key is None:
            return header + payload
        mac = self._mac(self.send_key, self.send_seq, header, payload)
        self.send_seq += 1
        return header + payload + mac

    def send(self, mtype, payload=b""):
        self.sock.sendall(self.frame(mtype, payload))

    def recv(self):
        header = recv_exact(self.sock, HEADER.size)
        magic, version, mtype, length, _ = HEADER.unpack(header)
        assert magic == MAGIC, "bad magic %#x" % magic
        payload = recv_exact(self.sock, length)
        if self.recv_key is not None:
            mac = recv_exact(self.sock, MAC_LEN)
            want = self._mac(self.recv_key, self.recv_seq, header, payload)
            self.recv_seq += 1
            assert hmac.compare_digest(mac, want), "wrong MAC from peer"
        return mtype, payload

    def keys(self, secret, nc, ns, coordinator_side):
        to_coord = derive(secret, "to coordinator", nc, ns)
        to_client = derive(secret, "to client", nc, ns)
        self.send_key, self.recv_key = (to_client, to_coord) \
            if coordinator_side else (to_coord, to_client)

    def client_handshake(self, secret):
        """As ckpt_coord_connect does: challenge, check, prove."""
        nc = os.urandom(NONCE_LEN)
        self.send(MSG_AUTH_CHALLENGE, nc)
        mtype, payload = self.recv()
        assert mtype == MSG_AUTH_PROOF and len(payload) == 64
        ns, proof = payload[:32], payload[32:]
        assert hmac.compare_digest(
            proof, derive(secret, "coordinator proof", nc, ns))
        self.send(MSG_AUTH_RESPONSE, derive(secret, "client proof", nc, ns))
        self.keys(secret, nc, ns, False)

    def coordinator_handshake(self, secret):
        """As ckpt_coordinator does: answer the challenge, check the
        client's proof."""
        mtype, nc = self.recv()
        assert mtype == MSG_AUTH_CHALLENGE and len(nc) == 32
        ns = os.urandom(NONCE_LEN)
        self.send(MSG_AUTH_PROOF,
                  ns + derive(secret, "coordinator proof", nc, ns))
        mtype, proof = self.recv()
        assert mtype == MSG_AUTH_RESPONSE
        assert hmac.compare_digest(proof,
                                   derive(secret, "client proof", nc, ns))
        self.keys(secret, nc, ns, True)

    def close(self):
        self.sock.close()

    # the socket's other calls (settimeout, shutdown, fileno), and `with`
    def __getattr__(self, name):
        if name == "sock":
            raise AttributeError(name)
        return getattr(self.sock, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def hello(vpid=1, generation=0, flags=HELLO_F_RESUME_BARRIER, secret=b""):
    return HELLO.pack(os.getpid(), vpid, 1, flags, generation, b"fakeapp",
                      b"uid-%d" % vpid, b"testhost", secret, b"", 0)


def command_reply(payload):
    status, text_len = CMD_REPLY.unpack_from(payload)
    return status, payload[CMD_REPLY.size:CMD_REPLY.size + text_len]\
        .rstrip(b"\0").decode()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def unpack_result(payload):
    """A RESULT as the coordinator reads it: a shorter payload (libckpt
    sends one only up to the end of its text) is zero-filled
    (docs/protocol.md)."""
    return RESULT.unpack_from(payload.ljust(RESULT.size, b"\0"))


def cstr(b):
    return b.split(b"\0", 1)[0].decode()
