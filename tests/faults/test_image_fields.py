# SPDX-License-Identifier: LGPL-2.1-or-later
"""Images whose checksums are right but whose fields make no sense
(issue 8, item 16). A real image of tests/apps/counter is rewritten one
field at a time, header and metadata hashes recomputed
(tests/ckpt_image.py), so each copy passes every checksum and reaches
the field checks of restart/image_fields.c. ckpt_restart and
ckpt_inspect must refuse each with exit status 1 and one line
"PROG: IMAGE: field NAME = VALUE: why", before the loader runs: before,
a program break at 2^62, a stack region without access rights or a TLS
base of 0 killed the restart with SIGSEGV and no word."""

import re

import pytest

from ckpt_harness import app, copy_image, tool
from ckpt_image import run_tool
from ckpt_image import FD_FMT, REGION_FMT, THREAD_FMT, Image

TIMEOUT = 60
KIND_STACK, KIND_HEAP = 3, 2
F_HAS_BRK = 0x1


def regions_of(im, kind):
    return [i for i, r in enumerate(im.regions()) if r[3] == kind]


def set_region(im, kind, field, value):
    i = regions_of(im, kind)[0]
    reg = im.regions()[i]
    reg[field] = value
    im.set_region(i, reg)
    return i


def set_last_region_end(im, end):
    i = len(im.regions()) - 1
    reg = im.regions()[i]
    reg[1] = end
    im.set_region(i, reg)


def set_thread(im, field, value):
    th = im.table(THREAD_FMT, "threads_offset", "nthreads")[0]
    th[field] = value
    im.set_entry(THREAD_FMT, "threads_offset", 0, th)


def set_fd(im, field, value):
    fd = im.table(FD_FMT, "fds_offset", "nfds")[0]
    fd[field] = value
    im.set_entry(FD_FMT, "fds_offset", 0, fd)


def unmapped_address(im):
    """A page no saved region holds."""
    regions = im.regions()
    return regions[0][0] - 0x10000


# name: (change, expected "field NAME = VALUE" regex)
CASES = {
    "brk_start_2_62": (lambda im: im.set_header(brk_start=1 << 62),
                       r"field brk_start = 0x4000000000000000: beyond this "
                       r"machine's user address space"),
    "stack_no_access": (lambda im: set_region(im, KIND_STACK, 2, 0),
                        r"field region\[\d+\]\.prot = ---: the stack region "
                        r"[0-9a-f]+-[0-9a-f]+ must be readable and "
                        r"writable"),
    "restore_tls_0": (lambda im: im.set_header(restore_tls=0),
                      r"field restore_tls = 0: the loader sets the main "
                      r"thread's TLS base there, but no saved region "
                      r"holds it"),
    "brk_end_below_start": (
        lambda im: im.set_header(brk_end=im.header()["brk_start"] - 4096),
        r"field brk_end = 0x[0-9a-f]+: the program break must lie between "
        r"brk_start"),
    "heap_no_access": (lambda im: set_region(im, KIND_HEAP, 2, 1),
                       r"field region\[\d+\]\.prot = r--: the heap region "),
    "region_end_2_62": (
        lambda im: set_last_region_end(im, 1 << 62),
        r"field region\[\d+\]\.end = 0x4000000000000000: beyond this "
        r"machine's user address space"),
    "restore_entry_not_code": (
        lambda im: im.set_header(restore_entry=im.header()["restore_tls"]),
        r"field restore_entry = 0x[0-9a-f]+: the loader calls libckpt "
        r"there, but its region [0-9a-f]+-[0-9a-f]+ has protection rw-, "
        r"not --x"),
    "restore_stack_unaligned": (
        lambda im: im.set_header(
            restore_stack_top=im.header()["restore_stack_top"] - 8),
        r"field restore_stack_top = 0x[0-9a-f]+: the restore stack's top "
        r"must be 16-byte aligned"),
    "vpid_negative": (lambda im: im.set_header(vpid=-5),
                      r"field vpid = -5: the restored process's pid must "
                      r"be positive"),
    "unknown_flags": (
        lambda im: im.set_header(flags=im.header()["flags"] | 0x100),
        r"field flags = 0x[0-9a-f]+: unknown flags 0x100"),
    "xsave_in_use_not_saved": (
        lambda im: im.set_header(cpu_features_in_use=(
            im.header()["cpu_features_in_use"] | (1 << 62))),
        r"field cpu_features_in_use = 0x[0-9a-f]+: holds state components "
        r"0x4000000000000000 that cpu_features"),
    "nthreads_0": (lambda im: im.set_header(nthreads=0),
                   r"field nthreads = 0: a process has at least one "
                   r"thread"),
    "thread_sp_unmapped": (
        lambda im: set_thread(im, 3, unmapped_address(im)),
        r"field thread\[0\]\.sp = 0x[0-9a-f]+: the thread resumes on the "
        r"stack below, but no saved region holds it"),
    "thread_not_main": (lambda im: set_thread(im, 1, 0),
                        r"field nthreads = \d+: no thread record is the main "
                        r"thread"),
    "fd_number_negative": (lambda im: set_fd(im, 0, -7),
                           r"field fd\[0\]\.fd = -7: not an fd number"),
    "fd_number_huge": (lambda im: set_fd(im, 0, 1 << 30),
                       r"field fd\[0\]\.fd = 1073741824: not an fd number"),
    "fd_kind_unknown": (lambda im: set_fd(im, 1, 99),
                        r"field fd\[0\]\.kind = 99: unknown kind"),
    "pty_master_without_settings": (
        lambda im: set_fd(im, 1, 40),
        r"field fd\[0\]\.data_size = 0: a pty-master record carries its "
        r"64-byte settings"),
}


def run(argv, env):
    return run_tool(argv, env, TIMEOUT)


def assert_field_refused(r, prog, img, pattern):
    assert r.returncode >= 0, "%s killed by signal %d: %r" % (
        prog, -r.returncode, r.stderr)
    assert r.returncode == 1, "%s: exit %d, stderr %r" % (
        prog, r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, "%s: expected one line, got %r" % (prog, lines)
    want = r"^%s: %s: %s" % (prog, re.escape(img), pattern)
    assert re.search(want, lines[0]), "%r does not match %r" % (
        lines[0], want)


@pytest.fixture(scope="module")
def real_image(tmp_path_factory):
    """One checkpoint of counter, shared by the cases."""
    import ckpt_harness
    s = ckpt_harness.Session()
    try:
        p = s.launch([app("counter"), "100000", "50"])
        p.wait_line(r"^count 3 ")
        images = s.checkpoint()
        p.sigkill()
        img = copy_image(images[0], str(tmp_path_factory.mktemp("fields")))
        env = dict(s.env)
    finally:
        s.close()
    h = Image(img).header()
    assert h["flags"] & F_HAS_BRK and regions_of(Image(img), KIND_HEAP), \
        "counter's image has no program break and heap to test with"
    yield img, env


def test_real_image_passes(real_image):
    img, env = real_image
    r = run([tool("ckpt_inspect"), img], env)
    assert r.returncode == 0, r.stderr
    assert "all checksums verified" in r.stdout


@pytest.mark.parametrize("case", sorted(CASES))
def test_nonsense_field_refused(real_image, tmp_path, case):
    img, env = real_image
    change, pattern = CASES[case]
    im = Image(img)
    change(im)
    im.rehash()
    bad = im.write(str(tmp_path / ("ckpt_%s.img" % case)))
    env = dict(env, CKPT_COORD=str(tmp_path / "no-coordinator.sock"))
    assert_field_refused(run([tool("ckpt_restart"), bad], env),
                         "ckpt_restart", bad, pattern)
    assert_field_refused(run([tool("ckpt_inspect"), bad], env),
                         "ckpt_inspect", bad, pattern)
