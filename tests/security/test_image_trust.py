# SPDX-License-Identifier: LGPL-2.1-or-later
"""Images are code (docs/security.md).

ckpt_restart runs only the caller's own images that nobody else may write;
--trust-image runs another's, as the caller (restart never changes uid or
gid); ckpt_inspect only notes it. ckpt_launch says truthfully, for root and
for another user, whether a set-user-ID, set-group-ID or file-capability
program is preloaded and checkpointed: each case is checked against
/proc/PID/maps of the running program. A second user is made for the test
(useradd -M) and removed at the end; most of this needs root.
"""

import grp
import os
import pwd
import re
import secrets
import shutil
import stat
import subprocess

import pytest

import ckpt_harness
from ckpt_harness import (app, assert_resumed, checkpoint_and_kill,
                          copy_image, numbers, run)

PROGRESS = r"^count (\d+) "
N = 400
TIMEOUT = 120

needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("useradd") or
    not shutil.which("setpriv"),
    reason="needs root, useradd and setpriv to act as a second user")


@pytest.fixture(scope="module")
def other_user():
    """(name, uid, gid) of a fresh user without a home, removed after."""
    name = "ckt" + secrets.token_hex(4)
    r = run(["useradd", "-M", "-U", "-s", "/usr/sbin/nologin", name],
            TIMEOUT)
    assert r.returncode == 0, "useradd %s: %s" % (name, r.stderr)
    try:
        pw = pwd.getpwnam(name)
        yield name, pw.pw_uid, pw.pw_gid
    finally:
        run(["userdel", name], TIMEOUT)


def restart_cmd(s, *args):
    return run([s.tool("ckpt_restart")] + list(args), TIMEOUT, env=s.env)


def checkpointed_counter(s):
    """A counter checkpointed once and killed: (image, seen, before)."""
    p = s.launch([app("counter"), str(N), "20"])
    images, seen, before = checkpoint_and_kill(s, p, PROGRESS, 30)
    return images[0], seen, before


def assert_refused(r, img, *words):
    assert r.returncode == 1, (
        "ckpt_restart ran an untrusted image %s: exit %d, stdout %r, "
        "stderr %r" % (img, r.returncode, r.stdout[-300:], r.stderr))
    assert not re.search(PROGRESS, r.stdout, re.M), (
        "the refused image's program ran: %r" % r.stdout[:300])
    line = [l for l in r.stderr.splitlines() if "refusing" in l]
    assert len(line) == 1 and img in line[0], (
        "no one refusal line naming %s: %r" % (img, r.stderr))
    for w in words + ("--trust-image",):
        assert w in line[0], "%r missing from %r" % (w, line[0])
    return line[0]


def ids_of(pid):
    """Real and effective uid and gid of a running process."""
    with open("/proc/%d/status" % pid) as f:
        status = dict(l.split(":", 1) for l in f.read().splitlines())
    uids, gids = status["Uid"].split(), status["Gid"].split()
    return int(uids[0]), int(uids[1]), int(gids[0]), int(gids[1])


@needs_root
@pytest.mark.time_limit(900)
def test_other_users_image_refused_then_run_as_caller(session, other_user):
    name, uid, gid = other_user
    img, seen, before = checkpointed_counter(session)
    os.chown(img, uid, gid)

    r = restart_cmd(session, img)
    assert_refused(r, img, "owned by %s (uid %d)" % (name, uid),
                   "not by you (root, uid 0)", "mode 0600")

    # Reading is not running: inspect decodes it and notes the refusal.
    out = session.inspect(img)
    assert re.search(r"^note: ckpt_restart refuses to run it without "
                     r"--trust-image: it is owned by %s \(uid %d\)"
                     % (name, uid), out, re.M), out[-500:]

    p = session.start([session.tool("ckpt_restart"), "--trust-image", img],
                      "restart --trust-image")
    p.wait_line(PROGRESS)
    # The restarted program replaced ckpt_restart: it runs as us, root,
    # not as the image's owner.
    assert ids_of(p.pid) == (0, 0, 0, 0), ids_of(p.pid)
    assert p.wait_exit() == 0, p.stderr_text()
    assert_resumed(before, numbers(p.lines(), PROGRESS), PROGRESS, N, seen)
    warn = [l for l in p.stderr_text().splitlines() if "warning" in l]
    assert warn and img in warn[0] and "owned by %s (uid %d)" % (
        name, uid) in warn[0] and "as you (root, uid 0)" in warn[0] and \
        "never changes uid or gid" in warn[0], p.stderr_text()


@pytest.mark.time_limit(900)
def test_writable_own_image_refused(session):
    img, seen, before = checkpointed_counter(session)
    me = pwd.getpwuid(os.geteuid()).pw_name
    group = grp.getgrgid(os.stat(img).st_gid).gr_name
    for mode, words in (
            (0o620, ("writable by group %s" % group, "mode 0620")),
            (0o602, ("writable by every user", "mode 0602")),
            (0o666, ("writable by every user", "mode 0666"))):
        bad = copy_image(img, session.path("mode%o" % mode))
        os.chmod(bad, mode)
        r = restart_cmd(session, bad)
        line = assert_refused(r, bad, "owned by %s (uid %d)" % (
            me, os.geteuid()), *words)
        assert "not by you" not in line, line
    # The image itself, mode 0600, still restarts.
    assert stat.S_IMODE(os.stat(img).st_mode) == 0o600
    p = session.restart([img])
    assert p.wait_exit() == 0, p.stderr_text()
    assert_resumed(before, numbers(p.lines(), PROGRESS), PROGRESS, N, seen)
    assert "warning" not in p.stderr_text(), p.stderr_text()


@needs_root
@pytest.mark.time_limit(900)
def test_each_image_of_a_computation_is_checked(session, other_user):
    name, uid, gid = other_user
    procs = [session.launch([app("counter"), "100000", "20"],
                            name="counter %d" % i) for i in (1, 2)]
    for p in procs:
        p.wait_line(PROGRESS, minimum=20)
    images = session.checkpoint(expect_images=2)
    for p in procs:
        p.sigkill()
    os.chown(images[1], uid, gid)
    r = restart_cmd(session, *images)
    assert_refused(r, images[1], "owned by %s" % name)
    assert images[0] not in r.stderr, r.stderr


# --- ckpt_launch and set-ID programs --------------------------------------

LOADED = "libckpt.so is preloaded and it is checkpointed as usual"
NOT_LOADED = ("the kernel runs it with other privileges, so the dynamic "
              "loader ignores LD_PRELOAD and it will not be checkpointed")


def installed_copy(s):
    """The built tools copied where any user can run them (the work tree
    may not be), in s.dir made traversable."""
    inst = s.path("inst")
    shutil.copytree(ckpt_harness.BIN, os.path.join(inst, "bin"))
    shutil.copytree(os.path.dirname(ckpt_harness.LIBCKPT),
                    os.path.join(inst, "lib", "ckpt"))
    for root, dirs, files in os.walk(inst):
        for d in dirs:
            os.chmod(os.path.join(root, d), 0o755)
    os.chmod(inst, 0o755)
    os.chmod(s.dir, 0o755)
    s.bin_dir = os.path.join(inst, "bin")
    return inst


def setid_counter(inst, label, owner, group, mode):
    path = os.path.join(inst, "counter_" + label)
    shutil.copy2(app("counter"), path)
    os.chown(path, owner, group)
    os.chmod(path, mode)        # after chown, which clears the set-ID bits
    return path


def launch_and_look(s, prog):
    """ckpt_launch prog; returns (its ckpt_launch line, libckpt mapped?,
    ids) while the program runs."""
    p = s.launch([prog, "100000", "20"])
    p.wait_line(PROGRESS, minimum=5)
    said = p.err.wait_for(
        lambda ls: [l for l in ls if l.startswith("ckpt_launch:")], 60,
        "ckpt_launch's line about " + prog)
    with open("/proc/%d/maps" % p.pid) as f:
        mapped = "libckpt.so" in f.read()
    ids = ids_of(p.pid)
    return p, said[0], mapped, ids


def check_setid_case(s, prog, loaded, words):
    p, said, mapped, ids = launch_and_look(s, prog)
    nosuid = os.statvfs(prog).f_flag & os.ST_NOSUID
    if nosuid:
        loaded, words = True, ("the kernel ignores that here",)
    assert said.startswith("ckpt_launch: %s: %s " % (
        "note" if loaded else "warning", prog)), said
    assert (LOADED if loaded and not nosuid else
            "checkpointed as usual" if loaded else NOT_LOADED) in said, said
    for w in words:
        assert w in said, "%r missing from %r" % (w, said)
    assert mapped == loaded, (
        "ckpt_launch said %r, but libckpt.so is %s in the program (ids %r)"
        % (said, "mapped" if mapped else "not mapped", ids))
    return p, ids


@needs_root
@pytest.mark.time_limit(900)
def test_setid_launch_warning_for_root(session, other_user):
    name, uid, gid = other_user
    inst = installed_copy(session)
    cases = (
        ("suid_root", 0, 0, 0o4755, True, ("set-user-ID root (uid 0)",
                                           "changes nothing for you")),
        ("suid_other", uid, 0, 0o4755, False,
         ("set-user-ID %s (uid %d)" % (name, uid),)),
        ("sgid_other", 0, gid, 0o2755, False,
         ("set-group-ID %s (gid %d)" % (name, gid),)))
    for label, owner, group, mode, loaded, words in cases:
        prog = setid_counter(inst, label, owner, group, mode)
        p, ids = check_setid_case(session, prog, loaded, words)
        if label == "suid_root":
            # Said "checkpointed as usual": it is.
            session.checkpoint()
        elif label == "suid_other" and loaded is False:
            assert ids[:2] == (0, uid), ids
        p.sigkill()


@needs_root
@pytest.mark.time_limit(900)
def test_setid_launch_warning_for_other_user(other_user):
    name, uid, gid = other_user
    s = ckpt_harness.Session(run_as=uid)
    try:
        inst = installed_copy(s)
        own = setid_counter(inst, "suid_self", uid, gid, 0o4755)
        p, ids = check_setid_case(s, own, True, (
            "set-user-ID %s (uid %d)" % (name, uid),
            "changes nothing for you (uid %d" % uid))
        assert ids[:2] == (uid, uid), ids
        p.sigkill()
        root = setid_counter(inst, "suid_root", 0, 0, 0o4755)
        p, ids = check_setid_case(s, root, False,
                                  ("set-user-ID root (uid 0)",))
        p.sigkill()
        if shutil.which("setcap"):
            caps = setid_counter(inst, "caps", 0, 0, 0o755)
            r = run(["setcap", "cap_net_raw+ep", caps], TIMEOUT)
            assert r.returncode == 0, r.stderr
            p, ids = check_setid_case(s, caps, False,
                                      ("has file capabilities",))
            p.sigkill()
    finally:
        s.close()
