# SPDX-License-Identifier: LGPL-2.1-or-later
"""Open regular files across a restart: a read offset, an O_APPEND log,
and stdout redirected to a regular file."""

import os
import re
import time

import pytest

from ckpt_harness import (app, checkpoint_and_kill, numbers,
                          reference_output, restart_to_end,
                          tail_after_progress)

PROGRESS = r"^record (\d+)$"


def make_input(path, count):
    """Records of varying length, so offsets fall anywhere."""
    lines = ["rec %04d %s" % (i, "abcdefghijklmnopqrstuvwxyz"[:(i * 7) % 23])
             for i in range(1, count + 1)]
    with open(path, "w") as f:
        f.write("".join(l + "\n" for l in lines))
    return lines


def read_log(path):
    with open(path) as f:
        return f.read().splitlines()


def log_numbers(log):
    out = []
    for line in log:
        m = re.fullmatch(r"got rec (\d{4})( [a-z]*)?", line)
        assert m, "log line %r is not a record" % line
        out.append(int(m.group(1)))
    return out


@pytest.mark.time_limit(600)
def test_file_offset_log_gated_exactly_once(session):
    """Checkpoint while no record is in flight: after the restart, the log
    must hold every record exactly once, in order."""
    count, gate_after = 200, 60
    inp, log, gate = (session.path(n) for n in ("in.txt", "log.txt", "go"))
    lines = make_input(inp, count)
    ref_log = session.path("ref-log.txt")
    ref = reference_output([app("file_offset_log"), inp, ref_log, "0"])
    assert read_log(ref_log) == ["got " + l for l in lines]

    p = session.launch([app("file_offset_log"), inp, log, "5",
                        str(gate_after), gate])
    p.wait_line(r"^gate after record (\d+)$")
    images, seen, before = checkpoint_and_kill(session, p, PROGRESS,
                                               gate_after)
    assert before == list(range(1, gate_after + 1))
    assert read_log(log) == ["got " + l for l in lines[:gate_after]]

    r = session.restart(images)
    with open(gate, "w"):
        pass
    rc = r.wait_exit()
    assert rc == 0, "restart exit %d; stderr:\n%s" % (rc, r.stderr_text())
    assert numbers(r.lines(), PROGRESS) == list(range(gate_after + 1,
                                                      count + 1))
    assert read_log(log) == ["got " + l for l in lines], (
        "the log lost or doubled records: %r" % log_numbers(read_log(log)))
    assert tail_after_progress(r.lines(), PROGRESS) == \
        tail_after_progress(ref, PROGRESS)


@pytest.mark.time_limit(600)
def test_file_offset_log_free_running(session):
    """Checkpoint at any moment: records processed between the checkpoint
    and the kill are done again after the restart (file contents are not
    part of an image), and nothing is lost: the log is records 1..K, then
    J..N, where J is right after the checkpoint."""
    count = 300
    inp, log = session.path("in.txt"), session.path("log.txt")
    lines = make_input(inp, count)
    ref = reference_output([app("file_offset_log"), inp,
                            session.path("ref-log.txt"), "0"])

    p = session.launch([app("file_offset_log"), inp, log, "20"])
    images, seen, before = checkpoint_and_kill(session, p, PROGRESS, 40)
    killed_log = log_numbers(read_log(log))
    assert killed_log == list(range(1, len(killed_log) + 1))
    r, first = restart_to_end(session, images, PROGRESS, count, seen,
                              before)
    got = read_log(log)
    nums = log_numbers(got)
    k = len(killed_log)
    assert nums[:k] == killed_log
    j = nums[k]
    # The checkpoint may fall between a record's log write and its
    # "record N" line, so the log resumes at `first` or one later.
    assert j in (first, first + 1), (
        "log resumes at record %d, stdout at %d" % (j, first))
    assert nums[k:] == list(range(j, count + 1)), "log after restart: %r" % (
        nums[k:k + 20])
    for line in got:
        n = int(line[8:12])
        assert line == "got " + lines[n - 1]
    assert tail_after_progress(r.lines(), PROGRESS) == \
        tail_after_progress(ref, PROGRESS)


def wait_file_line(path, regex, minimum, timeout, proc):
    rx = re.compile(regex)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(path) as f:
            nums = [int(m.group(1)) for m in map(rx.search, f)
                    if m]
        if nums and nums[-1] >= minimum:
            return nums[-1]
        assert proc.alive(), "%s exited early; stderr:\n%s" % (
            proc.name, proc.stderr_text())
        time.sleep(0.05)
    raise AssertionError("%s: no /%s/ >= %d within %ds" % (
        path, regex, minimum, timeout))


@pytest.mark.time_limit(600)
def test_stdout_regular_file_reopened_at_offset(session):
    """stdout redirected to a regular file is reopened at its saved
    offset: the restarted process overwrites what the original wrote after
    the checkpoint with the same bytes, so the file ends up exactly as an
    uninterrupted run writes it."""
    argv = [app("counter"), "300", "20"]
    ref = reference_output(argv)
    out = session.path("out.txt")
    with open(out, "w") as f:
        p = session.launch(argv, stdout=f)
    wait_file_line(out, r"^count (\d+) ", 40, 120, p)
    images = session.checkpoint()
    time.sleep(0.5)  # let it write past the checkpoint
    p.sigkill()
    with open(out) as f:
        killed = f.read().splitlines()
    assert killed and not killed[-1].startswith("done"), (
        "the counter finished before it was killed")
    r = session.restart(images)
    rc = r.wait_exit()
    assert rc == 0, "restart exit %d; stderr:\n%s" % (rc, r.stderr_text())
    with open(out) as f:
        final = f.read().splitlines()
    assert final == ref, "stdout file differs from an uninterrupted run"



@pytest.mark.time_limit(600)
def test_input_deleted_while_open(session):
    """A file deleted while open has its content in the image: the
    restarted program reads the rest of it at the right offset."""
    count = 200
    inp, log = session.path("in.txt"), session.path("log.txt")
    lines = make_input(inp, count)
    ref = reference_output([app("file_offset_log"), inp,
                            session.path("ref-log.txt"), "0"])
    p = session.launch([app("file_offset_log"), inp, log, "20"])
    p.wait_line(r"^reading ")
    os.unlink(inp)
    images, seen, before = checkpoint_and_kill(session, p, PROGRESS, 30)
    assert not os.path.exists(inp)
    r, first = restart_to_end(session, images, PROGRESS, count, seen,
                              before)
    assert tail_after_progress(r.lines(), PROGRESS) == \
        tail_after_progress(ref, PROGRESS)
    got = read_log(log)
    assert got[-1] == "got " + lines[-1]


NOFOLLOW_WRITER = r"""
import os, sys, time
path, n = sys.argv[1], int(sys.argv[2])
fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
os.unlink(path)
for i in range(1, n + 1):
    os.write(fd, b"line %05d\n" % i)
    print("wrote %d" % i, flush=True)
    time.sleep(0.02)
os.lseek(fd, 0, os.SEEK_SET)
data = os.read(fd, 1 << 20).decode().splitlines()
ok = data == ["line %05d" % i for i in range(1, n + 1)]
print("read %d lines %s" % (len(data), "ok" if ok else "WRONG"), flush=True)
"""


@pytest.mark.time_limit(300)
def test_deleted_file_opened_nofollow(session):
    """A file opened with O_NOFOLLOW and then deleted (as libraries open
    their scratch files, as libckpt opened its image) comes back: the
    flag is not applied to the link it is reopened through."""
    n = 150
    p = session.launch(["/usr/bin/python3", "-c", NOFOLLOW_WRITER,
                        session.path("scratch"), str(n)])
    images, seen, before = checkpoint_and_kill(session, p, r"^wrote (\d+)$",
                                               40)
    r = session.restart(images)
    assert r.wait_exit() == 0, r.stderr_text()
    assert "cannot restore" not in r.stderr_text(), r.stderr_text()
    assert r.lines()[-1] == "read %d lines ok" % n, r.lines()[-3:]
