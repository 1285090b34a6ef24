# SPDX-License-Identifier: LGPL-2.1-or-later
"""A process that ends between DO_RESUME and its image being committed
(docs/protocol.md, "Failures"): it was alive and fully written at the
checkpoint moment, so it is part of the consistent state and its exit must
not fail the checkpoint. exit_after_resume forks short-lived children that
end right after a checkpoint resumes them (exit(), _exit() or SIGKILL to
themselves, while their image is still being fsync'ed); 20 checkpoints in
a row must all succeed, and a restart from the last one must bring the
children that had ended meanwhile back, end them again, and finish with
the program's own accounting right."""

import os
import socket
import struct
import subprocess

import pytest

from ckpt_harness import app, assert_resumed, numbers
from test_coordinator import (  # noqa: F401  (fixtures, used by name)
    FakeProcess, HELLO_F_RESUME_BARRIER, MSG_DO_ABORT, MSG_WRITTEN,
    checkpoint, coord, env, fakes, wait_for)

PROGRESS = r"^child (\d+) code"
CHILDREN = 1500
CHECKPOINTS = 20


def checkpoint_many(s, p):
    """CHECKPOINTS checkpoints in a row; each must succeed. Returns the
    image paths of the last and the progress seen before it."""
    for i in range(CHECKPOINTS):
        assert p.alive(), "the program ended after %d checkpoints: make " \
            "the run longer" % i
        seen = max(numbers(p.lines(), PROGRESS) or [0])
        r = s.command("--checkpoint")
        assert r.returncode == 0, (
            "checkpoint %d of %d failed: %s" % (i + 1, CHECKPOINTS,
                                                r.stderr))
        images = r.stdout.split()
    assert images, "the last checkpoint printed no image"
    return images, seen


def run_and_restart(s, how):
    p = s.launch([app("exit_after_resume"), str(CHILDREN), "10", how])
    p.wait_line(PROGRESS, minimum=5)
    images, seen = checkpoint_many(s, p)
    s.kill_all()
    p.popen.wait(30)
    before = numbers(p.lines(), PROGRESS)
    r = s.restart(images)
    assert r.wait_exit() == 0, "%r %s" % (r.lines()[-3:], r.stderr_text())
    after = numbers(r.lines(), PROGRESS)
    assert_resumed(before, after, PROGRESS, CHILDREN, seen)
    code = 100 + 9 if how == "kill" else None
    for line in r.lines():
        if line.startswith("child "):
            i, c = numbers([line], r"^child (\d+)")[0], int(line.split()[-1])
            assert c == (code if code else i % 100), line
    want = sum(code if code else i % 100 for i in range(1, CHILDREN + 1))
    assert r.lines()[-1] == "done %d sum %d" % (CHILDREN, want), \
        r.lines()[-3:]


@pytest.mark.time_limit(600)
@pytest.mark.parametrize("how", [
    pytest.param("_exit", marks=pytest.mark.skipif(
        not os.environ.get("CKPT_HEAVY_TESTS"),
        reason="heavy: exit covers the path; set CKPT_HEAVY_TESTS=1")),
    "exit"])
def test_child_exits_after_resume(session, how):
    run_and_restart(session, how)


@pytest.mark.time_limit(600)
def test_child_killed_after_resume(session):
    """SIGKILL runs no code of the process: the coordinator makes its
    written image durable and commits it."""
    run_and_restart(session, "kill")


# --- the coordinator's side, with fake processes (tests/test_coordinator.py)


class DiesAfterWritten(FakeProcess):
    """Writes a complete image file (as far as the coordinator checks:
    header and size) under its temporary name, answers WRITTEN with that
    path, then is gone while still stopped, as if SIGKILLed: no SYNCED,
    no rename. `bad`: the header names another checkpoint."""

    def __init__(self, addr, vpid, ckptdir, real_pid, bad=False, **kw):
        self.ckptdir, self.bad, self.real_pid = ckptdir, bad, real_pid
        self.tmp = None
        super().__init__(addr, vpid, flags=HELLO_F_RESUME_BARRIER,
                         hostname=socket.gethostname().encode(),
                         real_pid=real_pid, **kw)

    def _on_write(self, g):
        self.tmp = os.path.join(self.ckptdir, ".ckpt_%s_uid-%d.img.tmp.%d"
                                % (self.program, self.vpid, self.real_pid))
        img = bytearray(8192)
        img[0:8] = b"CKPTIMG1"
        struct.pack_into("<Q", img, 40, len(img))                 # size
        struct.pack_into("<i", img, 184, self.vpid)
        struct.pack_into("<Q", img, 192, g + 7 if self.bad else g)
        img[208:208 + len(self.program)] = self.program.encode()
        uid = b"uid-%d" % self.vpid
        img[272:272 + len(uid)] = uid
        with open(self.tmp, "wb") as f:
            f.write(img)
        os.chmod(self.tmp, 0o600)
        self.result(MSG_WRITTEN, g, path=self.tmp)
        self.sock.shutdown(socket.SHUT_RDWR)

    def _on_resume(self):
        pass    # gone: a DO_RESUME that arrived before is never read


@pytest.fixture
def childless_pid():
    """A pid for a fake process on this host: one without children (the
    coordinator waits for the children of its members)."""
    p = subprocess.Popen(["sleep", "120"])
    yield p.pid
    p.kill()
    p.wait(10)


def start_pair(env, coord, fakes, childless_pid, bad=False):
    c = coord()
    stays = fakes(c.addr, 601, program="stays", behaviour="barrier",
                  flags=HELLO_F_RESUME_BARRIER)
    dies = DiesAfterWritten(c.addr, 602, env["TESTDIR"], childless_pid,
                            bad=bad, program="dies")
    return c, stays, dies


@pytest.mark.time_limit(60)
def test_killed_while_stopped_after_written(env, coord, fakes,
                                             childless_pid):
    """Gone right after WRITTEN, before DO_RESUME: the coordinator syncs
    its image and renames it into place with the others'."""
    c, stays, dies = start_pair(env, coord, fakes, childless_pid)
    try:
        r = checkpoint(env)
        assert r.returncode == 0, r.stderr
        final = os.path.join(env["TESTDIR"], "ckpt_dies_uid-602.img")
        assert final in r.stdout.split(), r.stdout
        assert os.path.getsize(final) == 8192
        assert not os.path.exists(dies.tmp)
        assert "left after writing its image" in c.logtext()
    finally:
        dies.close()


@pytest.mark.time_limit(60)
def test_bad_image_left_fails_round(env, coord, fakes, childless_pid):
    """An image that is not this process's for this round is not taken
    over: the round fails, every new image is discarded, nothing is
    renamed."""
    c, stays, dies = start_pair(env, coord, fakes, childless_pid, bad=True)
    try:
        r = checkpoint(env)
        assert r.returncode == 1, r.stdout
        assert "dies (vpid 602" in r.stderr, r.stderr
        assert "cannot be committed without it" in r.stderr, r.stderr
        assert "another process or checkpoint" in r.stderr, r.stderr
        assert wait_for(lambda: MSG_DO_ABORT in stays.received)
        assert not os.path.exists(os.path.join(env["TESTDIR"],
                                                "ckpt_dies_uid-602.img"))
    finally:
        dies.close()
