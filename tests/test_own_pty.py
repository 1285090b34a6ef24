# SPDX-License-Identifier: LGPL-2.1-or-later
"""A pseudo-terminal the computation made itself (docs/resources.md,
"Pseudo-terminals the computation made"): `script` runs counter in a new
pty and copies what it prints to its stdout. Checkpointed mid-run, killed
and restarted with no terminal at all, the counter goes on printing
through a new pty to script, from where it was, and that pty is its
controlling terminal again. Before, both ends became /dev/null: script
read EOF at once and the counter's output was lost."""

import os
import shutil

import pytest

from ckpt_harness import app, assert_resumed, numbers

PROGRESS = r"count (\d+) "
LAST = 300


def tty_nr(pid):
    with open("/proc/%d/stat" % pid) as f:
        stat = f.read()
    return int(stat[stat.rindex(")") + 2:].split()[4])


def find_child(parent, name):
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                stat = f.read()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        rest = stat[stat.rindex(")") + 2:].split()
        if comm == name and int(rest[1]) == parent:
            return int(d)
    return None


@pytest.mark.time_limit(300)
def test_script_pty_restored(session):
    script = shutil.which("script")
    if not script:
        pytest.skip("script (util-linux) is not installed")
    session.env["SHELL"] = "/bin/sh"
    p = session.launch([script, "-qfec", "exec %s %d 40" % (
        app("counter"), LAST), "/dev/null"])
    p.wait_line(PROGRESS, minimum=30)
    seen = max(numbers(p.lines(), PROGRESS))
    r = session.command("--checkpoint")
    assert r.returncode == 0, r.stderr
    images = r.stdout.split()
    assert len(images) == 2, "script and counter: %r" % images
    assert "pty" not in r.stderr, r.stderr
    session.kill_all()
    p.wait_exit(30)
    before = numbers(p.lines(), PROGRESS)

    rs = session.restart(images)
    rs.wait_line(PROGRESS, minimum=before[-1] + 5)
    counter = find_child(rs.pid, "counter")
    assert counter, "no counter under the restarted script"
    assert tty_nr(counter) != 0, "the counter has no controlling terminal"
    assert rs.wait_exit() == 0, rs.stderr_text()
    after = numbers(rs.lines(), PROGRESS)
    assert_resumed(before, after, PROGRESS, LAST, seen)
    assert "/dev/null" not in rs.stderr_text(), rs.stderr_text()
