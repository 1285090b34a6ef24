# SPDX-License-Identifier: LGPL-2.1-or-later
"""A process stopped with SIGSTOP cannot take part in a checkpoint: the
checkpoint fails within seconds with a message that says so (not at the
round's 300 s timeout), and once the process is continued the next
checkpoint works and the program finishes normally."""

import os
import signal
import time

import pytest

from ckpt_harness import app, reference_output

ARGV = [app("counter"), "80", "50"]
PROGRESS = r"^count (\d+) "


def program_pid(launch_pid):
    """ckpt_launch execs the program: same pid."""
    return launch_pid


@pytest.mark.time_limit(300)
def test_checkpoint_of_a_stopped_process_fails_fast(session):
    p = session.launch(ARGV)
    p.wait_line(PROGRESS, minimum=5)
    os.kill(program_pid(p.pid), signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        r = session.command("--checkpoint")
        elapsed = time.monotonic() - t0
    finally:
        os.kill(program_pid(p.pid), signal.SIGCONT)
    assert r.returncode != 0, "checkpoint of a stopped process succeeded"
    assert "is stopped" in r.stderr + r.stdout, r.stderr
    assert elapsed < 20, "the failure took %.1f s" % elapsed
    images = session.checkpoint()
    assert p.wait_exit() == 0, p.stderr_text()
    assert p.lines()[-1] == reference_output(ARGV)[-1]
    assert images
