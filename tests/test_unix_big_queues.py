# SPDX-License-Identifier: LGPL-2.1-or-later
"""A Unix stream socketpair whose queue holds more than a new pair does
(docs/resources.md, "Unix stream socket pairs"): the writer raised its
SO_SNDBUF, as far as net.core.wmem_max lets it (twice that), and filled
the pair; the reader reads only later. The restart used to fail with
"recreating the connected pair failed: No buffer space available"; it now
raises the new pair's send buffer first, and the reader reads every byte
once, in order, also after a second checkpoint and restart."""

import re

import pytest

import ckpt_harness
from ckpt_harness import (app, assert_resumed, checkpoint_silently,
                          numbers, restart_and_checkpoint_again)

TICK = r"^tick (\d+)$"
TICKS = 80
NEW_PAIR_HOLDS = 212992     # Debian's net.core.wmem_default


def checkpoint_and_kill(s, p, mode):
    """At tick 5 (the pair full): one checkpoint, then everything killed.
    Returns (images, tick seen, ticks printed, bytes queued)."""
    p.wait_line(TICK, minimum=5)
    seen = max(numbers(p.lines(), TICK))
    images = s.checkpoint(expect_images=1 if mode == "self" else 2)
    s.kill_all()
    p.wait_exit(30)
    return images, seen, numbers(p.lines(), TICK), queued_before(p.lines())


def queued_before(lines):
    m = [re.match(r"^queued (\d+)$", l) for l in lines]
    got = [int(x.group(1)) for x in m if x]
    assert got, lines[:5]
    return got[0]


def run_and_restart(s, prog, mode):
    p = s.launch([prog, mode, str(TICKS), "50"])
    images, seen, before, queued = checkpoint_and_kill(s, p, mode)
    assert queued > NEW_PAIR_HOLDS, (
        "only %d bytes queued: a new pair holds that, nothing is tested" %
        queued)
    r = s.restart(images)
    assert r.wait_exit() == 0, (r.lines()[-3:], r.stderr_text())
    assert "read %d ok" % queued in r.lines(), (r.lines()[-3:],
                                                 r.stderr_text())
    assert_resumed(before, numbers(r.lines(), TICK), TICK, TICKS, seen)


@pytest.mark.time_limit(240)
@pytest.mark.parametrize("mode", ["fork", "shared", "self"])
def test_big_queue_of_a_socketpair_comes_back(session, mode):
    run_and_restart(session, app("unix_big_queue"), mode)


@pytest.mark.time_limit(240)
def test_big_queue_comes_back_unprivileged():
    """As nobody: no SO_SNDBUFFORCE on either side, the program's queue
    and the restart's room both bounded by net.core.wmem_max."""
    s, (prog,) = ckpt_harness.unprivileged_session([app("unix_big_queue")])
    try:
        run_and_restart(s, prog, "fork")
    finally:
        s.close()


@pytest.mark.time_limit(300)
def test_big_queue_survives_a_second_restart(session):
    s = session
    p = s.launch([app("unix_big_queue"), "fork", str(TICKS), "50"])
    images, _, _, queued = checkpoint_and_kill(s, p, "fork")
    _, _, images2 = restart_and_checkpoint_again(s, images, TICK, 20)
    r2 = s.restart(images2)
    assert r2.wait_exit() == 0, (r2.lines()[-3:], r2.stderr_text())
    assert "read %d ok" % queued in r2.lines(), (r2.lines()[-3:],
                                                  r2.stderr_text())


@pytest.mark.time_limit(300)
def test_queue_held_by_two_processes_is_saved_whole_every_time(session):
    """Parent and child both hold both ends (a multiprocessing Pipe): the
    queue is looked at by one process only. When both peeked at once (the
    socket has one peek offset for all its holders) a checkpoint failed
    with EAGAIN or saved the queue from its middle, and the restarted
    reader read a stream with its first bytes missing."""
    s = session
    p = s.launch([app("unix_big_queue"), "shared", "200", "50"])
    p.wait_line(TICK, minimum=3)
    queued = queued_before(p.lines())
    for _ in range(6):
        images = checkpoint_silently(s, expect_images=2)
        saved = [int(n) for i in images
                 for n in re.findall(r"\((\d+) bytes saved\)",
                                     s.inspect(i))]
        assert saved == [queued], (saved, queued)
    s.kill_all()
    p.wait_exit(30)
    r = s.restart(images)
    assert r.wait_exit() == 0, (r.lines()[-3:], r.stderr_text())
    assert "read %d ok" % queued in r.lines(), (r.lines()[-3:],
                                                 r.stderr_text())


PIPE_SCRIPT = r'''
import hashlib, multiprocessing as mp, time
def child(conn):
    for i in range(1, 81):
        print("tick", i, flush=True)
        time.sleep(0.05)
    data = conn.recv_bytes()
    print("child got", len(data), hashlib.sha256(data).hexdigest(), flush=True)
    conn.send_bytes(b"thanks")
if __name__ == "__main__":
    a, b = mp.Pipe()
    p = mp.Process(target=child, args=(b,))
    p.start()
    blob = bytes((i * 7 + (i >> 12)) & 255 for i in range(3 << 20))
    print("parent sends", len(blob), hashlib.sha256(blob).hexdigest(),
          flush=True)
    a.send_bytes(blob)         # blocks: the child reads only later
    print("parent got", a.recv_bytes().decode(), flush=True)
    p.join()
    print("done", p.exitcode, flush=True)
'''


@pytest.mark.time_limit(300)
def test_multiprocessing_pipe_with_a_blocked_sender(session, tmp_path):
    """python3's multiprocessing: the parent blocked sending 3 MiB
    through a Pipe to a child that reads only later; checkpointed, killed,
    restarted: the child gets every byte (same hash)."""
    s = session
    script = tmp_path / "pipe.py"
    script.write_text(PIPE_SCRIPT)
    p = s.launch(["/usr/bin/python3", str(script)])
    sent = p.wait_line(r"^parent sends .*").group(0)
    p.wait_line(TICK, minimum=max(numbers(p.lines(), TICK)) + 3)
    images = s.checkpoint(expect_images=2)
    s.kill_all()
    p.wait_exit(30)
    r = s.restart(images)
    assert r.wait_exit() == 0, (r.lines()[-3:], r.stderr_text())
    assert "child got %s" % sent.split(" ", 2)[2] in r.lines(), (
        r.lines()[-4:], r.stderr_text())
    assert "parent got thanks" in r.lines() and "done 0" in r.lines()
