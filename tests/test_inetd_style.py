# SPDX-License-Identifier: LGPL-2.1-or-later
"""An inetd-style server (git daemon, inetd, socat EXEC, tcpserver): it
accepts a TCP connection and forks a child that puts it on its stdin and
stdout and execs the program serving it, here a line echo; the client is
in the computation too. The connection on fds 0 and 1 is saved as a
connection, its ends reconnected at restart and the conversation goes on
exactly (before, fds 0-2 were always taken from ckpt_restart's stdio and
the served program wrote to a closed descriptor: git daemon's "fatal:
write error: Bad file descriptor"). A socket on stdio whose peer is not
restarted is still the restarting side's stdio (tests/test_core_stdio.py)."""

import pytest

from ckpt_harness import numbers, restart_to_end

STEPS = 400
PROGRESS = r"^step (\d+) "

SERVED = r"""
import sys
out = sys.stdout.buffer
for line in sys.stdin.buffer:
    n = int(line)
    out.write(b"%d %s\n" % (n * 2, b"y" * (n % 3000)))
    out.flush()
"""

PROGRAM = r"""
import os, socket, sys, time
steps, served = int(sys.argv[1]), sys.argv[2]
srv = socket.create_server(("127.0.0.1", 0))
port = srv.getsockname()[1]
server = os.fork()
if server == 0:
    conn, _ = srv.accept()
    child = os.fork()
    if child == 0:
        os.dup2(conn.fileno(), 0)
        os.dup2(conn.fileno(), 1)
        conn.close()
        srv.close()
        os.execv(sys.executable, [sys.executable, served])
    conn.close()
    os.waitpid(child, 0)
    os._exit(0)
srv.close()
c = socket.create_connection(("127.0.0.1", port))
f = c.makefile("rwb", buffering=0)
total = 0
for step in range(1, steps + 1):
    c.sendall(b"%d\n" % step)
    reply = f.readline().split()
    assert int(reply[0]) == step * 2, (step, reply)
    assert len(reply) == 1 or len(reply[1]) == step % 3000, step
    total += int(reply[0])
    print("step %d %d" % (step, total), flush=True)
    time.sleep(0.02)
f.close()
c.close()
os.waitpid(server, 0)
print("done %d" % total, flush=True)
"""


@pytest.mark.time_limit(240)
def test_connection_on_stdin_and_stdout_of_a_served_program(session,
                                                            tmp_path):
    prog, served = tmp_path / "inetd.py", tmp_path / "served.py"
    prog.write_text(PROGRAM)
    served.write_text(SERVED)
    p = session.launch(["/usr/bin/python3", str(prog), str(STEPS),
                        str(served)])
    p.wait_line(PROGRESS, minimum=20)
    seen = max(numbers(p.lines(), PROGRESS))
    images = session.checkpoint(expect_images=3)
    p.wait_line(PROGRESS, minimum=seen + 5)
    session.kill_all()
    p.wait_exit(30)
    r, first = restart_to_end(session, images, PROGRESS, STEPS, seen,
                              numbers(p.lines(), PROGRESS))
    assert "not restarted with it" not in r.stderr_text(), r.stderr_text()
    total = sum(2 * n for n in range(1, STEPS + 1))
    assert r.lines()[-1] == "done %d" % total, r.lines()[-3:]
