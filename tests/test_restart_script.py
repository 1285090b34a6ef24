# SPDX-License-Identifier: LGPL-2.1-or-later
"""ckpt_restart_script.sh: written beside the images by every successful
checkpoint, it restarts the computation with one command."""

import os
import stat

import pytest

from ckpt_harness import (app, checkpoint_and_kill, numbers, Proc,
                          reference_output)

ARGV = [app("counter"), "60", "50"]
PROGRESS = r"^count (\d+) "


@pytest.mark.time_limit(300)
def test_restart_script_restarts_the_computation(session):
    p = session.launch(ARGV)
    images, seen, before = checkpoint_and_kill(session, p, PROGRESS, 10)
    script = os.path.join(session.ckptdir, "ckpt_restart_script.sh")
    st = os.stat(script)
    assert st.st_mode & stat.S_IXUSR and not st.st_mode & 0o077, (
        "script mode %o" % (st.st_mode & 0o777))
    text = open(script).read()
    assert text.startswith("#!/bin/sh\n")
    for img in images:
        assert img in text, "image %s not in the script:\n%s" % (img, text)
    # --host moves the images of one host of several; here all are one's
    r = Proc([script, "--host", "a=b"], session.env, "script --host")
    session.procs.append(r)
    assert r.wait_exit(30) == 2 and "--host: the images of this checkpoint " \
        "all come from one host" in r.stderr_text(), r.stderr_text()
    r = Proc([script], session.env, "ckpt_restart_script.sh")
    session.procs.append(r)
    assert r.wait_exit() == 0, r.stderr_text()
    after = numbers(r.lines(), PROGRESS)
    assert after and after[0] > 1, "did not resume: %r" % after[:3]
    assert r.lines()[-1] == reference_output(ARGV)[-1]
