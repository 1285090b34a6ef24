# SPDX-License-Identifier: LGPL-2.1-or-later
"""One shared object that one process maps twice, and nobody else: the
BEAM JIT (Erlang) maps its code memfd writable and executable and closes
the fd; a SysV segment attached twice. ckpt_restart made each mapping a
private copy of its own (an object was shared only when two images
mapped it, and a single image took the loader's direct path without
any), so after a restart writes through one view never showed in the
other: Erlang failed to load any module it had not loaded yet
(`{error,badfile}`). Both views must stay one object.

The first SysV segment of an IPC namespace (of a machine, after boot)
has id 0, and the image named a segment by its id, where 0 meant "no
shared object": such a segment's two views came back as two copies
(seen when this test happened to make the machine's first segment). The
"sysv-first" case runs the program in an IPC namespace of its own (root:
`unshare --ipc`), where its segment gets id 0."""

import os
import shutil

import pytest

from ckpt_harness import app, checkpoint_and_kill, restart_to_end

PROGRESS = r"^count (\d+) "
STEPS, PAUSE_MS = 150, 20


@pytest.mark.time_limit(180)
@pytest.mark.parametrize("kind", ["memfd", "sysv", "sysv-first"])
def test_two_views_of_one_object_stay_one(session, kind):
    argv = [app("dual_view"), kind.split("-")[0], str(STEPS), str(PAUSE_MS)]
    if kind == "sysv-first":
        if os.geteuid() != 0 or not shutil.which("unshare"):
            pytest.skip("a new IPC namespace needs root and unshare")
        argv = ["unshare", "--ipc"] + argv
    p = session.launch(argv)
    images, seen, before = checkpoint_and_kill(session, p, PROGRESS, 10)
    r, _ = restart_to_end(session, images, PROGRESS, STEPS, seen, before)
    last = r.lines()[-1].split()
    assert last[0] == "done" and last[3] == "0", (
        "the two views disagreed after the restart: %r" % r.lines()[-3:])
