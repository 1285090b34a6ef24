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
