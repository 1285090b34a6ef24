# SPDX-License-Identifier: LGPL-2.1-or-later
"""A dual-stack server (an IPv6 socket listening on [::], as iperf3,
nginx `listen [::]:80` or python's `socket.create_server(dualstack_ipv6=
True)` make it) and its IPv4 client in one computation: the server's
accepted socket is IPv6 with the v4-mapped form of the client's
addresses, the client's is IPv4. ckpt_restart must pair the two ends
across the families (restart/restart_tcp.c) instead of restoring both as
closed by a peer "not restarted with it" (seen with iperf3); each end
comes back in its own family, and the conversation goes on exactly,
with the bytes in flight at the checkpoint."""

import pytest

from ckpt_harness import numbers, restart_to_end

STEPS = 400
PROGRESS = r"^step (\d+) "

PROGRAM = r"""
import os, socket, sys, time
steps = int(sys.argv[1])
try:
    srv = socket.create_server(("::", 0), family=socket.AF_INET6,
                               dualstack_ipv6=True)
except (OSError, ValueError) as e:
    print("no dual stack:", e, file=sys.stderr)
    sys.exit(3)
port = srv.getsockname()[1]
if os.fork() == 0:
    srv.close()
    c = socket.create_connection(("127.0.0.1", port))
    f = c.makefile("rwb", buffering=0)
    while True:
        line = f.readline()
        if not line:
            sys.exit(0)
        n = int(line)
        c.sendall(b"%d %s\n" % (n + 1, b"x" * (n % 2000)))
        assert c.family == socket.AF_INET, c.family
conn, peer = srv.accept()
srv.close()
f = conn.makefile("rwb", buffering=0)
total = 0
for step in range(1, steps + 1):
    conn.sendall(b"%d\n" % step)
    reply = f.readline().split()
    assert int(reply[0]) == step + 1, (step, reply)
    assert len(reply) == 1 or len(reply[1]) == step % 2000, step
    total += int(reply[0])
    fam = conn.family == socket.AF_INET6 and conn.getpeername()[0]
    print("step %d %d %s" % (step, total, fam), flush=True)
    time.sleep(0.02)
f.close()
conn.close()
os.wait()
print("done %d" % total, flush=True)
"""


@pytest.mark.time_limit(240)
def test_ipv4_client_of_dual_stack_server_reconnected(session, tmp_path):
    prog = tmp_path / "dual_stack.py"
    prog.write_text(PROGRAM)
    p = session.launch(["/usr/bin/python3", str(prog), str(STEPS)])
    p.wait_line(PROGRESS + r"|^done", timeout=30)
    if p.popen.poll() == 3:
        pytest.skip(p.stderr_text())
    m = p.wait_line(r"^step (\d+) \d+ (\S+)", minimum=20)
    assert m.group(2) == "::ffff:127.0.0.1", m.group(0)
    seen = max(numbers(p.lines(), PROGRESS))
    images = session.checkpoint(expect_images=2)
    p.wait_line(PROGRESS, minimum=seen + 5)
    session.kill_all()
    p.wait_exit(30)
    r, first = restart_to_end(session, images, PROGRESS, STEPS, seen,
                              numbers(p.lines(), PROGRESS))
    assert "not restarted with it" not in r.stderr_text(), r.stderr_text()
    last = [l for l in r.lines() if l.startswith("step ")][-1]
    assert last.split()[3] == "::ffff:127.0.0.1", last
    total = sum(n + 1 for n in range(1, STEPS + 1))
    assert r.lines()[-1] == "done %d" % total, r.lines()[-3:]
