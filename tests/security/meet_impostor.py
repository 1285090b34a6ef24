# SPDX-License-Identifier: LGPL-2.1-or-later
"""A program of another user at a meeting of two hosts' ckpt_restarts
(docs/security.md, "Meetings between hosts at restart"): it does not
know the per-user secret, but speaks the handshake's framing and, after
it, the meeting's own (an 8-byte length of zero), to take whatever a
ckpt_restart would give it.

  meet_impostor.py listen ADDR PORT OUT SECONDS
      listen at ADDR:PORT (before the real ckpt_restart can); answer each
      connection as a listener would, with a made-up proof.
  meet_impostor.py connect ADDR PORT OUT SECONDS
      connect to ADDR:PORT again and again, as a connector would, with a
      made-up proof.

Each connection appends one line to OUT: "conn GOT EXTRA", GOT the bytes
the handshake's framing expects that came (the hello, or the answer),
EXTRA every byte beyond them (all of them when the first are not a
handshake): what a ckpt_restart gave away."""

import os
import socket
import sys
import time

MAGIC = b"ckptMA01"
HELLO_LEN = 8 + 16
ANSWER_LEN = 8 + 16 + 32


def read_for(s, limit, seconds):
    """Bytes read until close, limit bytes, or seconds."""
    got = b""
    end = time.monotonic() + seconds
    while len(got) < limit:
        left = end - time.monotonic()
        if left <= 0:
            break
        s.settimeout(left)
        try:
            b = s.recv(limit - len(got))
        except (socket.timeout, OSError):
            break
        if not b:
            break
        got += b
    return got


def note(out, got, extra):
    with open(out, "a") as f:
        f.write("conn %d %d\n" % (got, extra))


def family_of(addr):
    return socket.AF_INET6 if ":" in addr else socket.AF_INET


def listen(addr, port, out, seconds):
    ls = socket.socket(family_of(addr), socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((addr, port))
    ls.listen(8)
    with open(out + ".ready", "w") as f:
        f.write("listening\n")
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        ls.settimeout(max(0.1, end - time.monotonic()))
        try:
            s, _ = ls.accept()
        except (socket.timeout, OSError):
            continue
        with s:
            hello = read_for(s, HELLO_LEN, 3)
            try:
                s.sendall(MAGIC + os.urandom(16 + 32) + bytes(8))
            except OSError:
                pass
            extra = read_for(s, 1 << 20, 3)
        if not hello.startswith(MAGIC):     # not a handshake: given away
            extra, hello = hello + extra, b""
        note(out, len(hello), len(extra))


def connect(addr, port, out, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            s = socket.create_connection((addr, port), timeout=2)
        except OSError:
            time.sleep(0.05)
            continue
        with s:
            try:
                s.sendall(MAGIC + os.urandom(16))
                answer = read_for(s, ANSWER_LEN, 3)
                s.sendall(os.urandom(32) + bytes(8))
            except OSError:
                answer = b""
            extra = read_for(s, 1 << 20, 1)
        if not answer.startswith(MAGIC):    # not a handshake: given away
            extra, answer = answer + extra, b""
        note(out, len(answer), len(extra))
        time.sleep(0.2)


def main():
    mode, addr, port, out, seconds = sys.argv[1:6]
    {"listen": listen, "connect": connect}[mode](addr, int(port), out,
                                                 float(seconds))


if __name__ == "__main__":
    main()
