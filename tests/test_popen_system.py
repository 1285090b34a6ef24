# SPDX-License-Identifier: LGPL-2.1-or-later
"""system() and popen()/pclose(): the shells they start are in the
computation, the popen pipe between program and shell comes back
connected (no number lost or read twice), and the exit statuses pclose()
and system() return after a restart are the shells' (glibc's own
versions wait for the shell's old pid with a call no preload sees)."""

import pytest

from ckpt_harness import app, numbers

TICKS = 40


def done_line(n):
    return "done count %d sum %d system0 3 pclose 5 system 9" % (
        n, n * (n + 1) // 2)


def restart_and_check(session, n, progress, at):
    """Run popen_system n, checkpoint once `progress` reaches `at`, kill,
    restart: the restarted run, whose last line must be the right one."""
    p = session.launch([app("popen_system"), str(n), str(TICKS)])
    p.wait_line(progress, minimum=at)
    images = session.command("--checkpoint")
    assert images.returncode == 0, images.stderr
    # the program and its shell, and maybe a sleep of the shell
    assert len(images.stdout.split()) >= 2, images.stdout
    session.kill_all()
    p.popen.wait(30)
    assert done_line(n) not in p.lines()
    r = session.restart(images.stdout.split())
    assert r.wait_exit() == 0, "%r %s" % (r.lines()[-3:], r.stderr_text())
    assert r.lines()[-1] == done_line(n), r.lines()[-3:]
    return r


@pytest.mark.time_limit(300)
def test_popen_restart(session):
    r = restart_and_check(session, 300, r"^got (\d+) ", 100)
    got = numbers(r.lines(), r"^got (\d+) ")
    assert got[0] > 100 and got == list(range(got[0], 301)), got[:3]


@pytest.mark.time_limit(300)
def test_system_restart(session):
    r = restart_and_check(session, 20, r"^tick (\d+)$", 10)
    ticks = numbers(r.lines(), r"^tick (\d+)$")
    assert ticks and ticks[-1] == TICKS, ticks[-3:]
