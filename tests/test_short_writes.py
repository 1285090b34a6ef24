# SPDX-License-Identifier: LGPL-2.1-or-later
"""A checkpoint never cuts a write short. `python3 -u` writes 256 KiB
chunks to a pipe with sys.stdout.buffer.write (one write(2) each, the
count ignored, as programs do that never see a signal) faster than a slow
reader takes them, so checkpoints catch the writer blocked in the middle
of a chunk. A signal handler that interrupts such a write returns the
short count even under SA_RESTART: without the write wrappers
(wrappers/write.c) the rest of the chunk was lost, at every checkpoint
and again at restart, and the reader's byte count and checksum were
wrong."""

import pytest

from ckpt_harness import numbers, reference_output

PYTHON = "/usr/bin/python3"
CHUNKS = 64
WRITER = r"""
import hashlib, sys
for i in range(%d):
    block = hashlib.sha256(b"%%d" %% i).digest() * 8192
    sys.stdout.buffer.write(block)
""" % CHUNKS
READER = r"""
import hashlib, sys, time
h, total, mark = hashlib.sha256(), 0, 0
while True:
    data = sys.stdin.buffer.read1(65536)
    if not data:
        break
    h.update(data)
    total += len(data)
    if total // (1 << 20) > mark:
        mark = total // (1 << 20)
        print("mib", mark, flush=True)
    time.sleep(0.01)
print("final", total, h.hexdigest(), flush=True)
"""
ARGV = ["/bin/sh", "-c", "%s -u -c '%s' | %s -c '%s'" % (
    PYTHON, WRITER, PYTHON, READER)]
PROGRESS = r"^mib (\d+)$"
LAST_MIB = CHUNKS // 4


def expected_final():
    ref = reference_output(ARGV)
    assert ref[-1] == "final %d %s" % (CHUNKS << 18, ref[-1].split()[2])
    return ref[-1]


@pytest.mark.time_limit(300)
def test_checkpoints_do_not_cut_writes_short(session):
    final = expected_final()
    p = session.launch(ARGV)
    for mib in (2, 4, 6, 8, 10):
        p.wait_line(PROGRESS, minimum=mib)
        session.checkpoint(expect_images=3)
    assert p.wait_exit() == 0, p.stderr_text()
    assert numbers(p.lines(), PROGRESS)[-1] == LAST_MIB
    assert p.lines()[-1] == final


@pytest.mark.time_limit(300)
def test_restart_completes_the_cut_write(session):
    final = expected_final()
    p = session.launch(ARGV)
    p.wait_line(PROGRESS, minimum=4)
    images = session.checkpoint(expect_images=3)
    session.kill_all()
    p.popen.wait(30)
    assert final not in p.lines()
    r = session.restart(images)
    assert r.wait_exit() == 0, r.stderr_text()
    assert r.lines()[-1] == final, r.lines()[-3:]
