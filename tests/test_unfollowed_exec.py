# SPDX-License-Identifier: LGPL-2.1-or-later
"""A program libckpt cannot follow into its exec (statically linked, as
valgrind's tool and busybox are; set-ID) leaves the computation and runs
exactly as without ckpt, and so do its descendants: libckpt is taken out
of LD_PRELOAD and ckpt's variables out of the environment, so it is not
loaded into valgrind's guest (where it changed the exit status that
--error-exitcode gives) nor into the dynamic programs a static shell
starts."""

import os
import re
import shutil

import pytest

from ckpt_harness import app, run

VALGRIND = shutil.which("valgrind")
BUSYBOX = shutil.which("busybox")
LEAK_OPTS = ["--error-exitcode=7", "--leak-check=full",
             "--errors-for-leak-kinds=all"]


def plain_env(session):
    return {k: v for k, v in session.env.items()
            if not k.startswith("CKPT_") and k != "LD_PRELOAD"}


def normalized(stderr):
    """valgrind's report without its pid prefixes and without ckpt's own
    messages (the warning that the static tool runs without checkpoints)."""
    out = []
    for line in stderr.splitlines():
        if line.startswith("ckpt[") or line.startswith("ckpt_launch:"):
            continue
        out.append(re.sub(r"^==\d+==", "==PID==", line))
    return out


def compare_with_plain(session, argv):
    plain = run(argv, 120, env=plain_env(session))
    under = run([session.tool("ckpt_launch"), "--"] + argv, 120,
                env=session.env)
    assert under.returncode == plain.returncode, (
        "exit %d under ckpt_launch, %d without; stderr under ckpt:\n%s" % (
            under.returncode, plain.returncode, under.stderr))
    assert under.stdout == plain.stdout
    assert normalized(under.stderr) == normalized(plain.stderr), (
        "valgrind reports differently under ckpt_launch:\n%s" %
        under.stderr)
    return plain


@pytest.mark.time_limit(300)
@pytest.mark.skipif(not VALGRIND, reason="valgrind is not installed "
                    "(.ci/install-deps installs it)")
def test_valgrind_true_same_exit_status(session):
    plain = compare_with_plain(session, [VALGRIND] + LEAK_OPTS +
                               ["/bin/true"])
    assert plain.returncode == 0


@pytest.mark.time_limit(300)
@pytest.mark.skipif(not VALGRIND, reason="valgrind is not installed "
                    "(.ci/install-deps installs it)")
def test_valgrind_leaking_program_same_report(session):
    plain = compare_with_plain(session, [VALGRIND] + LEAK_OPTS +
                               [app("leaky"), "10"])
    assert plain.returncode == 7 and plain.stdout == "leaked 10\n"
    assert "definitely lost: 1,000 bytes in 10 blocks" in plain.stderr


@pytest.mark.time_limit(120)
@pytest.mark.skipif(not BUSYBOX, reason="busybox is not installed "
                    "(.ci/install-deps installs busybox-static)")
def test_descendants_of_a_static_shell_run_without_ckpt(session):
    """bash (followed) runs the static busybox sh, which runs the dynamic
    /bin/cat and env: neither gets libckpt or ckpt's variables."""
    script = ("%s sh -c '/bin/cat /proc/self/maps; /usr/bin/env'" % BUSYBOX)
    r = run([session.tool("ckpt_launch"), "--", "/bin/bash", "-c", script],
            60, env=session.env)
    assert r.returncode == 0, r.stderr
    assert "libckpt" not in r.stdout, (
        "libckpt reached a descendant of a static program:\n%s" %
        "\n".join(l for l in r.stdout.splitlines() if "ckpt" in l.lower()))
    assert not [l for l in r.stdout.splitlines() if l.startswith("CKPT_")]
    assert "statically linked" in r.stderr, r.stderr
