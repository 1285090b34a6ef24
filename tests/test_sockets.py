# SPDX-License-Identifier: LGPL-2.1-or-later
"""A socketpair(AF_UNIX, SOCK_STREAM) between a parent and its child comes
back connected, with the bytes queued in both directions at the
checkpoint neither lost nor doubled."""

import re

import pytest

from ckpt_harness import app, numbers, reference_output

COUNT = 600
ARGV = [app("sock_pingpong"), str(COUNT), "8", "3"]
REPLY = r"^reply (\d+)$"


@pytest.mark.time_limit(300)
def test_socketpair_restart(session):
    ref = reference_output(ARGV)
    assert ref[-1].startswith("OK sockets ")
    p = session.launch(ARGV)
    p.wait_line(REPLY, minimum=60)
    seen = max(numbers(p.lines(), REPLY))
    images = session.checkpoint(expect_images=2)
    # The pair keeps working after its queues were read (peeked) for the
    # images.
    p.wait_line(REPLY, minimum=seen + 30)
    session.kill_all()
    p.popen.wait(30)
    before = numbers(p.lines(), REPLY)
    assert not any(l.startswith("FAIL") for l in p.lines())
    saved = 0
    for img in images:
        saved += sum(int(n) for n in re.findall(
            r"unix-stream .*\((\d+) bytes saved\)", session.inspect(img)))
    assert saved >= 64, "no queued bytes were saved"

    r = session.restart(images)
    rc = r.wait_exit()
    lines = r.lines()
    assert rc == 0 and lines[-1] == ref[-1], (
        "exit %d, last lines %r, stderr:\n%s" % (rc, lines[-5:],
                                                r.stderr_text()))
    after = numbers(lines, REPLY)
    assert seen < after[0] <= before[-1] + 1
    assert after == list(range(after[0], COUNT + 1))
