# SPDX-License-Identifier: LGPL-2.1-or-later
"""A program that daemonizes (fork, setsid, fork, the parents exit, stdio
on /dev/null) stays in the computation: it is checkpointed after
ckpt_launch has returned, killed, restarted, and its log continues with
no tick lost, none repeated but those written between the checkpoint
and the kill (the log is O_APPEND), and the pid and session id it had."""

import re
import time

import pytest

from ckpt_harness import app

TICKS = 200
TICK = re.compile(r"^tick (\d+) pid (\d+) sid (\d+)$")


def ticks(path):
    try:
        with open(path) as f:
            return [TICK.match(l) for l in f.read().splitlines()
                    if TICK.match(l)]
    except FileNotFoundError:
        return []


def wait_ticks(path, minimum, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        t = ticks(path)
        if t and int(t[-1].group(1)) >= minimum:
            return int(t[-1].group(1))
        time.sleep(0.05)
    raise AssertionError("%s: no tick %d within %d s" % (path, minimum,
                                                          timeout))


@pytest.mark.time_limit(300)
def test_daemon_stays_in_the_computation(session):
    log = session.path("daemon.log")
    p = session.launch([app("daemonize"), log, str(TICKS)])
    assert p.wait_exit(60) == 0, p.stderr_text()
    wait_ticks(log, 10)
    seen = int(ticks(log)[-1].group(1))
    images = session.checkpoint(expect_images=1)
    assert "ckpt_daemonize_" in images[0]
    session.kill_all()
    killed_at = int(ticks(log)[-1].group(1))
    assert killed_at < TICKS
    first = ticks(log)[0]

    r = session.restart(images)
    assert r.wait_exit() == 0, r.stderr_text()
    deadline = time.monotonic() + 60
    while "done" not in open(log).read() and time.monotonic() < deadline:
        time.sleep(0.1)
    t = ticks(log)
    nums = [int(m.group(1)) for m in t]
    # the log is opened O_APPEND: the ticks the daemon wrote between the
    # checkpoint and the kill stay (docs/resources.md, an O_APPEND log
    # gets them a second time), then the restarted daemon goes on from
    # the tick after its checkpoint: 1..killed_at, then k+1..TICKS for
    # the k it had printed at the checkpoint (seen <= k <= killed_at)
    assert nums[:killed_at] == list(range(1, killed_at + 1)), nums[:5]
    resumed = nums[killed_at:]
    assert resumed and seen + 1 <= resumed[0] <= killed_at + 1, (
        seen, killed_at, resumed[:3])
    assert resumed == list(range(resumed[0], TICKS + 1)), resumed[:5]
    assert open(log).read().endswith("done\n")
    assert {(m.group(2), m.group(3)) for m in t} == {
        (first.group(2), first.group(3))}, "pid or session changed"


# The program ckpt_launch started leaves two daemons (orphaned by a
# subshell, so their parent is outside the computation at the
# checkpoint): one that lingers, one that fails once `go` exists. After
# the restart there are three roots; ckpt_restart must return with the
# program's status when the program ends, as ckpt_launch did, not wait
# for the lingering daemon nor take the failing one's status.
LEAVES_DAEMONS = r"""
go=$1
(setsid sleep 300 < /dev/null > /dev/null 2>&1 &)
(setsid sh -c 'while [ ! -e "$0" ]; do sleep 0.05; done; exit 2' "$go" \
    < /dev/null > /dev/null 2>&1 &)
i=0
while [ ! -e "$go" ]; do echo "step $i"; i=$((i+1)); sleep 0.05; done
sleep 1
echo "program ends"
exit 7
"""


@pytest.mark.time_limit(180)
def test_restart_returns_with_the_launched_program(session):
    go = session.path("go")
    p = session.launch(["/bin/sh", "-c", LEAVES_DAEMONS, "sh", go])
    p.wait_line(r"^step (\d+)$", minimum=10, timeout=30)
    session.wait_members(3)
    # plus the short sleeps of the two loops that happen to run
    c = session.command("--checkpoint")
    assert c.returncode == 0, c.stderr
    images = c.stdout.split()
    assert len(images) >= 3, images
    session.kill_all()
    p.wait_exit(30)

    r = session.restart(images)
    r.wait_line(r"^step (\d+)$", minimum=1, timeout=30)
    open(go, "w").close()
    # before: ckpt_restart waited 300 s for the sleep, and would have
    # returned the other daemon's 2
    assert r.wait_exit(60) == 7, (r.lines()[-3:], r.stderr_text())
    assert r.lines()[-1] == "program ends"
    listed = session.command("--list").stdout
    assert re.search(r"\bsleep\b", listed), listed
    session.kill_all()
