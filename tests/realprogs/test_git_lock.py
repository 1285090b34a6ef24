# SPDX-License-Identifier: LGPL-2.1-or-later
"""A lock file made after the checkpoint by a process then killed (git's
index.lock). git holds .git/index.lock from the start of `git commit`
until its editor returns; a computation killed meanwhile left the lock on
disk, and the restored script, which had not started that commit yet,
failed on it: "fatal: Unable to create '.../.git/index.lock': File
exists", and so did every later git command. libckpt records every file
made exclusively in .ckpt_created of the checkpoint directory
(include/ckpt/created_journal.h); ckpt_restart removes those made after
its checkpoint by a process no longer running (docs/restart.md, "Files
made after the checkpoint").

Made certain here: the script waits for a file before the commit, the
checkpoint comes before it, the commit's editor waits for a second file,
and the computation is killed once index.lock exists."""

import os
import subprocess
import time

import pytest

from realprogs.test_git_gc import GIT, GIT_ENV

SCRIPT = r"""
set -e
cd "$1"
for i in 1 2 3; do echo "line $i" >> f; git add f; git commit -qm "c$i"; done
echo "line 4" >> f
git add f
echo ready
while [ ! -e "$2/go" ]; do sleep 0.05; done
git commit -a -q
echo "committed $(git log --oneline | wc -l) $(git status --porcelain | wc -l)"
git log --format=%s | tr '\n' ' '; echo
"""

# the editor of the 4th commit: says it runs (git made index.lock, and
# its journal record, before it started the editor), waits (bounded) for
# `release`, then writes the message
EDITOR = r"""#!/bin/sh
: > "%(dir)s/editing"
i=0
while [ ! -e "%(dir)s/release" ] && [ $i -lt 1200 ]; do
    sleep 0.05; i=$((i + 1))
done
echo c4 > "$1"
"""


def wait_for(pred, timeout, what):
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, "no %s within %d s" % (
            what, timeout)
        time.sleep(0.05)


def killed_while_locked(s):
    """The script launched, checkpointed before its 4th commit, the commit
    started and killed with index.lock held; returns (images, lock)."""
    if not os.access(GIT, os.X_OK):
        pytest.skip("git is not installed")
    repo, flags = s.path("repo"), s.path("flags")
    os.makedirs(flags)
    subprocess.run([GIT, "init", "-q", repo], check=True, timeout=60)
    editor = s.path("editor.sh")
    with open(editor, "w") as f:
        f.write(EDITOR % {"dir": flags})
    os.chmod(editor, 0o755)
    script = s.path("commit.sh")
    with open(script, "w") as f:
        f.write(SCRIPT)
    s.env.update(GIT_ENV)
    s.env.update({"GIT_EDITOR": editor, "LC_ALL": "C",
                  "GIT_AUTHOR_DATE": "1700000000 +0000",
                  "GIT_COMMITTER_DATE": "1700000000 +0000"})
    p = s.launch(["/bin/bash", script, repo, flags])
    p.wait_line(r"^ready$")
    r = s.command("--checkpoint")   # bash and its sleep
    assert r.returncode == 0, r.stderr
    images = r.stdout.split()
    lock = os.path.join(repo, ".git", "index.lock")
    open(os.path.join(flags, "go"), "w").close()
    # not at the lock's first sight: a kill between git's open and
    # libckpt's record would leave a lock no journal names (a window of
    # one system call, docs/restart.md)
    wait_for(lambda: os.path.exists(os.path.join(flags, "editing")), 60,
             "the editor")
    assert os.path.exists(lock)
    s.kill_all()
    p.wait_exit(30)
    assert os.path.exists(lock), "the kill removed the lock: no test"
    return images, lock, flags


@pytest.mark.time_limit(240)
def test_lock_made_after_the_checkpoint_is_removed_at_restart(session):
    s = session
    images, lock, flags = killed_while_locked(s)
    r = s.restart(images)
    wait_for(lambda: os.path.exists(lock), 60, "index.lock again")
    open(os.path.join(flags, "release"), "w").close()
    assert r.wait_exit(120) == 0, r.stderr_text()
    assert r.lines()[-2:] == ["committed 4 0", "c4 c3 c2 c1 "], \
        (r.lines(), r.stderr_text())
    assert "removed %s: made by git" % lock in r.stderr_text(), \
        r.stderr_text()
    assert "File exists" not in r.stderr_text()


@pytest.mark.time_limit(240)
def test_keep_files_made_after_leaves_the_lock(session):
    """--keep-files-made-after: the lock stays, and git says why it
    cannot commit, as it did before the restart removed such files."""
    s = session
    images, lock, flags = killed_while_locked(s)
    r = s.start([s.tool("ckpt_restart"), "--keep-files-made-after"] +
                images, "restart keeping files")
    assert r.wait_exit(120) == 128, r.stderr_text()
    assert "Unable to create '%s': File exists" % lock in r.stderr_text()
    assert "removed" not in r.stderr_text()
    assert os.path.exists(lock)
