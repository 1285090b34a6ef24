# SPDX-License-Identifier: LGPL-2.1-or-later
"""Locks glibc takes inside itself, never through libckpt's wrappers: a
rwlock records the thread id of its writer (__cur_writer), and a thread
restored with a new tid that unlocks one it write-held at the checkpoint
is taken for a reader: the lock stays write-held forever, and the next
setlocale() hangs (seen as `as` hanging after a restart of make -j2).
setlocale_loop is almost always inside setlocale, holding glibc's
__libc_setlocale_lock, when it is stopped; after each restart it must go
on switching locales to the end."""

import pytest

from ckpt_harness import app, checkpoint_and_kill, numbers

ROUND = r"^round (\d+)$"
ROUNDS = 400


@pytest.mark.time_limit(300)
def test_setlocale_lock_held_at_checkpoint(session):
    p = session.launch([app("setlocale_loop"), str(ROUNDS)])
    images, seen, before = checkpoint_and_kill(session, p, ROUND, 5)
    for restart in range(3):
        r = session.restart(images)
        r.wait_line(ROUND, minimum=before[-1] + 5, timeout=30)
        if restart == 2:
            break
        images = session.checkpoint()
        session.kill_all()
        r.wait_exit(30)
        before = numbers(r.lines(), ROUND)
    assert r.wait_exit() == 0, r.stderr_text()
    assert r.lines()[-1] == "done", r.lines()[-3:]
