# SPDX-License-Identifier: LGPL-2.1-or-later
"""Signal state across checkpoints and restarts: pending signals with their
values, the alarm timer's remaining time, the checkpoint signal hidden
from the program, and no EINTR from a checkpoint in calls the kernel does not
restart by itself."""

import re

import pytest

from ckpt_harness import app, checkpoint_and_kill, numbers

TICKS = 60
ALARM_S = 3          # fires near tick 30 of the program's own running time
TICK = r"^tick (\d+)$"
RESULT = re.compile(r"^result usr1 (\d+) rt (\d+) value (\d+) alarm_tick "
                    r"(-?\d+) reserved_ok (\d+)$")


def parse_result(lines):
    for line in lines:
        m = RESULT.match(line)
        if m:
            return [int(x) for x in m.groups()]
    raise AssertionError("no result line in %r" % lines[-5:])


@pytest.mark.time_limit(300)
def test_signal_state_survives_restart(session):
    p = session.launch([app("signal_state"), str(TICKS), str(ALARM_S)])
    images, seen, before = checkpoint_and_kill(session, p, TICK, 10)
    assert before[-1] < 25, "killed too late to test the alarm: %r" % before
    r = session.restart(images)
    rc = r.wait_exit()
    assert rc == 0, "restart exit %d: %s" % (rc, r.stderr_text())
    after = numbers(r.lines(), TICK)
    assert after and after[0] > 1 and after[-1] == TICKS, after[:5]
    usr1, rt, value, alarm_tick, reserved_ok = parse_result(r.lines())
    assert (usr1, rt, value) == (1, 1, 4242), (
        "pending signals after restart: usr1 %d rt %d value %d" % (
            usr1, rt, value))
    # The timer runs on the program's time: it was re-armed with what was
    # left at the checkpoint, so it fires near tick 30, not at once and
    # not never. The margin covers a loaded machine.
    assert 24 <= alarm_tick <= 45, "alarm fired at tick %d" % alarm_tick
    assert reserved_ok == 1, "the checkpoint signal was visible to the program"


@pytest.mark.time_limit(300)
def test_signal_state_unchanged_by_checkpoints(session):
    p = session.launch([app("signal_state"), "40", "2"])
    for at in (5, 10, 15):
        p.wait_line(TICK, minimum=at)
        session.checkpoint()
    rc = p.wait_exit()
    assert rc == 0, p.stderr_text()
    usr1, rt, value, alarm_tick, reserved_ok = parse_result(p.lines())
    assert (usr1, rt, value, reserved_ok) == (1, 1, 4242, 1)
    assert 17 <= alarm_tick <= 30, "alarm fired at tick %d" % alarm_tick


CALL = re.compile(r"^call (\w+) rc (-?\d+) errno (\d+) elapsed_ms (\d+)$")


def check_calls(lines, seconds, min_ms):
    calls = {}
    for line in lines:
        m = CALL.match(line)
        if m:
            calls[m.group(1)] = [int(x) for x in m.groups()[1:]]
    assert sorted(calls) == sorted(["nanosleep", "clock_nanosleep", "sleep",
                                    "poll", "select"]), calls
    for name, (rc, err, ms) in calls.items():
        assert rc == 0 and err == 0, (
            "%s failed with errno %d after %d ms: a checkpoint leaked EINTR"
            % (name, err, ms))
        assert ms >= min_ms, "%s returned early: %d ms" % (name, ms)


@pytest.mark.time_limit(300)
def test_no_eintr_from_checkpoints(session):
    p = session.launch([app("eintr_calls"), "4"])
    for at in (5, 12, 20, 28):
        p.wait_line(r"^waiting (\d+)$", minimum=at)
        session.checkpoint()
    assert p.wait_exit() == 0, p.stderr_text()
    check_calls(p.lines(), 4, 3900)


@pytest.mark.time_limit(300)
def test_no_eintr_after_restart(session):
    p = session.launch([app("eintr_calls"), "6"])
    images, seen, before = checkpoint_and_kill(session, p, r"^waiting (\d+)$",
                                               15)
    assert not any(CALL.match(l) for l in p.lines()), (
        "a call returned before the checkpoint: %r" % p.lines())
    r = session.restart(images)
    assert r.wait_exit() == 0, r.stderr_text()
    # Each call still sleeps out the time it had left: at least the 6 s
    # minus the ~1.5 s that had passed at the checkpoint.
    check_calls(r.lines(), 6, 6000 - (before[-1] + 2) * 100)


@pytest.mark.time_limit(300)
@pytest.mark.parametrize("how", ["handler", "sigwait"])
def test_siginfo_names_senders_by_virtual_pid(session, how):
    """SA_SIGINFO handlers, and sigtimedwait, give the sender's pid as the
    program knows it: a child sigqueues SIGUSR1 to its parent every 20 ms
    and then exits; after checkpoint, kill and restart (both have new real
    pids) every si_pid of SIGUSR1 and of SIGCHLD is still the pid fork()
    returned. "sigwait": the parent blocks every signal and waits on a
    full set (sigfillset), which must neither take the checkpoint signal
    nor see an EINTR."""
    n = 150
    p = session.launch([app("siginfo_pid"), str(n), how])
    p.wait_line(r"^usr1 (\d+)$", minimum=20)
    images = session.checkpoint(expect_images=2)
    session.kill_all()
    p.popen.wait(30)
    r = session.restart(images)
    assert r.wait_exit() == 0, "%r %s" % (r.lines()[-3:], r.stderr_text())
    last = r.lines()[-1]
    m = re.match(r"^done usr1 (\d+) wrong 0 chld ok status 4$", last)
    assert m, r.lines()[-3:]
    # plain signals may merge while pending; most arrive one by one
    assert n - 5 <= int(m.group(1)) <= n, last
