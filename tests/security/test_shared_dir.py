# SPDX-License-Identifier: LGPL-2.1-or-later
"""A checkpoint directory others may write (mode 1777, like /tmp): another
user plants, under the names ckpt will use, symbolic links to a file of
root's, files of their own, or a restart script of their own
(docs/security.md, "Files in the checkpoint directory"). Root's file must
stay untouched, and ckpt either refuses clearly or uses fresh files of its
own; never the attacker's.

The attacker is a user the test creates (useradd) and removes; its
actions run under setpriv. Needs root."""

import glob
import os
import pwd
import re
import secrets
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
from ckpt_harness import (COMMAND_TIMEOUT, Session, app, missing_core,  # noqa
                          run)

VICTIM_TEXT = b"root's precious file\n"


@pytest.fixture(scope="module")
def attacker():
    if os.geteuid() != 0:
        pytest.skip("needs root to create a second user")
    name = "ckpt_att_" + secrets.token_hex(4)
    r = run(["useradd", "-M", "-N", "-s", "/bin/sh", name], 60)
    if r.returncode != 0:
        pytest.skip("useradd %s: %s" % (name, r.stderr.strip()))
    try:
        yield pwd.getpwnam(name)
    finally:
        run(["userdel", name], 60)


class SharedDir:
    """A session whose checkpoint directory is sticky and world-writable,
    a root-owned victim file beside it, and an attacker acting in it."""

    def __init__(self, attacker):
        self.s = Session()
        self.att = attacker
        os.chmod(self.s.dir, 0o711)            # others may reach ckpt/
        os.chmod(self.s.ckptdir, 0o1777)
        self.victim = self.s.path("victim")
        with open(self.victim, "wb") as f:
            f.write(VICTIM_TEXT)
        os.chmod(self.victim, 0o644)

    def as_attacker(self, *argv):
        r = run(["setpriv", "--reuid=%d" % self.att.pw_uid,
                 "--regid=%d" % self.att.pw_gid, "--clear-groups", "--"]
                + list(argv), 60)
        assert r.returncode == 0, "attacker %r: %s" % (argv, r.stderr)

    def plant_link(self, name):
        self.as_attacker("ln", "-s", self.victim,
                         os.path.join(self.s.ckptdir, name))

    def plant_file(self, name, text="", mode="644"):
        path = os.path.join(self.s.ckptdir, name)
        self.as_attacker("sh", "-c", 'printf %%s "$1" > "$2"; chmod %s '
                         '"$2"' % mode, "sh", text, path)
        assert os.stat(path).st_uid == self.att.pw_uid

    def remove(self, name):
        self.as_attacker("rm", "-f", os.path.join(self.s.ckptdir, name))

    def victim_untouched(self):
        with open(self.victim, "rb") as f:
            assert f.read() == VICTIM_TEXT, "root's file was written to"
        st = os.stat(self.victim)
        assert st.st_uid == 0 and st.st_mode & 0o777 == 0o644

    def checkpoint(self):
        return self.s.command("--checkpoint")


@pytest.fixture
def shared(attacker):
    if missing_core():
        pytest.skip("ckpt core not built (run make)")
    d = SharedDir(attacker)
    try:
        yield d
    finally:
        d.s.close()


def only_image(r):
    assert r.returncode == 0, "checkpoint failed: %s" % r.stderr
    [img] = r.stdout.split()
    return img


@pytest.mark.time_limit(300)
def test_planted_symlinks_are_never_written_through(shared):
    """Symbolic links to root's file under the names of the next temporary
    image, the round's table of shared files and the restart script's
    temporary: a checkpoint refuses the image's, and root's file stays as
    it was."""
    d, s = shared, shared.s
    p = s.launch([app("counter"), "100000", "20"])
    p.wait_line(r"^count (\d+) ", minimum=3)
    img = only_image(d.checkpoint())
    d.victim_untouched()
    # The next temporary image's name is plain to see: the image's name
    # and the writer's pid.
    ident = re.fullmatch(r"ckpt_(.+)\.img", os.path.basename(img)).group(1)
    tmp = ".ckpt_%s.img.tmp.%d" % (ident, p.pid)
    d.plant_link(tmp)
    r = d.checkpoint()
    assert r.returncode != 0, "a checkpoint wrote through %s" % tmp
    assert "a symbolic link is in its place (owner uid %d)" % \
        d.att.pw_uid in r.stderr, r.stderr
    assert tmp in r.stderr, r.stderr
    d.victim_untouched()
    assert os.path.islink(os.path.join(s.ckptdir, tmp))
    d.remove(tmp)

    tables = [".ckpt_shared.g%d" % g for g in range(1, 12)
              if not os.path.lexists(os.path.join(s.ckptdir,
                                                  ".ckpt_shared.g%d" % g))]
    for t in tables:
        d.plant_link(t)
    d.plant_link(".ckpt_restart_script.sh.tmp")
    r = d.checkpoint()
    assert only_image(r) == img
    d.victim_untouched()
    script = os.path.join(s.ckptdir, "ckpt_restart_script.sh")
    st = os.lstat(script)
    assert not os.path.islink(script) and st.st_uid == 0
    assert p.alive()
    assert "the table of shared files" in p.stderr_text(), p.stderr_text()
    # Our own leftovers under those names are replaced, not refused.
    for t in tables:
        d.remove(t)
    d.remove(".ckpt_restart_script.sh.tmp")
    with open(os.path.join(s.ckptdir, tmp), "wb") as f:
        f.write(b"x" * 4096)
    assert only_image(d.checkpoint()) == img
    assert not os.path.exists(os.path.join(s.ckptdir, tmp))


@pytest.mark.time_limit(300)
def test_attackers_restart_script_is_replaced_and_refused(shared):
    """The attacker's own ckpt_restart_script.sh, there before the first
    checkpoint, is replaced by root's; and a script someone else owns or
    may write refuses to run."""
    d, s = shared, shared.s
    marker = os.path.join(s.dir, "attacker-ran")
    evil = "#!/bin/sh\ntouch %s\n" % marker
    d.plant_file("ckpt_restart_script.sh", evil, "755")
    p = s.launch([app("counter"), "100000", "20"])
    p.wait_line(r"^count (\d+) ", minimum=3)
    img = only_image(d.checkpoint())
    script = os.path.join(s.ckptdir, "ckpt_restart_script.sh")
    st = os.lstat(script)
    assert st.st_uid == 0 and st.st_mode & 0o022 == 0, oct(st.st_mode)
    with open(script) as f:
        text = f.read()
    assert "touch" not in text and img in text

    # A copy that the attacker owns, or that others may write, refuses
    # to run before it does anything.
    copy = os.path.join(s.ckptdir, "copy.sh")
    with open(copy, "w") as f:
        f.write(text.replace("exec ", "touch %s; exec " % marker, 1))
    os.chmod(copy, 0o755)
    os.chown(copy, d.att.pw_uid, d.att.pw_gid)
    r = run([copy], COMMAND_TIMEOUT, env=s.env)
    assert r.returncode == 1 and "refusing to run" in r.stderr, r
    os.chown(copy, 0, 0)
    os.chmod(copy, 0o775)
    r = run([copy], COMMAND_TIMEOUT, env=s.env)
    assert r.returncode == 1 and "refusing to run" in r.stderr, r
    assert not os.path.exists(marker)
    d.victim_untouched()


def pipe_of(pid, fd):
    m = re.fullmatch(r"pipe:\[(\d+)\]", os.readlink("/proc/%d/fd/%d" %
                                                     (pid, fd)))
    return int(m.group(1)) if m else None


def descendant_named(root, comm, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for task in glob.glob("/proc/%d/task/*/children" % root):
            for child in open(task).read().split():
                c = int(child)
                try:
                    if open("/proc/%d/comm" % c).read().strip() == comm:
                        return c
                    found = descendant_named(c, comm, 0)
                except (OSError, AssertionError):
                    continue
                if found:
                    return found
        if timeout == 0:
            return None
        time.sleep(0.1)
    raise AssertionError("no %s under pid %d" % (comm, root))


@pytest.mark.time_limit(300)
def test_claim_file_of_another_user_is_refused(shared):
    """A file of the attacker's under the name of the claim on a pipe of
    the computation: no process would save the pipe's bytes (the claim
    looks taken); the checkpoint fails and names the file instead."""
    d, s = shared, shared.s
    p = s.launch(["/bin/sh", "-c", "%s 100000 20 | cat" % app("counter")])
    p.wait_line(r"^count (\d+) ", minimum=3)
    ino = pipe_of(descendant_named(p.pid, "counter"), 1)
    assert ino, "counter's stdout is not a pipe"
    names = [".ckpt_pipe_%d.g%d" % (ino, g) for g in range(1, 10)]
    for n in names:
        d.plant_file(n)
    r = d.checkpoint()
    assert r.returncode != 0, "checkpoint took the attacker's claim: %s" \
        % r.stdout
    err = p.stderr_text()
    assert re.search(r"claim file %s/\.ckpt_pipe_%d\.g\d+: a file of "
                     r"another user is in its place \(owner uid %d\)" %
                     (re.escape(s.ckptdir), ino, d.att.pw_uid), err), err
    for n in names:
        d.remove(n)
    r = d.checkpoint()
    assert r.returncode == 0 and len(r.stdout.split()) == 3, r


ATTACKER_LISTENER = """
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
s.listen(8)
time.sleep(float(sys.argv[2]))
"""


@pytest.mark.time_limit(180)
def test_coordinator_socket_and_lock_in_shared_dir(shared):
    """The coordinator's socket in the shared directory: a symbolic link
    planted as its lock file (to a path where root would create a file)
    is refused, and a listener of the attacker's on the socket path is
    named as such, not taken for a coordinator of ours."""
    d, s = shared, shared.s
    sock = os.path.join(s.ckptdir, "c.sock")
    target = s.path("made-by-root")
    d.as_attacker("ln", "-s", target, sock + ".lock")
    env = dict(s.env, CKPT_COORD=sock)
    r = run([s.tool("ckpt_coordinator"), "--coord", sock], 30, env=env)
    assert r.returncode != 0, r
    assert "cannot open lock file %s.lock: a symbolic link is in its " \
        "place (owner uid %d)" % (sock, d.att.pw_uid) in r.stderr, r.stderr
    assert not os.path.lexists(target), "root created %s" % target
    d.remove("c.sock.lock")

    listener = subprocess.Popen(
        ["setpriv", "--reuid=%d" % d.att.pw_uid,
         "--regid=%d" % d.att.pw_gid, "--clear-groups", "--",
         sys.executable, "-c", ATTACKER_LISTENER, sock, "60"],
        stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not os.path.exists(sock):
            assert listener.poll() is None and \
                time.monotonic() < deadline, "the listener did not start"
            time.sleep(0.05)
        r = run([s.tool("ckpt_coordinator"), "--coord", sock], 30,
                env=env)
        assert r.returncode != 0, r
        assert "another user's program (uid %d) already answers on %s" % (
            d.att.pw_uid, sock) in r.stderr, r.stderr
        assert os.stat(sock).st_uid == d.att.pw_uid
    finally:
        listener.kill()
        listener.wait(30)
    d.victim_untouched()


@pytest.mark.time_limit(300)
def test_restart_never_writes_under_a_planted_link(shared):
    """A temporary file saved with the image lived in a directory of
    root's inside the shared one; the run removed both, and the attacker
    put a symbolic link to another directory of root's in their place.
    The restart must not recreate the file there."""
    d, s = shared, shared.s
    work = os.path.join(s.ckptdir, "work")
    os.mkdir(work, 0o700)
    s.env["TMPDIR"] = work
    p = s.launch([app("tmp_created"), "4", "4000", work])
    p.wait_line(r"^made (\d+)$", minimum=1)        # round 1: in work/
    images = s.checkpoint()
    p.wait_line(r"^checked (\d+) ", minimum=1)
    s.kill_all()
    p.wait_exit(30)
    for name in os.listdir(work):
        os.unlink(os.path.join(work, name))
    os.rmdir(work)
    elsewhere = s.path("elsewhere")
    os.mkdir(elsewhere, 0o755)
    d.as_attacker("ln", "-s", elsewhere, work)
    r = s.restart(images)
    rc = r.wait_exit(120)
    # (the restarted run would remove the file it finds: its message
    # tells)
    assert "was gone; recreated" not in r.stderr_text(), r.stderr_text()
    assert os.listdir(elsewhere) == [], "the restart wrote %s under the " \
        "attacker's link" % os.listdir(elsewhere)
    assert rc != 0
    assert "%s: a symbolic link of another user (owner uid %d); not " \
        "writing under it" % (work, d.att.pw_uid) in r.stderr_text(), \
        r.stderr_text()
    d.victim_untouched()
