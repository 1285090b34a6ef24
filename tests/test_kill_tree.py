# SPDX-License-Identifier: LGPL-2.1-or-later
"""ckpt_command --kill ends the whole computation: its processes on this
host and every process below them, stopped all together first, then
killed. A child that has not joined yet (between fork and its HELLO,
exec'ing) or never will (a static program libckpt cannot follow) would
otherwise run on and see its parent die: a shell whose parent died wrote
"echo: I/O error" into the program's stderr (its pipe had no reader, and
python had SIGPIPE ignored for it)."""

import os
import shutil

import pytest

BUSYBOX = shutil.which("busybox")


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


@pytest.mark.time_limit(120)
@pytest.mark.skipif(not BUSYBOX, reason="busybox is not installed "
                    "(Debian package busybox-static; .ci/install-deps)")
def test_kill_takes_children_that_never_joined(session):
    # busybox is static: it runs without libckpt, never joins
    p = session.launch(["/bin/sh", "-c",
                        "%s sleep 600 & echo child $!; wait" % BUSYBOX])
    m = p.wait_line(r"^child (\d+)")
    child = int(m.group(1))
    assert alive(child)
    r = session.command("--kill")
    assert r.returncode == 0, r.stderr
    # "all processes gone" means gone, non-members below them too: a
    # restart right after must not find what they held (a listening
    # socket's path still answering, seen with gpg-agent's child)
    assert not alive(child), "--kill returned with the child %d still " \
        "running" % child
    assert p.wait_exit(30) is not None


HANDLER = r"""
import signal, sys, time
def note(sig, frame):
    with open(sys.argv[1], "a") as f:
        f.write("handled signal %d\n" % sig)
signal.signal(signal.SIGHUP, note)
signal.signal(signal.SIGTERM, note)
print("ready", flush=True)
for _ in range(600):
    time.sleep(0.1)
"""


@pytest.mark.time_limit(300)
def test_kill_runs_no_signal_handler_of_an_orphaned_group(session,
                                                          tmp_path):
    """A process in a process group of its own (timeout's child, a job of
    a shell with job control, a daemon after setpgid) whose parent dies
    first in the kill: the kernel sends an orphaned group with stopped
    members SIGHUP and SIGCONT, which undid the stop of the kill's first
    pass, and the program ran its handlers after the checkpoint (apache
    began a graceful restart, timeout passed SIGTERM on to its command).
    Killed children first, it never runs again. Five kills: the parent's
    death raced the child's SIGKILL (6 runs in 12 handled a signal)."""
    prog = tmp_path / "handler.py"
    prog.write_text(HANDLER)
    for round in range(5):
        log = tmp_path / ("handled.%d" % round)
        p = session.launch(["/bin/bash", "-c",
                            "for i in $(seq 20); do sleep 60 & done; "
                            "timeout 60 /usr/bin/python3 %s %s; echo end"
                            % (prog, log)])
        p.wait_line(r"^ready")
        session.wait_members(23)
        r = session.command("--kill")
        assert r.returncode == 0, r.stderr
        assert p.wait_exit(30) is not None
        assert not log.exists(), "round %d: %s" % (round, log.read_text())
