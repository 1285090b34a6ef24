# SPDX-License-Identifier: LGPL-2.1-or-later
"""Unix datagram and seqpacket socket pairs come back as pairs of the same
type at the same fd numbers with their options, and the messages queued in
both directions at the checkpoint are delivered once each, in order, with
their boundaries, the sender's virtual pid (SCM_CREDENTIALS) and the fds
they carry (SCM_RIGHTS): a pipe's read end with its bytes and a file at
its offset (issue 9: "a Unix datagram pair passing fds over SCM_RIGHTS
mid-flight"). A stream pair keeps its fds in flight too; datagram sockets
bound to a path or an abstract name and connected to each other come back
with their names; a datagram socket connected to a server's bound socket
keeps the messages the server sent it and reaches the server again."""

import os
import struct
import time

import pytest

from ckpt_harness import app, reference_output
from ckpt_image import FD_FMT, Image, ckpt_hash64

READY = r"^(parent|child) READY$"
QUEUE_SIZE = 248    # struct ckpt_unix_queue
MSG_SIZE = 24       # struct ckpt_unix_msg


def wait_connected(session, n, timeout=120):
    """Until n processes are connected to the coordinator (a restarted
    computation that prints nothing while it waits)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = session.command("--status")
        if "processes: %d" % n in r.stdout:
            return
        time.sleep(0.1)
    raise AssertionError("not %d processes connected within %d s: %s"
                         % (n, timeout, r.stdout))


def without_ready(lines):
    return [l for l in lines if not l.endswith(" READY")]


def reference(kind, tmp):
    os.makedirs(tmp)
    open(os.path.join(tmp, "go"), "w").close()
    return without_ready(reference_output(
        [app("unix_dgram_fds"), kind, tmp], cache=False))


@pytest.mark.time_limit(300)
@pytest.mark.parametrize("kind,images", [("dgram", 2), ("seqpacket", 2),
                                         ("stream", 2), ("self", 1),
                                         ("path", 2), ("abstract", 2),
                                         ("server", 2)])
def test_queued_messages_and_fds_in_flight(session, kind, images):
    ref = reference(kind, session.path("ref"))
    assert ref[-1] == "OK" and (kind == "server" or
                                any("2 fds" in l for l in ref))
    work = session.path("work")
    os.mkdir(work)
    p = session.launch([app("unix_dgram_fds"), kind, work])
    p.wait_line(r"^child READY$")
    if kind != "self":
        p.wait_line(r"^parent READY$")
    saved = session.checkpoint(expect_images=images)

    # The original goes on after its queues were peeked for the images:
    # nothing lost, nothing doubled, the fds in flight still work.
    open(os.path.join(work, "go"), "w").close()
    assert p.wait_exit() == 0, p.stderr_text()
    assert without_ready(p.lines()) == ref, p.stderr_text()

    # The data file was read through the fd in flight; the restart opens
    # it again at the offset the message held.
    r = session.restart(saved)
    rc = r.wait_exit()
    assert rc == 0 and r.lines() == ref, (
        "exit %d, lines %r, stderr:\n%s" % (rc, r.lines(), r.stderr_text()))
    text = "".join(session.inspect(i) for i in saved)
    assert "unix-" + (kind if kind in ("seqpacket", "stream") else "dgram") \
        in text, text
    assert kind == "server" or "in flight" in text, text
    assert "messages queued" in text, text


@pytest.mark.time_limit(300)
def test_bad_saved_message_is_refused(session):
    """A saved message longer than its record (hashes made consistent, as
    an attacker would) makes ckpt_restart refuse the restart, naming the
    process and the socket, with nothing restarted."""
    work = session.path("work")
    os.mkdir(work)
    p = session.launch([app("unix_dgram_fds"), "dgram", work])
    p.wait_line(r"^child READY$")
    p.wait_line(r"^parent READY$")
    saved = session.checkpoint(expect_images=2)
    session.kill_all()
    p.popen.wait(30)
    patched = []
    for path in saved:
        im = Image(path)
        for i, f in enumerate(im.table(FD_FMT, "fds_offset", "nfds")):
            fd, kind, data_off, data_size = f[0], f[1], f[7], f[8]
            if kind != 30 or data_size < QUEUE_SIZE + MSG_SIZE:
                continue
            first = data_off + QUEUE_SIZE   # the first struct ckpt_unix_msg
            length, nfds = struct.unpack_from("<II", im.data, first)
            assert (length, nfds) in ((24, 2), (5, 0)), (length, nfds)
            struct.pack_into("<I", im.data, first, 0x7fffffff)
            f[9] = ckpt_hash64(bytes(im.data[data_off:data_off + data_size]))
            im.set_entry(FD_FMT, "fds_offset", i, f)
            im.rehash()
            patched.append(fd)
        im.write(path)
    assert patched, "no saved queue found"
    r = session.restart(saved)
    rc = r.wait_exit(timeout=120)
    err = r.stderr_text()
    assert rc != 0 and "saved messages again failed: Invalid argument" \
        in err and "unix_dgram_fds" in err, (rc, err)
    assert not any("got" in l for l in r.lines()), r.lines()


@pytest.mark.time_limit(300)
@pytest.mark.parametrize("kind", ["dgram", "stream", "server"])
def test_twice_restarted(session, kind):
    """Checkpointed again after a restart (the queues, fds in flight and
    credentials made by the first restart are saved in turn), restarted
    again: the same output as an uninterrupted run."""
    ref = reference(kind, session.path("ref"))
    work = session.path("work")
    os.mkdir(work)
    p = session.launch([app("unix_dgram_fds"), kind, work])
    p.wait_line(r"^child READY$")
    p.wait_line(r"^parent READY$")
    first = session.checkpoint(expect_images=2)
    session.kill_all()
    p.popen.wait(30)
    r = session.restart(first)
    wait_connected(session, 2)
    second = session.checkpoint(expect_images=2)
    session.kill_all()
    r.popen.wait(30)
    assert not r.lines(), (r.lines(), r.stderr_text())
    open(os.path.join(work, "go"), "w").close()
    r2 = session.restart(second)
    rc = r2.wait_exit()
    assert rc == 0 and r2.lines() == ref, (
        "exit %d, lines %r, stderr:\n%s" % (rc, r2.lines(),
                                            r2.stderr_text()))
