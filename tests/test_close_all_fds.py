# SPDX-License-Identifier: LGPL-2.1-or-later
"""A program that closes every descriptor it did not open, as daemons do
as they start (screen, bwrap, sshd: close() up to the limit,
close_range, closefrom), closes its own and not libckpt's: the
coordinator connection stays (no "lost the coordinator", no joining
again), the closing calls report what they report without ckpt (EBADF
for a number not open to the program), and the process is checkpointed,
killed and restarted with its counter continued exactly and a file it
opened after the closing intact (wrappers/close.c)."""

import pytest

from ckpt_harness import app, checkpoint_and_kill, restart_to_end

PROGRESS = r"^count (\d+) "
STEPS, PAUSE_MS = 120, 20


@pytest.mark.time_limit(180)
@pytest.mark.parametrize("how", ["loop", "range", "from", "syscall"])
def test_closing_every_descriptor_leaves_the_coordinators(session, how):
    p = session.launch([app("close_all_fds"), how, str(STEPS),
                        str(PAUSE_MS)])
    p.wait_line(r"^closed ", timeout=30)
    images, seen, before = checkpoint_and_kill(session, p, PROGRESS, 10)
    err = p.stderr_text()
    assert "coordinator" not in err, (
        "closing every descriptor took the coordinator connection:\n%s"
        % err)
    r, _ = restart_to_end(session, images, PROGRESS, STEPS, seen, before)
    assert "file ok" in r.lines(), r.lines()[-3:]
    assert "coordinator" not in r.stderr_text(), r.stderr_text()
