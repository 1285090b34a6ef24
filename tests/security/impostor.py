# SPDX-License-Identifier: LGPL-2.1-or-later
"""An impostor coordinator, run by tests/security as another user (nobody):
python3 -c "$(cat impostor.py)" PORT OUTDIR SECRET_PATH

Listens on 127.0.0.1:PORT and records every connection's bytes into
OUTDIR/conn-N.bin; a connection that starts with AUTH_CHALLENGE gets a
made-up AUTH_PROOF, as from anyone who does not know the secret. Writes
OUTDIR/secret-readable if it could read SECRET_PATH (it must not), and
OUTDIR/listening once it listens; stops when OUTDIR/stop appears (or after
120 s). Standard library only: it runs without the test's modules.
"""

import os
import socket
import struct
import sys
import threading
import time

port, outdir, secret_path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
try:
    open(secret_path, "rb").read()
    open(os.path.join(outdir, "secret-readable"), "w").close()
except OSError:
    pass


def serve(conn, n):
    data, answered = b"", False
    conn.settimeout(0.2)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            chunk = conn.recv(65536)
        except socket.timeout:
            chunk = None
        except OSError:
            break
        if chunk == b"":
            break
        data += chunk or b""
        if not answered and len(data) >= 16 + 32 and \
                struct.unpack_from("<IHHII", data)[2] == 48:
            conn.sendall(struct.pack("<IHHII", 0x434B5054, 2, 49, 64, 0) +
                         os.urandom(64))
            answered = True
    conn.close()
    with open(os.path.join(outdir, "conn-%d.bin" % n), "wb") as f:
        f.write(data)


lsock = socket.socket()
lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
lsock.bind(("127.0.0.1", port))
lsock.listen(16)
lsock.settimeout(0.2)
open(os.path.join(outdir, "listening"), "w").close()
threads, n, end = [], 0, time.monotonic() + 120
while time.monotonic() < end and \
        not os.path.exists(os.path.join(outdir, "stop")):
    try:
        conn, _ = lsock.accept()
    except socket.timeout:
        continue
    t = threading.Thread(target=serve, args=(conn, n))
    t.start()
    threads.append(t)
    n += 1
for t in threads:
    t.join(15)
