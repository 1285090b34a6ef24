# SPDX-License-Identifier: LGPL-2.1-or-later
"""A listening Unix socket whose directory the program removed after the
checkpoint (python's multiprocessing removes its /tmp/pymp-* directory at
exit: a restart of an older checkpoint after the run ended could not
listen there again, "No such file or directory"). ckpt_restart makes the
directory again (0700, said) and the restored server answers a client
that connects after the restart."""

import os
import shutil
import socket
import stat

import pytest

from ckpt_harness import checkpoint_and_kill

PYTHON = "/usr/bin/python3"
SERVER = r"""
import os, socket, sys, tempfile, threading, time
d = tempfile.mkdtemp(prefix="ckpt-sockdir-")
path = os.path.join(d, "listener")
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(path)
srv.listen(8)
print("listening", path, flush=True)
def serve():
    n = 0
    while True:
        c, _ = srv.accept()
        n += 1
        c.sendall(b"pong %d %s\n" % (n, c.recv(64).strip()))
        c.close()
threading.Thread(target=serve, daemon=True).start()
for k in range(1, int(sys.argv[1]) + 1):
    print("round", k, flush=True)
    time.sleep(0.05)
"""
ROUND = r"^round (\d+)$"


def ping(path):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as c:
        c.settimeout(10)
        c.connect(path)
        c.sendall(b"ping\n")
        return c.makefile().readline().strip()


@pytest.mark.time_limit(120)
def test_listener_directory_removed_after_the_checkpoint(session):
    p = session.launch([PYTHON, "-c", SERVER, "2000"])
    path = p.wait_line(r"^listening (\S+)$").group(1)
    assert ping(path).startswith("pong 1")
    images, _, _ = checkpoint_and_kill(session, p, ROUND, 5)
    shutil.rmtree(os.path.dirname(path))

    r = session.restart(images)
    r.wait_line(ROUND, minimum=20, timeout=30)
    st = os.stat(os.path.dirname(path))
    assert stat.S_IMODE(st.st_mode) == 0o700 and st.st_uid == os.geteuid()
    assert "was gone; made again" in r.stderr_text(), r.stderr_text()
    # the restored server, counting on from its checkpoint
    assert ping(path) == "pong 2 ping", r.stderr_text()
    session.kill_all()
