# SPDX-License-Identifier: LGPL-2.1-or-later
"""What a restart will not restore is said when the checkpoint is taken:
ckpt_command --checkpoint still succeeds (exit 0, image paths on stdout)
and names on stderr, per process (program, vpid, pid), each descriptor
its restart would replace by /dev/null and what it is; ckpt_inspect
shows the same lines from the image. A program with only files and pipes
gets no such line."""

import re
import subprocess

import pytest

from ckpt_harness import app, numbers

ITER = 300
DELAY_MS = "30"


def checkpoint_with_stderr(s, nimages):
    r = s.command("--checkpoint")
    assert r.returncode == 0, "ckpt_command --checkpoint: exit %d: %s" % (
        r.returncode, r.stderr)
    images = r.stdout.split()
    assert len(images) == nimages, r.stdout
    return images, r.stderr.splitlines()


def warning_rx(pid, fd, what):
    return re.compile(r"^warning: event_fds \(vpid %d, pid \d+, host [^)]*\)"
                      r": fd %d: %s.*: not restored yet, a restart puts "
                      r"/dev/null in its place$" % (pid, fd, what))


@pytest.mark.time_limit(300)
def test_unrestored_fds_are_named_at_checkpoint(session):
    s = session
    p = s.launch([app("event_fds"), "events", s.dir, str(ITER), DELAY_MS])
    fds = p.wait_line(r"^fds epoll (\d+) eventfd (\d+) udp (\d+) udpport "
                      r"(\d+) tcp (\d+) tcpport (\d+)$")
    ep, ev, udp, uport, tcp, tport = (int(x) for x in fds.groups())
    child = p.wait_line(r"^child (\d+) timerfd (\d+)$")
    cpid, tfd = int(child.group(1)), int(child.group(2))
    p.wait_line(r"^tick (\d+)$", minimum=5)
    seen = max(numbers(p.lines(), r"^tick (\d+)$"))
    images, err = checkpoint_with_stderr(s, 2)
    for pid in (p.pid, cpid):
        # ckpt_launch execs the program: its pid is the launcher's
        # bound UDP and listening TCP sockets are restored now
        for fd in (udp, tcp):
            assert not [l for l in err if re.search(
                r"\(vpid %d, .*: fd %d: " % (pid, fd), l)], err
    # epoll, eventfd and timerfd are restored (test_event_fds.py); the
    # child's epoll and eventfd are its parent's, and come back shared
    # (one open file description, test_shared_files.py): no warning
    for pid, fd in ((p.pid, ep), (p.pid, ev), (cpid, tfd), (p.pid, tfd),
                    (cpid, ep), (cpid, ev)):
        assert not [l for l in err if re.search(r"\(vpid %d, .*: fd %d: " % (
            pid, fd), l)], err
    child_img = [i for i in images if "-%d-" % cpid in i]
    assert len(child_img) == 1, images
    shown_child = s.inspect(child_img[0])
    for fd in (ep, ev):
        assert re.search(r"^ +%d .*\(shared description \d+\)" % fd,
                         shown_child, re.M), shown_child
    parent_img = [i for i in images if "-%d-" % p.pid in i]
    assert len(parent_img) == 1, images
    shown = s.inspect(parent_img[0])
    # its epoll, eventfd, timerfd and sockets are all restored now
    assert "not restored by a restart:" not in shown, shown
    assert re.search(r"^ +%d listen-socket .*\(127\.0\.0\.1:%d, backlog 4"
                     % (tcp, tport), shown, re.M), shown
    assert re.search(r"^ +%d bound-socket .*\(127\.0\.0\.1:%d\)"
                     % (udp, uport), shown, re.M), shown

    # the checkpoint is good: the program goes on after a restart
    s.kill_all()
    p.popen.wait(30)
    before = numbers(p.lines(), r"^tick (\d+)$")
    r = s.restart(images)
    rc = r.wait_exit()
    lines = r.lines()
    assert rc == 0 and lines[-1] == "OK event_fds", (
        "exit %d, last lines %r, stderr:\n%s" % (rc, lines[-5:],
                                                r.stderr_text()))
    after = numbers(lines, r"^tick (\d+)$")
    assert seen < after[0] <= before[-1] + 1, (after[:3], seen, before)
    assert after == list(range(after[0], ITER + 1)), after[:10]


@pytest.mark.time_limit(300)
def test_files_and_pipes_get_no_warning(session):
    s = session
    p = s.launch([app("event_fds"), "plain", s.dir, str(ITER), DELAY_MS])
    p.wait_line(r"^fds file \d+ dir \d+ pipe \d+ \d+$")
    p.wait_line(r"^tick (\d+)$", minimum=5)
    seen = max(numbers(p.lines(), r"^tick (\d+)$"))
    images, err = checkpoint_with_stderr(s, 1)
    assert err == [], "warnings for files and pipes: %r" % err
    assert "not restored" not in s.inspect(images[0])
    s.kill_all()
    p.popen.wait(30)
    before = numbers(p.lines(), r"^tick (\d+)$")
    r = s.restart(images)
    assert r.wait_exit() == 0, r.stderr_text()
    after = numbers(r.lines(), r"^tick (\d+)$")
    assert seen < after[0] <= before[-1] + 1
    assert after == list(range(after[0], ITER + 1))


@pytest.mark.time_limit(300)
def test_posix_message_queue_is_named_and_left_working(session):
    """A POSIX message queue is not saved yet: the checkpoint names it
    (it failed before with "saving the content saved with fd 3:
    Input/output error", reading the queue as a deleted file), and the
    program's queue keeps working after the checkpoint."""
    s = session
    p = s.launch([app("mq_queue"), str(ITER), DELAY_MS])
    fd = int(p.wait_line(r"^mq fd (\d+)$").group(1))
    p.wait_line(r"^tick (\d+) ok$", minimum=5)
    images, err = checkpoint_with_stderr(s, 1)
    rx = re.compile(r"^warning: mq_queue \(vpid %d, pid \d+, host [^)]*\): "
                    r"fd %d: a POSIX message queue \(mq_open "
                    r"\"/ckpt-test-%d \(deleted\)\"\): neither it nor its "
                    r"messages are saved: not restored yet, a restart puts "
                    r"/dev/null in its place$" % (p.pid, fd, p.pid))
    assert [l for l in err if rx.match(l)], err
    assert "a POSIX message queue" in s.inspect(images[0])
    last = max(numbers(p.lines(), r"^tick (\d+) ok$"))
    p.wait_line(r"^tick (\d+) ok$", minimum=last + 5)
    assert not [l for l in p.lines() if "error" in l], p.lines()[-5:]


@pytest.mark.time_limit(300)
def test_sysv_message_queue_and_semaphores_are_named(session):
    """SysV message queues and semaphore sets are not saved (they live in
    the kernel under an id): the checkpoint names each one the program
    made (it said nothing before), and the program goes on."""
    s = session
    p = s.launch([app("sysv_msg_sem"), str(ITER), DELAY_MS])
    ids = p.wait_line(r"^ids msg (\d+) sem (\d+)$")
    msg, sem = int(ids.group(1)), int(ids.group(2))
    try:
        p.wait_line(r"^tick (\d+)$", minimum=5)
        images, err = checkpoint_with_stderr(s, 1)
        for what, call, ident in (("message queue", "msgget", msg),
                                  ("semaphore set", "semget", sem)):
            rx = re.compile(r"^warning: sysv_msg_sem \(vpid %d, pid \d+, "
                            r"host [^)]*\): a SysV %s \(%s, id %d, key 0\): "
                            r"not saved; a restart finds it as the killed "
                            r"processes left it, if it is still there$"
                            % (p.pid, what, call, ident))
            assert [l for l in err if rx.match(l)], err
        assert "a SysV semaphore set" in s.inspect(images[0])
        last = max(numbers(p.lines(), r"^tick (\d+)$"))
        p.wait_line(r"^tick (\d+)$", minimum=last + 5)
    finally:
        s.kill_all()
        p.popen.wait(30)
        # the killed program leaves both in the kernel
        subprocess.run(["ipcrm", "-q", str(msg), "-s", str(sem)],
                       capture_output=True, timeout=30)
