# SPDX-License-Identifier: LGPL-2.1-or-later
"""A TCP receive queue larger than a new connection's buffers comes back
whole. A reader that read fast (TCP autotuning grew its receive buffer
to tcp_rmem[2]) and then paused holds more than twice
net.core.rmem_max in its queue; ckpt_restart can put back only what the
new connection's buffers hold, and the restored sender puts back the
rest before its program runs (docs/resources.md, TCP). The reader ends
with the count and hash of an uninterrupted run, as root and as an
unprivileged user; a reader that never reads gets its connection reset
after 30 s, said on stderr, rather than a stream with bytes missing."""

import os
import re
import time

import pytest

import ckpt_harness
from ckpt_harness import app, reference_output

PAUSED = r"^paused at (\d+) rcvbuf (\d+)$"
WROTE = r"^sender wrote (\d+) unsent (-?\d+)$"
GOT = r"^reader got (\d+) ([0-9a-f]{16})$"
DONE = r"^sender done (\d+) ([0-9a-f]{16})$"


def rmem_max():
    with open("/proc/sys/net/core/rmem_max") as f:
        return int(f.read())


# The reader reads until autotuning grew its buffer to 16 MiB (a queue of
# 13 MiB then fits, the sender's buffer taking the rest: 10 runs in 10
# without ckpt); 20 MiB was asked before, and a run without ckpt stayed
# below it after 16 rounds of 32 MiB (tcp_big_queue.c reads 40 now).
FAST_MIB, QUEUED_MIB, RCVBUF_MIN_MIB = 32, 13, 16


def uninterrupted(tmpdir, paused_at):
    """The same stream without ckpt, pausing at the same byte."""
    go = os.path.join(tmpdir, "go-now")
    open(go, "w").close()
    lines = reference_output([app("tcp_big_queue"), go,
                              str(paused_at >> 20), str(QUEUED_MIB)],
                             cache=False)
    return [l for l in lines if re.match(GOT, l) or re.match(DONE, l)]


def queued_bytes_saved(s, images):
    """The largest TCP queue ckpt_inspect shows saved in the images."""
    best = 0
    for img in images:
        for m in re.finditer(r"(\d+) bytes? queued", s.inspect(img)):
            best = max(best, int(m.group(1)))
    return best


def checkpoint_paused(s, prog, go):
    """Launch, checkpoint while the reader pauses, kill: the images and
    the byte the reader paused at."""
    p = s.launch([prog, go, str(FAST_MIB), str(QUEUED_MIB),
                  str(RCVBUF_MIN_MIB)])
    paused_at = int(p.wait_line(PAUSED).group(1))
    unsent = int(p.wait_line(WROTE).group(2))
    assert unsent == 0, "the reader's buffer did not take the %d MiB" % (
        QUEUED_MIB)
    images = s.checkpoint(expect_images=2)
    queued = queued_bytes_saved(s, images)
    assert queued == QUEUED_MIB << 20, (queued, [s.inspect(i)
                                                  for i in images])
    assert queued > 2 * rmem_max(), (queued, rmem_max())
    s.kill_all()
    p.popen.wait(30)
    return images, paused_at


def run_big_queue(s, prog):
    go = s.path("go")
    images, paused_at = checkpoint_paused(s, prog, go)
    open(go, "w").close()
    if s.run_as is not None:
        os.chown(go, s.run_as, s.run_as)
    r = s.restart(images)
    r.wait_exit()
    out = r.lines()
    assert not [l for l in out if l.startswith("FAIL")], (out,
                                                          r.stderr_text())
    return [l for l in out if re.match(GOT, l) or re.match(DONE, l)], r, \
        paused_at


@pytest.mark.time_limit(300)
def test_queue_larger_than_new_buffers_comes_back(session, tmp_path):
    got, r, paused_at = run_big_queue(session, app("tcp_big_queue"))
    want = uninterrupted(str(tmp_path), paused_at)
    assert len(want) == 2, want
    assert sorted(got) == sorted(want), (got, want, r.stderr_text())


@pytest.mark.time_limit(300)
def test_queue_larger_than_new_buffers_unprivileged(tmp_path):
    s, (prog,) = ckpt_harness.unprivileged_session([app("tcp_big_queue")])
    try:
        got, r, paused_at = run_big_queue(s, prog)
    finally:
        s.close()
    want = uninterrupted(str(tmp_path), paused_at)
    assert sorted(got) == sorted(want), (got, want, r.stderr_text())


@pytest.mark.time_limit(300)
def test_reader_that_never_reads_gets_a_reset(session):
    s = session
    go = s.path("go")
    images, _ = checkpoint_paused(s, app("tcp_big_queue"), go)
    r = s.restart(images)
    # the reader waits for go: the sender's process gives up after 30 s
    deadline = time.monotonic() + 120
    while "is reset" not in r.stderr_text():
        assert time.monotonic() < deadline, r.stderr_text()
        time.sleep(0.2)
    assert re.search(r"fd \d+: the last \d+ bytes saved in the queue of "
                     r"its peer could not be put back \(the peer read "
                     r"nothing for 30 s\); the TCP connection is reset",
                     r.stderr_text()), r.stderr_text()
    open(go, "w").close()
    r.wait_exit()
    out = r.lines()
    assert not [l for l in out if re.match(GOT, l) or re.match(DONE, l)], out
    assert [l for l in out if "reset" in l], out
