# SPDX-License-Identifier: LGPL-2.1-or-later
"""unshare and setns of a user namespace need a single-threaded process,
and libckpt's manager thread makes every process of the computation a
threaded one: `unshare -r` failed under ckpt_launch with "unshare failed:
Invalid argument" where it works without ckpt. The manager thread steps
aside for the call (wrappers/namespaces.c) and joins again. The namespace
itself is not restored: the checkpoint says so, and the restarted program
goes on, in the user namespace of ckpt_restart (docs/resources.md,
"Process attributes")."""

import os
import subprocess

import pytest

from ckpt_harness import app, numbers, restart_to_end

PROGRESS = r"^count (\d+) "
STEPS, PAUSE_MS = 300, 20


def need_user_namespaces():
    r = subprocess.run(["unshare", "-r", "true"], capture_output=True,
                       text=True, timeout=30)
    if r.returncode != 0:
        pytest.skip("no user namespaces here: %s" % r.stderr.strip())


def ns_of(pid, kind):
    return os.readlink("/proc/%d/ns/%s" % (pid, kind))


def user_ns(pid):
    return ns_of(pid, "user")


def program_pid(session):
    r = session.command("--list")
    pids = [int(w[4:]) for l in r.stdout.splitlines() for w in l.split()
            if w.startswith("pid=")]
    assert len(pids) == 1, r.stdout
    return pids[0]


def checkpoint_restart_continues(session, p, kind="user"):
    """The program in a namespace of its own: the checkpoint names it,
    the restart goes on to the end, counting exactly."""
    p.wait_line(PROGRESS, minimum=5)
    pid = program_pid(session)
    assert ns_of(pid, kind) != ns_of(os.getpid(), kind), \
        "the program is not in a %s namespace of its own" % kind
    seen = max(numbers(p.lines(), PROGRESS))
    r = session.command("--checkpoint")
    assert r.returncode == 0, r.stderr
    assert "%s namespace" % kind in r.stderr and \
        "not restored" in r.stderr, \
        "the checkpoint does not say the namespace is lost: %r" % r.stderr
    images = r.stdout.split()
    p.wait_line(PROGRESS, minimum=seen + 3)
    session.kill_all()
    p.wait_exit(30)
    restart_to_end(session, images, PROGRESS, STEPS, seen,
                   numbers(p.lines(), PROGRESS))


@pytest.mark.time_limit(180)
def test_unshare_user_namespace_runs_and_restarts(session):
    need_user_namespaces()
    p = session.launch(["unshare", "-r", "sh", "-c",
                        'id -u; exec "$0" "$@"', app("counter"),
                        str(STEPS), str(PAUSE_MS)])
    p.wait_line(r"^0$", timeout=30)
    assert "Invalid argument" not in p.stderr_text(), p.stderr_text()
    checkpoint_restart_continues(session, p)


@pytest.mark.time_limit(180)
def test_setns_into_a_user_namespace_runs_and_restarts(session):
    need_user_namespaces()
    holder = subprocess.Popen(["unshare", "-r", "sleep", "120"])
    try:
        for _ in range(200):
            if user_ns(holder.pid) != user_ns(os.getpid()):
                break
            subprocess.run(["sleep", "0.02"], timeout=10)
        p = session.launch(["nsenter", "--user=/proc/%d/ns/user" %
                            holder.pid, "--preserve-credentials",
                            app("counter"), str(STEPS), str(PAUSE_MS)])
        checkpoint_restart_continues(session, p)
        assert "Invalid argument" not in p.stderr_text(), p.stderr_text()
    finally:
        holder.kill()
        holder.wait(10)


@pytest.mark.time_limit(180)
def test_child_in_a_pid_namespace_of_its_own_is_named(session):
    """A sandbox's child in a pid namespace of its own (`unshare --pid
    --fork`, bwrap --unshare-pid) cannot join: the failed checkpoint says
    why, instead of guessing at a static or set-ID program, and the
    program runs on."""
    if os.geteuid() != 0:
        pytest.skip("a pid namespace without a user namespace needs root "
                    "(with `unshare -r -p` the manager thread could not "
                    "come back: the call fails with EINVAL, as said)")
    p = session.launch(["unshare", "-p", "-f", app("counter"),
                        str(STEPS), str(PAUSE_MS)])
    p.wait_line(PROGRESS, minimum=5)
    r = session.command("--checkpoint")
    assert r.returncode != 0, "a checkpoint missing the sandboxed child " \
        "succeeded: %r" % r.stdout
    assert "pid namespace of its own" in r.stderr, r.stderr
    seen = max(numbers(p.lines(), PROGRESS))
    p.wait_line(PROGRESS, minimum=seen + 3)


@pytest.mark.time_limit(120)
def test_unshare_of_user_and_pid_namespaces_fails_as_said(session):
    """`unshare -r -p`: after a new pid namespace for its children no
    thread can be made, so the manager thread could not come back and
    the images would miss the process: the call keeps the kernel's
    EINVAL of a threaded process (docs/resources.md)."""
    need_user_namespaces()
    p = session.launch(["unshare", "-r", "-p", "-f", "true"])
    assert p.wait_exit(30) != 0
    assert "Invalid argument" in p.stderr_text(), p.stderr_text()


@pytest.mark.time_limit(180)
def test_network_namespace_of_its_own_is_named(session):
    """A program in a network namespace of its own (`unshare -n`, as
    root): the checkpoint says the namespace is not restored, and the
    restart goes on."""
    if os.geteuid() != 0:
        pytest.skip("unshare -n without a user namespace needs root")
    p = session.launch(["unshare", "-n", app("counter"), str(STEPS),
                        str(PAUSE_MS)])
    checkpoint_restart_continues(session, p, "net")


@pytest.mark.time_limit(180)
def test_uts_namespace_keeps_the_host_name_it_joins_with(session):
    """A program in a UTS namespace of its own with another host name
    (`unshare -u` then `hostname box`, bwrap --hostname) joins with the
    host name of the computation, not as a process of a host "box" (its
    images would name that host, and a round would not find it among
    its parent's children); the namespace is named at the checkpoint and
    the restart goes on."""
    if os.geteuid() != 0:
        pytest.skip("unshare -u without a user namespace needs root")
    p = session.launch(["unshare", "-u", "sh", "-c",
                        'hostname ckpt-box && exec "$0" "$@"',
                        app("counter"), str(STEPS), str(PAUSE_MS)])
    p.wait_line(PROGRESS, minimum=5)
    listed = session.command("--list").stdout
    assert "host=%s " % os.uname().nodename in listed, listed
    checkpoint_restart_continues(session, p, "uts")
