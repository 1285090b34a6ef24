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
"""

import pytest

from realprogs.driver import check_program, require
from realprogs.test_sweep7 import Scripted

SCREEN = r"""
export SCREENDIR=$PWD/screens
mkdir -m 700 screens
screen -dmS job bash -c 'for i in $(seq 1 60); do echo $i >> count.txt;
    echo "line $i"; sleep 0.25; done; sleep 60'
for k in $(seq 1 200); do
    sleep 0.5
    echo "ls $(screen -ls | grep -c 'job.*(Detached)')" >> ls.txt
    [ "$(wc -l < count.txt)" -ge 60 ] && break
done
sort ls.txt | uniq
sleep 0.5
screen -S job -X hardcopy "$PWD/hardcopy.txt"
sleep 0.5
grep -c '^line 60$' hardcopy.txt
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
