# SPDX-License-Identifier: LGPL-2.1-or-later
"""ckpt_check: what it reports agrees with what this test probes itself
(uname, Yama's ptrace_scope, /dev/ckpt_accel, the checkpoint directory,
a running coordinator); text and --json agree; a bad --ckptdir or
coordinator address is named and fails with exit 1."""

import ctypes
import errno
import fcntl
import json
import mmap
import os
import re
import stat
import struct
import sys

import pytest

import ckpt_harness
from ckpt_harness import run

CHECK = ckpt_harness.tool("ckpt_check")
NAMES = ["kernel", "pagemap", "rseq", "clone3_set_tid", "kcmp",
         "ptrace_scope", "soft_dirty", "userfaultfd", "uffd_wp",
         "pagemap_scan", "ckpt_accel", "cpu_features", "coordinator",
         "ckptdir"]


@pytest.fixture
def check_env(tmp_path):
    if not os.path.exists(CHECK):
        pytest.fail("ckpt_check not built: run make")
    env = dict(os.environ)
    for var in list(env):
        if var.startswith("CKPT_"):
            del env[var]
    env["CKPT_COORD"] = str(tmp_path / "c.sock")
    env["CKPT_DIR"] = str(tmp_path)
    return env


def ckpt_check(env, *args):
    return run([CHECK] + list(args), 30, env=env)


def as_json(env, *args):
    r = ckpt_check(env, "--json", *args)
    doc = json.loads(r.stdout)
    assert doc["tool"] == "ckpt_check" and doc["schema"] == 1
    return r, doc, {c["name"]: c for c in doc["checks"]}


def text_lines(stdout):
    """{name: (yes/no, detail)} of the text report."""
    found = {}
    for line in stdout.splitlines():
        m = re.match(r"(\w+)\s+(yes|no)\s+(.*)$", line)
        if m:
            found[m.group(1)] = (m.group(2), m.group(3))
    return found


def test_reports_every_check_in_text_and_json_alike(check_env):
    r = ckpt_check(check_env)
    assert r.returncode == 0, r.stderr
    text = text_lines(r.stdout)
    rj, doc, checks = as_json(check_env)
    assert rj.returncode == 0 and doc["usable"] is True
    assert [c["name"] for c in doc["checks"]] == NAMES
    assert sorted(text) == sorted(NAMES)
    for name, c in checks.items():
        assert text[name] == ("yes" if c["available"] else "no",
                              c["detail"]), name
        assert set(c) == {"name", "available", "required", "value",
                          "detail", "without"}
        # Every missing feature says what ckpt does without it.
        if not c["available"]:
            assert c["without"], name
            assert "without it: " + c["without"] in r.stdout


def test_kernel_and_ptrace_scope_match_the_machine(check_env):
    _, _, checks = as_json(check_env)
    assert checks["kernel"]["value"] == os.uname().release
    assert os.uname().release in checks["kernel"]["detail"]
    yama = "/proc/sys/kernel/yama/ptrace_scope"
    if os.path.exists(yama):
        with open(yama) as f:
            assert checks["ptrace_scope"]["value"] == f.read().strip()
    else:
        assert checks["ptrace_scope"]["value"] == "absent"
    # ckpt needs no ptrace: any scope is fine.
    assert checks["ptrace_scope"]["available"] is True


def test_module_and_cpu_match_the_machine(check_env):
    _, _, checks = as_json(check_env)
    accel = checks["ckpt_accel"]
    assert accel["available"] == os.path.exists("/dev/ckpt_accel")
    assert (accel["value"] != "absent") == os.path.exists(
        "/sys/module/ckpt_accel")
    with open("/proc/cpuinfo") as f:
        flags = re.search(r"^flags\s*:(.*)$", f.read(), re.M).group(1).split()
    xcr0 = int(checks["cpu_features"]["value"], 16)
    assert xcr0 & 3 == 3
    assert bool(xcr0 & 4) == ("avx" in flags)
    assert bool(xcr0 & 0xe0) == ("avx512f" in flags)
    assert checks["pagemap"]["available"] and checks["pagemap"]["required"]


def test_bad_ckptdir_is_named_and_fails(check_env, tmp_path):
    missing = str(tmp_path / "no" / "such")
    r = ckpt_check(check_env, "--ckptdir", missing)
    assert r.returncode == 1
    assert "ckpt_check: ckptdir: %s: No such file or directory" % missing \
        in r.stderr
    afile = tmp_path / "file"
    afile.write_text("x")
    r, doc, checks = as_json(check_env, "--ckptdir", str(afile))
    assert r.returncode == 1 and doc["usable"] is False
    assert checks["ckptdir"]["available"] is False
    assert "not a directory" in checks["ckptdir"]["detail"]
    assert "checkpoints fail" in checks["ckptdir"]["without"]
    # $CKPT_DIR is what ckpt_launch uses without --ckptdir.
    env = dict(check_env, CKPT_DIR=missing)
    assert ckpt_check(env).returncode == 1


def test_read_only_ckptdir_fails_even_for_root(check_env, tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    os.chmod(ro, stat.S_IRUSR | stat.S_IXUSR)
    r, _, checks = as_json(check_env, "--ckptdir", "/proc")
    assert r.returncode == 1
    assert checks["ckptdir"]["detail"].startswith("/proc: cannot create")
    if os.geteuid() != 0:
        r = ckpt_check(check_env, "--ckptdir", str(ro))
        assert r.returncode == 1 and str(ro) in r.stderr


def test_coordinator_address(check_env, tmp_path):
    _, _, checks = as_json(check_env)
    coord = checks["coordinator"]
    assert coord["available"] and coord["value"] == check_env["CKPT_COORD"]
    assert "ckpt_launch starts one there" in coord["detail"]
    bad = str(tmp_path / "missing-dir" / "c.sock")
    r, _, checks = as_json(check_env, "--coord", bad)
    assert r.returncode == 1
    assert checks["coordinator"]["value"] == bad
    assert "none can be started there" in checks["coordinator"]["detail"]
    assert "ckpt_check: coordinator: " in r.stderr


def test_running_coordinator_answers(session):
    p = session.launch([ckpt_harness.app("counter"), "100000", "20"])
    p.wait_line(r"^count (\d+)")
    r = run([CHECK, "--json"], 30, env=session.env)
    checks = {c["name"]: c for c in json.loads(r.stdout)["checks"]}
    assert checks["coordinator"]["detail"] == (
        "a coordinator answers at %s" % session.coord)
    assert checks["ckptdir"]["value"] == session.ckptdir


def test_usage_errors(check_env):
    r = ckpt_check(check_env, "--no-such-option")
    assert r.returncode == 2 and "Usage: ckpt_check" in r.stderr
    r = ckpt_check(check_env, "extra")
    assert r.returncode == 2 and "unexpected argument 'extra'" in r.stderr
    r = ckpt_check(check_env, "--version")
    assert r.returncode == 0 and r.stdout.startswith("ckpt_check ")


# --- what is known true here, probed by this test itself -----------------

PAGEMAP_SOFT_DIRTY = 1 << 55
SYSCALLS = {"x86_64": {"userfaultfd": 323, "rseq": 334},
            "aarch64": {"userfaultfd": 282, "rseq": 293}}


def soft_dirty_works():
    """Clear the soft-dirty bits (clear_refs 4), write a page, read its
    pagemap entry: without CONFIG_MEM_SOFT_DIRTY bit 55 stays clear."""
    page = mmap.mmap(-1, mmap.PAGESIZE)
    cell = ctypes.c_char.from_buffer(page)
    addr = ctypes.addressof(cell)
    page[0] = 1
    with open("/proc/self/clear_refs", "w") as f:
        f.write("4")
    page[0] = 2
    with open("/proc/self/pagemap", "rb") as f:
        f.seek(addr // mmap.PAGESIZE * 8)
        entry = int.from_bytes(f.read(8), "little")
    del cell
    page.close()
    return bool(entry & PAGEMAP_SOFT_DIRTY)


def raw_syscall(name, *args):
    """(result, errno) of a system call glibc may not wrap."""
    libc = ctypes.CDLL(None, use_errno=True)
    nr = SYSCALLS[os.uname().machine][name]
    return libc.syscall(nr, *args), ctypes.get_errno()


UFFD_API = 0xAA
UFFDIO_API = 0xc018aa3f         # _IOWR(0xAA, 0x3F, struct uffdio_api)
UFFD_FEATURE_PAGEFAULT_FLAG_WP = 1 << 0
UFFD_FEATURE_WP_ASYNC = 1 << 15


def userfaultfd_features():
    """The features UFFDIO_API offers on a new userfaultfd, None when
    there is none for this user."""
    fd, _ = raw_syscall("userfaultfd", os.O_CLOEXEC | os.O_NONBLOCK)
    if fd < 0:
        return None
    try:
        api = struct.pack("QQQ", UFFD_API, 0, 0)
        return struct.unpack("QQQ", fcntl.ioctl(fd, UFFDIO_API, api))[1]
    finally:
        os.close(fd)


def rseq_present():
    """rseq with no area: EINVAL from a kernel that has it."""
    _, err = raw_syscall("rseq", None, 0, 0, 0)
    return err != errno.ENOSYS


def test_kernel_features_match_what_this_test_probes(check_env):
    """On the test machine: no soft-dirty; userfaultfd with write-protect,
    asynchronous too; rseq present; each as this test finds it itself."""
    _, _, checks = as_json(check_env)
    assert checks["soft_dirty"]["available"] == soft_dirty_works()
    features = userfaultfd_features()
    assert checks["userfaultfd"]["available"] == (features is not None)
    if features is not None:
        assert int(checks["userfaultfd"]["value"], 16) == features
    wp = bool((features or 0) & UFFD_FEATURE_PAGEFAULT_FLAG_WP)
    wp_async = bool((features or 0) & UFFD_FEATURE_WP_ASYNC)
    assert checks["uffd_wp"]["available"] == wp
    assert checks["uffd_wp"]["detail"].endswith(
        "(UFFD_FEATURE_WP_ASYNC): %s" % ("yes" if wp_async else "no"))
    assert checks["rseq"]["available"] == rseq_present()


# PAGEMAP_SCAN over a range userfaultfd write-protects asynchronously, as
# libckpt's dirty_pages.c uses it (include/uapi/linux/fs.h, userfaultfd.h)
UFFD_USER_MODE_ONLY = 1
UFFDIO_REGISTER = 0xc020aa00    # _IOWR(0xAA, 0x00, struct uffdio_register)
UFFDIO_REGISTER_MODE_WP = 1 << 1
PAGEMAP_SCAN = 0xc0606610       # _IOWR('f', 16, struct pm_scan_arg)
PM_SCAN_WP_MATCHING, PM_SCAN_CHECK_WPASYNC = 1 << 0, 1 << 1
PAGE_IS_WRITTEN, PAGE_IS_PRESENT = 1 << 1, 1 << 3
SCAN_PAGES = 4


def scan_written(pagemap, start, end):
    """[(start, end)] of the written pages, protected again."""
    vec = ctypes.create_string_buffer(24 * SCAN_PAGES)
    arg = bytearray(struct.pack(
        "12Q", 96, PM_SCAN_WP_MATCHING | PM_SCAN_CHECK_WPASYNC, start, end,
        0, ctypes.addressof(vec), SCAN_PAGES, 0, 0, PAGE_IS_WRITTEN,
        PAGE_IS_PRESENT, PAGE_IS_WRITTEN))
    n = fcntl.ioctl(pagemap, PAGEMAP_SCAN, arg, True)
    return [struct.unpack_from("QQ", vec.raw, 24 * i) for i in range(n)]


def pagemap_scan_tracks_writes():
    """Four pages registered with an asynchronous write-protecting
    userfaultfd; a scan protects them; the third is written; the next
    scan must return exactly that page. False when any step is refused."""
    size = SCAN_PAGES * mmap.PAGESIZE
    pages = mmap.mmap(-1, size)
    cell = ctypes.c_char.from_buffer(pages)
    start = ctypes.addressof(cell)
    pages.write(b"\1" * size)
    uffd, _ = raw_syscall("userfaultfd", os.O_CLOEXEC | os.O_NONBLOCK |
                          UFFD_USER_MODE_ONLY)
    pagemap = os.open("/proc/self/pagemap", os.O_RDONLY | os.O_CLOEXEC)
    try:
        if uffd < 0:
            return False
        fcntl.ioctl(uffd, UFFDIO_API, bytearray(struct.pack(
            "QQQ", UFFD_API, UFFD_FEATURE_WP_ASYNC, 0)), True)
        fcntl.ioctl(uffd, UFFDIO_REGISTER, bytearray(struct.pack(
            "QQQQ", start, size, UFFDIO_REGISTER_MODE_WP, 0)), True)
        scan_written(pagemap, start, start + size)
        pages[2 * mmap.PAGESIZE] = 2
        third = start + 2 * mmap.PAGESIZE
        return scan_written(pagemap, start, start + size) == [
            (third, third + mmap.PAGESIZE)]
    except OSError:
        return False
    finally:
        os.close(pagemap)
        if uffd >= 0:
            os.close(uffd)
        del cell
        pages.close()


# In a fresh interpreter (a raw clone3 forks it): ask for a free pid of
# the upper half, print "yes" when the child got it, else why not.
CLONE3_SET_TID_PROBE = r"""
import ctypes, errno, os, random, struct
libc = ctypes.CDLL(None, use_errno=True)
nr = {"x86_64": 435, "aarch64": 435}[os.uname().machine]
pid_max = int(open("/proc/sys/kernel/pid_max").read())
for _ in range(50):
    want = ctypes.c_int(random.randrange(pid_max // 2, pid_max))
    if os.path.exists("/proc/%d" % want.value):
        continue
    args = ctypes.create_string_buffer(struct.pack(
        "11Q", 0, 0, 0, 0, 17, 0, 0, 0, ctypes.addressof(want), 1, 0))
    r = libc.syscall(nr, args, 88)
    if r == 0:
        os._exit(0)
    if r > 0:
        os.waitpid(r, 0)
        print("yes" if r == want.value else "got pid %d" % r)
        break
    err = ctypes.get_errno()
    if err != errno.EEXIST:
        print("no: " + errno.errorcode.get(err, str(err)))
        break
"""


def clone3_set_tid_works():
    r = run([sys.executable, "-c", CLONE3_SET_TID_PROBE], 30)
    assert r.returncode == 0 and r.stdout.strip(), r.stderr
    return r.stdout.strip() == "yes"


def test_clone3_and_pagemap_scan_match_what_this_test_probes(check_env):
    """clone3 with set_tid (a child made with a pid of the test's choice)
    and PAGEMAP_SCAN tracking a write under asynchronous userfaultfd
    write-protection (as libckpt's dirty_pages.c uses it): ckpt_check
    says what this test finds. Here (root, Linux 6.18) both work."""
    r, _, checks = as_json(check_env)
    assert checks["clone3_set_tid"]["available"] == clone3_set_tid_works()
    scan = pagemap_scan_tracks_writes()
    assert checks["pagemap_scan"]["available"] == scan
    if scan:
        assert "finds the pages written" in checks["pagemap_scan"]["detail"]
    text = text_lines(ckpt_check(check_env).stdout)
    for name in ("clone3_set_tid", "pagemap_scan"):
        assert text[name][0] == ("yes" if checks[name]["available"]
                                 else "no")
