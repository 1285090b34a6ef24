# SPDX-License-Identifier: LGPL-2.1-or-later
"""Scenarios found by trying Debian programs nobody had tried under ckpt
(the log is in docs/real-programs.md).

Three faults of ckpt_restart, each with its test here: a TCP connection
and a FIFO restarted with an inherited descriptor at each of 3..14, and a
pipe whose writers ended before the checkpoint (`seq | sed | read loop`,
found with find | xargs -P2; its story is in the class's docstring).

A loopback TCP connection between two processes: a socat relay (`TCP-LISTEN:...,fork`) with its clients
made ckpt_restart fail with "reconnecting the TCP connection ... failed:
Device or resource busy". ckpt_restart reconnects the two ends over a new
loopback connection and moves them into the descriptor range it hands to
the restored processes; when the holes below that range were used up the
accepted end landed on the range's first slot itself and the first end
could not be placed there. How many holes there are depends on the
descriptors ckpt_restart inherited and on how many images it restarts,
so the test restarts the same images with one more inherited descriptor
at each of 3..14 (7 hit it with the code of December 2026).
"""

import os

import pytest

from ckpt_harness import FINISH_TIMEOUT, assert_resumed, numbers
from realprogs.driver import Program, check_program, require

PYTHON = "/usr/bin/python3"

TCP_PAIR = r"""
import os, signal, socket, sys, time
n, extra, pace = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
l = socket.socket()
l.bind(("127.0.0.1", 0))
l.listen(1)
idle = []
for i in range(extra):
    pid = os.fork()
    if pid == 0:
        l.close()
        while True:
            time.sleep(1)
    idle.append(pid)
echo = os.fork()
if echo == 0:
    c = socket.create_connection(l.getsockname())
    l.close()
    f = c.makefile("rwb")
    for line in f:
        f.write(b"%d\n" % (int(line) * 3 + 1))
        f.flush()
    os._exit(0)
s, _ = l.accept()
l.close()
f = s.makefile("rwb")
h = 0
for i in range(n):
    f.write(b"%d\n" % i)
    f.flush()
    h = (h * 31 + int(f.readline())) % 1000003
    print("step", i, h, flush=True)
    if os.path.exists(pace):
        time.sleep(0.05)
f.close()
s.close()
os.waitpid(echo, 0)
for pid in idle:
    os.kill(pid, signal.SIGTERM)
    os.waitpid(pid, 0)
print("final", h, flush=True)
"""


def expected_lines(n):
    """What TCP_PAIR prints for n steps."""
    out, h = [], 0
    for i in range(n):
        h = (h * 31 + i * 3 + 1) % 1000003
        out.append("step %d %d" % (i, h))
    return out + ["final %d" % h]


# ckpt_restart with one more descriptor inherited at `fd` (a user's shell
# may pass any): it moves where ckpt_restart's own descriptors go, and so
# how many free numbers lie below the range it hands over
WITH_FD = """
import os, sys
fd = int(sys.argv[1])
os.dup2(os.open("/dev/null", os.O_RDONLY), fd)
os.execv(sys.argv[2], sys.argv[2:])
"""
STEPS = 200
PROGRESS = r"^step (\d+) "


def launch_paced(session, argv, name, images):
    """Launch argv (its last argument: the pacing file; the first run goes
    slowly so that it cannot end before the kill, the restarted ones at
    full speed), checkpoint it past step 5 and kill it. Returns (images,
    progress seen before the checkpoint, progress printed before the
    kill)."""
    pace = argv[-1]
    open(pace, "w").close()
    p = session.launch(argv, name=name)
    p.wait_line(PROGRESS, minimum=5)
    seen = max(numbers(p.lines(), PROGRESS))
    images = session.checkpoint(expect_images=images)
    session.kill_all()
    p.wait_exit(30)
    os.unlink(pace)
    return images, seen, numbers(p.lines(), PROGRESS)


def restart_with_each_fd(session, images, seen, before, want):
    """Restart the images with an inherited descriptor at 3..14; each
    restart must finish with the output of an uninterrupted run."""
    last = numbers(want, PROGRESS)[-1]
    for fd in range(3, 15):
        r = session.start([PYTHON, "-c", WITH_FD, str(fd),
                           session.tool("ckpt_restart")] + images,
                          "restart with fd %d inherited" % fd)
        rc = r.wait_exit(FINISH_TIMEOUT)
        assert rc == 0, "%s: exit %d; stderr:\n%s" % (r.name, rc,
                                                      r.stderr_text())
        after = numbers(r.lines(), PROGRESS)
        first = assert_resumed(before, after, PROGRESS, last, seen)
        assert r.lines() == want[first:], "%s: output differs: %r" % (
            r.name, r.lines()[:5])


@pytest.mark.time_limit(300)
def test_tcp_pair_restarted_whatever_fds_are_inherited(session):
    """Two processes talking over a loopback TCP connection (EBUSY with
    an inherited descriptor at 7, before December 2026)."""
    pace = os.path.join(session.dir, "slowly")
    images, seen, before = launch_paced(
        session, [PYTHON, "-c", TCP_PAIR, str(STEPS), "0", pace],
        "tcp pair", 2)
    restart_with_each_fd(session, images, seen, before,
                         expected_lines(STEPS))


FIFO_LOOP = r"""
import os, sys, time
n, fifo, pace = int(sys.argv[1]), sys.argv[2], sys.argv[3]
if not os.path.exists(fifo):
    os.mkfifo(fifo)
rw = os.open(fifo, os.O_RDWR)
h = 0
for i in range(n):
    os.write(rw, b"%d\n" % (i * 3 + 1))
    h = (h * 31 + int(os.read(rw, 100))) % 1000003
    print("step", i, h, flush=True)
    if os.path.exists(pace):
        time.sleep(0.05)
print("final", h, flush=True)
"""


@pytest.mark.time_limit(300)
def test_fifo_restarted_whatever_fds_are_inherited(session):
    """A FIFO open for reading and writing: ckpt_restart opens its three
    ends and hands over the one the process had; the ends it did not
    need could sit on the slot the needed one was to take (EBUSY, with an
    inherited descriptor at 3, 4 or 5, before December 2026)."""
    pace = os.path.join(session.dir, "slowly")
    fifo = os.path.join(session.dir, "fifo")
    images, seen, before = launch_paced(
        session, [PYTHON, "-c", FIFO_LOOP, str(STEPS), fifo, pace],
        "fifo loop", 1)
    restart_with_each_fd(session, images, seen, before,
                         expected_lines(STEPS))


class ReaderOutlivesWriters(Program):
    """A shell pipeline whose writers end at once and whose reader goes on
    slowly: at the checkpoint the pipe holds the bytes of seq and sed,
    both ended, and only the reader's end is among the images. ckpt_restart
    took such a pipe on stdin for one leading outside the computation and
    gave the reader its own stdin (EOF) instead: the reader stopped at the
    line of the checkpoint."""
    name = "pipe-reader-outlives-writers"

    def argv(self, run):
        return ["/bin/sh", "-c", "seq 1 500 | sed 's/^/line /' | "
                "(sleep 1; while read l; do echo \"$l\"; sleep 0.01; done)"]

    def finished(self, run):
        return run.stdout_lines()[-1:] == ["line 500"]


@pytest.mark.time_limit(300)
def test_pipe_reader_outlives_writers(session):
    require("/bin/sh", "dash")
    check_program(session, ReaderOutlivesWriters())
