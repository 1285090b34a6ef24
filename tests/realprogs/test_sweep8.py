# SPDX-License-Identifier: LGPL-2.1-or-later
"""Fourth sweep of Debian programs (docs/real-programs.md, "fourth
sweep"): each run natively, then under ckpt through two checkpoint ->
kill -> restart cycles (realprogs/driver.py), the output compared.

- GNU screen: a detached session whose job counts into a file, `screen
  -ls` asked every half second, `hardcopy` and `quit` at the end. screen
  closes every descriptor as it starts (libckpt's coordinator connection
  among them, before wrappers/close.c) and keeps a session's state in
  the mode of its socket file ("Unknown" after a restart that made the
  file with the umask's mode, before restart_listeners.c set it back).
- git daemon: 16 clones over git:// on a loopback port, each checked.
  git daemon serves a connection in a child that has it on its stdin
  and stdout; fds 0-2 were always taken from ckpt_restart's stdio, so
  the child wrote to a closed descriptor ("fatal: write error: Bad file
  descriptor") and the clone in progress failed.
"""

import pytest

import os
import subprocess

from realprogs.driver import check_program, require
from realprogs.test_sweep7 import Scripted, write

SCREEN = r"""
export SCREENDIR=$PWD/screens
mkdir -m 700 screens
screen -dmS job bash -c 'for i in $(seq 1 36); do echo $i >> count.txt;
    echo "line $i"; sleep 0.25; done; sleep 60'
for k in $(seq 1 200); do
    sleep 0.5
    echo "ls $(screen -ls | grep -c 'job.*(Detached)')" >> ls.txt
    [ "$(wc -l < count.txt)" -ge 36 ] && break
done
sort ls.txt | uniq
sleep 0.5
screen -S job -X hardcopy "$PWD/hardcopy.txt"
sleep 0.5
grep -c '^line 36$' hardcopy.txt
screen -S job -X quit
sleep 0.5
echo "after quit $(screen -ls | grep -c job)"
echo done
"""


class Screen(Scripted):
    name = "screen"
    script = SCREEN
    # the pane's copy may miss a line that was inside the pty at a
    # checkpoint (docs/resources.md, "Pseudo-terminals"): said by grep
    files_skip = (r"hardcopy\.txt", r"screens", r"ls\.txt")

    def progress(self, run):
        return run.read(run.path("count.txt")).count(b"\n")


@pytest.mark.time_limit(400)
def test_screen_detached_session(session):
    require("/usr/bin/screen", "screen")
    check_program(session, Screen())


GIT_DAEMON = r"""
port=$1
git daemon --reuseaddr --listen=127.0.0.1 --port=$port --base-path=$PWD \
    --export-all $PWD > daemon.log 2>&1 & d=$!
for t in $(seq 1 100); do
    git ls-remote git://127.0.0.1:$port/repo.git > /dev/null 2>&1 && break
    sleep 0.1
done
for i in $(seq 1 16); do
    rm -rf c
    timeout 20 git clone -q git://127.0.0.1:$port/repo.git c
    echo "clone $i $(git -C c log --oneline | wc -l) $(cat c/f17)"
    sleep 0.3
done
kill $d; wait $d
echo done
"""


class GitDaemon(Scripted):
    name = "git-daemon"
    script = GIT_DAEMON
    files_skip = (r"^c/", r"daemon\.log")

    def setup(self, work):
        super().setup(work)
        env = dict(os.environ, GIT_AUTHOR_NAME="a", GIT_AUTHOR_EMAIL="a@b",
                   GIT_COMMITTER_NAME="a", GIT_COMMITTER_EMAIL="a@b")
        src = os.path.join(work, "src")
        subprocess.run(["git", "init", "-q", "-b", "main", src], check=True,
                       env=env, timeout=60)
        for i in range(1, 41):
            write(src, "f%d" % i, "%d\n" % (i * i))
            subprocess.run(["git", "-C", src, "add", "f%d" % i], check=True,
                           env=env, timeout=60)
            subprocess.run(["git", "-C", src, "commit", "-qm", "c%d" % i],
                           check=True, env=env, timeout=60)
        subprocess.run(["git", "clone", "-q", "--bare", src,
                        os.path.join(work, "repo.git")], check=True,
                       env=env, timeout=60)


@pytest.mark.time_limit(400)
def test_git_daemon_clones(session):
    require("/usr/bin/git", "git")
    check_program(session, GitDaemon())
