# SPDX-License-Identifier: LGPL-2.1-or-later
"""POSIX timers (timer_create) survive a restart
(libckpt-preload/posix_timers.c): a program with a SIGEV_SIGNAL, a
SIGEV_THREAD and a SIGEV_THREAD_ID periodic timer counting their
expirations, and SIGEV_NONE timers on CLOCK_MONOTONIC and
CLOCK_PROCESS_CPUTIME_ID (tests/apps/posix_timers.c), checkpointed
mid-run, killed and restarted: the timer_t values it holds still work
(timer_gettime, timer_getoverrun, every tick), each keeps its interval,
the counts go on from where they were at the same rate, the seconds the
program was down neither count nor fire as a flood of missed periods
(but for a CLOCK_REALTIME TIMER_ABSTIME timer, which keeps its deadline),
and timers made after the restart (SIGEV_THREAD, SIGEV_THREAD_ID) fire."""

import re
import time

import pytest

from ckpt_harness import (app, assert_resumed, checkpoint_silently, numbers,
                          restart_and_checkpoint_again)

TICKS = 90
PERIOD_MS = 50
TICK = r"^tick (\d+) "
LINE = re.compile(r"^tick (\d+) ms (\d+) sig (\d+) thr (\d+) tid (\d+) "
                  r"none_ms (\d+) wall_ms (\d+)$")
COUNTS = ("sig", "thr", "tid")


def ticks_of(lines):
    out = []
    for line in lines:
        m = LINE.match(line)
        if m:
            v = [int(x) for x in m.groups()]
            out.append(dict(zip(("tick", "ms") + COUNTS +
                                ("none_ms", "wall_ms"), v)))
    return out


def rate(first, last, name):
    """Expirations per period between two tick lines of one run."""
    periods = (last["ms"] - first["ms"]) / PERIOD_MS
    return (last[name] - first[name]) / periods


@pytest.mark.time_limit(300)
def test_posix_timers_continue_after_restart(session):
    s = session
    p = s.launch([app("posix_timers"), str(TICKS), str(PERIOD_MS)])
    ids = p.wait_line(r"^ids (.*)$").group(1)
    p.wait_line(TICK, minimum=20)
    seen = max(numbers(p.lines(), TICK))
    images = checkpoint_silently(s)
    assert p.alive(), p.stderr_text()
    p.sigkill()
    p.popen.wait(30)
    before = ticks_of(p.lines())
    # 40 periods pass while the program is down
    time.sleep(2)
    r = s.restart(images)
    rc = r.wait_exit()
    lines = r.lines()
    assert rc == 0 and lines[-1] == "OK posix_timers", (
        "exit %d, last lines %r, stderr:\n%s" % (rc, lines[-5:],
                                                r.stderr_text()))
    assert not [l for l in lines if l.startswith("FAIL")], lines
    assert "late ok" in lines, lines
    after = ticks_of(lines)
    assert_resumed([t["tick"] for t in before], [t["tick"] for t in after],
                   TICK, TICKS, seen)
    # the ids the program holds are the ones it printed at the start
    assert re.match(r"^0x[0-9a-f]+ ", ids) or ids.startswith("(nil)"), ids
    at_kill = before[-1]
    first = after[0]
    for name in COUNTS:
        # they go on from the checkpoint: no loss back to 0, no flood of
        # the 40 periods missed while down (a few periods pass between
        # the restart and the first line)
        assert first[name] <= at_kill[name] + 15, (name, at_kill, first)
        assert first[name] >= before[0][name], (name, before[0], first)
        # the same rate before and after: one per period (a timer never
        # fires early; under load a late signal counts its overruns)
        for part, (a, b) in (("before", (before[0], before[-1])),
                             ("after", (after[0], after[-1]))):
            got = rate(a, b, name)
            assert 0.8 <= got <= 1.1, (
                "%s %s the restart: %.2f expirations per period" % (
                    name, part, got))
    # the one-shot SIGEV_NONE timer: its time left goes on from the
    # checkpoint; the 2 s down do not count
    assert first["none_ms"] <= at_kill["none_ms"] + 1000, (at_kill, first)
    assert first["none_ms"] >= at_kill["none_ms"] - 1500, (at_kill, first)
    # the CLOCK_REALTIME TIMER_ABSTIME one keeps its wall-clock deadline:
    # the 2 s down count
    assert first["wall_ms"] <= at_kill["wall_ms"] - 1900, (at_kill, first)
    assert first["wall_ms"] >= at_kill["wall_ms"] - 60000, (at_kill, first)
    assert "cannot" not in r.stderr_text(), r.stderr_text()


@pytest.mark.time_limit(300)
def test_checkpoints_leave_posix_timers_undisturbed(session):
    """Saving the timers takes nothing from them: counts and rates go on
    across three checkpoints of the running program."""
    s = session
    p = s.launch([app("posix_timers"), "60", str(PERIOD_MS)])
    for at in (10, 25, 40):
        p.wait_line(TICK, minimum=at)
        s.checkpoint()
    rc = p.wait_exit()
    lines = p.lines()
    assert rc == 0 and lines[-1] == "OK posix_timers", (
        "exit %d, last lines %r, stderr:\n%s" % (rc, lines[-5:],
                                                p.stderr_text()))
    ticks = ticks_of(lines)
    for name in COUNTS:
        assert 0.8 <= rate(ticks[0], ticks[-1], name) <= 1.1, (name, ticks)


@pytest.mark.time_limit(300)
def test_restarted_timers_restart_again(session):
    """The restored timers (and libckpt's SIGEV_THREAD helper thread, now
    at another tid) are saved like the first ones: a second checkpoint,
    kill and restart goes on too."""
    s = session
    p = s.launch([app("posix_timers"), str(TICKS), str(PERIOD_MS)])
    p.wait_line(TICK, minimum=10)
    images = s.checkpoint()
    p.sigkill()
    p.popen.wait(30)
    r1, seen, images = restart_and_checkpoint_again(s, images, TICK, 40)
    before = ticks_of(r1.lines())
    r2 = s.restart(images)
    rc = r2.wait_exit()
    lines = r2.lines()
    assert rc == 0 and lines[-1] == "OK posix_timers", (
        "exit %d, last lines %r, stderr:\n%s" % (rc, lines[-5:],
                                                r2.stderr_text()))
    assert "late ok" in lines, lines
    after = ticks_of(lines)
    assert_resumed([t["tick"] for t in before], [t["tick"] for t in after],
                   TICK, TICKS, seen)
    for name in COUNTS:
        assert after[0][name] <= before[-1][name] + 15, (name, before[-1],
                                                         after[0])
        assert 0.8 <= rate(after[0], after[-1], name) <= 1.1, (name, after)


@pytest.mark.time_limit(300)
def test_timer_on_a_threads_cpu_clock_is_named(session):
    """A timer on a thread's CPU clock cannot be made again (the kernel
    does not say which thread): the checkpoint names it, the restart
    leaves it out, the other timers come back."""
    s = session
    p = s.launch([app("posix_timers"), "60", str(PERIOD_MS), "threadcpu"])
    kid = int(p.wait_line(r"^threadcpu (\d+)$").group(1))
    p.wait_line(TICK, minimum=10)
    seen = max(numbers(p.lines(), TICK))
    r = s.command("--checkpoint")
    assert r.returncode == 0, r.stderr
    rx = re.compile(r"^warning: posix_timers \(vpid %d, pid \d+, host "
                    r"[^)]*\): POSIX timer %d \(clock -2\): it runs on a "
                    r"thread's CPU clock, which a restart cannot tell; a "
                    r"restart leaves it out$" % (p.pid, kid))
    err = r.stderr.splitlines()
    assert len(err) == 1 and rx.match(err[0]), err
    images = r.stdout.split()
    p.sigkill()
    p.popen.wait(30)
    before = numbers(p.lines(), TICK)
    r = s.restart(images)
    rc = r.wait_exit()
    lines = r.lines()
    assert rc == 0 and lines[-1] == "OK posix_timers", (
        "exit %d, last lines %r, stderr:\n%s" % (rc, lines[-5:],
                                                r.stderr_text()))
    assert_resumed(before, numbers(lines, TICK), TICK, 60, seen)
