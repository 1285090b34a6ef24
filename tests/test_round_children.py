# SPDX-License-Identifier: LGPL-2.1-or-later
"""Before any image is written, the coordinator waits for every child of
a member that has not joined (docs/protocol.md, "Members of a round").
Each process lists its own children in its SUSPENDED message, all of
them: a shell with more children than the coordinator used to read from
/proc for one process (64), the last one a static program that never
joins, must fail the round naming that child; a round that missed it
would save images without it."""

import grp
import os
import re
import shutil
import time

import pytest

from ckpt_harness import ROOT, app

BUSYBOX = shutil.which("busybox")
SLEEPERS = 70
NOGROUP_GID = grp.getgrnam("nogroup").gr_gid


def wait_members(session, n, timeout=120):
    """Until --list shows n processes (each forked shell child joins,
    then joins again as sleep after its exec)."""
    deadline = time.monotonic() + timeout
    listed = []
    while time.monotonic() < deadline:
        listed = session.command("--list").stdout.splitlines()
        if len(listed) >= n:
            return listed
        time.sleep(0.2)
    raise AssertionError("%d of %d processes joined within %ds" % (
        len(listed), n, timeout))


@pytest.mark.time_limit(240)
@pytest.mark.skipif(not BUSYBOX, reason="busybox is not installed "
                    "(Debian package busybox-static; .ci/install-deps)")
def test_child_after_the_64th_that_never_joins_fails_the_round(session):
    # dash forks the sleepers in order; the kernel lists children oldest
    # first, so the static one (no libckpt: never joins) comes after them
    script = ("i=0; while [ $i -lt %d ]; do sleep 600 & i=$((i+1)); done; "
              "%s sleep 600 & echo child $!; wait" % (SLEEPERS, BUSYBOX))
    p = session.launch(["/bin/sh", "-c", script])
    child = int(p.wait_line(r"^child (\d+)").group(1))
    wait_members(session, SLEEPERS + 1)
    time.sleep(1)   # an exec'ing sleeper joins again
    r = session.command("--checkpoint")
    assert r.returncode != 0, (
        "the checkpoint succeeded without the static child %d: %r" % (
            child, r.stdout))
    assert re.search(r"process %d \([^)]*\), a child of pid \d+ did not "
                     r"join" % child, r.stderr), r.stderr
    session.kill_all()
    assert p.wait_exit(30) is not None


@pytest.mark.time_limit(120)
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make a "
                    "set-group-ID program of another group")
def test_child_running_a_set_id_program_is_named(session):
    # Debian's ssh-agent is set-group-ID _ssh: the loader does not
    # preload libckpt into it, so it never joins. A set-group-ID copy of
    # a test program (on the build directory: /tmp may be nosuid) does
    # the same wherever ssh-agent is missing.
    prog = os.path.join(ROOT, "build", "tests", "setgid_counter")
    if os.statvfs(os.path.dirname(prog)).f_flag & os.ST_NOSUID:
        pytest.skip("the build directory is on a nosuid mount")
    shutil.copy(app("counter"), prog)
    os.chown(prog, 0, NOGROUP_GID)
    os.chmod(prog, 0o2755)
    try:
        script = "%s 600 100 > /dev/null & echo child $!; wait" % prog
        p = session.launch(["/bin/sh", "-c", script])
        child = int(p.wait_line(r"^child (\d+)").group(1))
        wait_members(session, 1)
        r = session.command("--checkpoint")
        assert r.returncode != 0, r.stdout
        # "a child of pid M" when the coordinator learnt the child from
        # its parent's list, not when it knew it as a member before its
        # exec (timing)
        assert re.search(r"process %d \(setgid_counter\)(, a child of pid "
                         r"\d+)? runs a set-user/group-ID program" % child,
                         r.stderr), r.stderr
        session.kill_all()
        assert p.wait_exit(30) is not None
    finally:
        os.unlink(prog)
