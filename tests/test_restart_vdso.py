# SPDX-License-Identifier: LGPL-2.1-or-later
"""Restart on another kernel (another vdso) and on a CPU with fewer XSAVE
features (ckpt_restart --cpu-compat).

Without a second kernel: the loader self-test images (restart/selftest)
carry either this kernel's vdso code with one byte changed, or a crafted
"old" vdso whose entry points lie at other offsets and trap if they ever
run unredirected; the restored program calls the old entry points and
checks the answers. A real libckpt image with its vdso code changed the
same way must continue its glibc program through the redirected entry
points. docs/restart.md, section 4. Run `make` first.
"""

import os
import re
import struct
import subprocess

import pytest

from test_restart_badinput import (  # noqa: F401  (fixtures)
    EXTENT_FMT, INSPECT, RESTART, Image, assert_quiet, assert_refused, built,
    ckpt_hash64, coord, restart, run, work)

KIND_VDSO, KIND_VVAR = 7, 8


def vdso_region(im):
    for i, reg in enumerate(im.regions()):
        if reg[3] == KIND_VDSO:
            return i, reg
    raise AssertionError("image has no vdso region")


def extent_at(im, index):
    off = im.header()["extents_offset"] + \
        struct.calcsize(EXTENT_FMT) * index
    return off, list(struct.unpack_from(EXTENT_FMT, im.data, off))


def change_vdso_code(im, change):
    """change(bytearray of the saved vdso) in place; extent hash redone."""
    _, reg = vdso_region(im)
    assert reg[5] == 1, "expected the vdso saved as one extent"
    off, (addr, length, foff, _, enc, stored, src, res) = extent_at(
        im, reg[6])
    code = bytearray(im.data[foff:foff + length])
    change(code)
    im.data[foff:foff + length] = code
    struct.pack_into(EXTENT_FMT, im.data, off, addr, length, foff,
                     ckpt_hash64(bytes(code)), enc, stored, src, res)
    im.rehash()


def restarted_ok(r):
    assert r.returncode == 42, "exit %d, stderr: %r" % (r.returncode,
                                                       r.stderr)
    assert "all checks passed" in r.stdout


# --- the self-test: same kernel, with the vdso code -------------------------

def test_same_vdso_code_moves(work, coord):
    """libckpt now saves the vdso code; on the same kernel the current set
    is moved as before, and inspect says nothing about redirection."""
    img = work("same.img", "--vdso-code")
    r = run([INSPECT, img])
    assert r.returncode == 0, r.stderr
    assert "vdso code saved (8192 bytes)" in r.stdout or \
        "vdso code saved" in r.stdout
    assert "redirect" not in r.stdout
    r = restart(img, coord)
    restarted_ok(r)
    assert r.stderr == ""


def test_older_image_without_vdso_code(work):
    img = work("old.img")
    r = run([INSPECT, img])
    assert r.returncode == 0 and "no vdso code saved" in r.stdout


# --- another kernel's vdso ----------------------------------------------------

@pytest.mark.parametrize("variant", [["--vdso-code-modified"],
                                     ["--old-vdso"],
                                     ["--old-vdso", "--cover-top"]],
                         ids=["same-layout-other-code", "other-layout",
                              "other-layout-cover-top"])
def test_other_vdso_redirected(work, coord, variant):
    """The old vdso's entry points answer through this kernel's vdso:
    clock_gettime, gettimeofday, time, getcpu, clock_getres; a function
    this kernel lacks returns -ENOSYS; the old data pages are zero."""
    img = work("other.img", *variant)
    r = run([INSPECT, img])
    assert r.returncode == 0, r.stderr
    assert "a restart will redirect the old vdso entry points" in r.stdout
    r = restart(img, coord)
    restarted_ok(r)
    assert_quiet(r.stderr, variant)


def test_old_vdso_entry_too_short(work, coord):
    img = work("short.img", "--old-vdso-short")
    assert_refused(restart(img, coord), img,
                   r"vdso: the saved vdso's __vdso_getcpu is 4 bytes, too "
                   r"short to be redirected")


def test_old_vdso_not_elf(work, coord):
    im = Image(work("notelf.img", "--old-vdso"))

    def spoil(code):
        code[0:4] = b"\0ELF"
    change_vdso_code(im, spoil)
    img = im.write(str(work.dir / "notelf2.img"))
    assert_refused(restart(img, coord), img,
                   r"vdso: the saved vdso cannot be redirected: it is not "
                   r"an ELF image")


def test_old_vdso_symbols_outside(work, coord):
    im = Image(work("shoff.img", "--old-vdso"))

    def spoil(code):
        struct.pack_into("<Q", code, 0x28, 1 << 40)     # e_shoff
    change_vdso_code(im, spoil)
    img = im.write(str(work.dir / "shoff2.img"))
    assert_refused(restart(img, coord), img,
                   r"vdso: the saved vdso cannot be redirected: its section "
                   r"headers lie outside it")


def test_old_vdso_corrupt(work, coord):
    """The saved vdso code is hash-checked like any memory."""
    im = Image(work("corrupt.img", "--old-vdso"))
    _, reg = vdso_region(im)
    _, ext = extent_at(im, reg[6])
    im.data[ext[2] + 0x1010] ^= 0x01
    img = im.write(str(work.dir / "corrupt2.img"))
    assert_refused(restart(img, coord), img,
                   r"memory [0-9a-f]+-[0-9a-f]+: checksum mismatch")


def test_other_vdso_without_code_refused(work, coord):
    """An image from before vdso code was saved cannot be redirected."""
    im = Image(work("nocode.img", "--old-vdso"))
    i, reg = vdso_region(im)
    reg[5] = 0                          # nextents
    im.set_region(i, reg)
    im.rehash()
    img = im.write(str(work.dir / "nocode2.img"))
    assert_refused(restart(img, coord), img,
                   r"vdso layout differs from the checkpointing kernel: .*"
                   r"carries no vdso code")


def test_vvar_with_data_refused(work, coord):
    im = Image(work("vvar.img", "--old-vdso"))
    i, reg = vdso_region(im)
    reg[3] = KIND_VVAR
    im.set_region(i, reg)
    im.rehash()
    img = im.write(str(work.dir / "vvar2.img"))
    assert_refused(restart(img, coord), img, r"a vvar region carries data")


# --- CPU features ---------------------------------------------------------------

def missing_feature(work):
    """(mask, name) of an XSAVE component this CPU lacks."""
    xcr0 = Image(work("probe.img")).header()["cpu_features"]
    for mask, name in ((0x60000, "AMX state"), (0xe0, "AVX-512 state"),
                       (1 << 62, "XSAVE component 62")):
        if not xcr0 & mask:
            return xcr0, mask, name
    raise AssertionError("no missing component found")


def test_cpu_missing_refused_by_default(work, coord):
    xcr0, mask, name = missing_feature(work)
    img = work("cpu.img", "--xcr0", "%x" % (xcr0 | mask), "--xcr0-in-use",
               "3")
    assert_refused(restart(img, coord), img,
                   r"this CPU lacks .*%s.*see ckpt_restart --cpu-compat"
                   % re.escape(name))
    r = run([INSPECT, img])
    assert r.returncode == 0
    assert "in use 0x3" in r.stdout
    assert "ckpt_restart --cpu-compat can" in r.stdout


def test_cpu_compat_restarts_with_warning(work, coord):
    """Unused missing state: restarted, one warning line naming it; the
    loader hands this CPU's XCR0 to the restored program."""
    xcr0, mask, name = missing_feature(work)
    img = work("cpu.img", "--xcr0", "%x" % (xcr0 | mask), "--xcr0-in-use",
               "3")
    r = restart(img, coord, "--cpu-compat")
    restarted_ok(r)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert img in lines[0]
    assert re.search(r"warning: --cpu-compat: this CPU lacks .*%s.*you "
                     r"guarantee" % re.escape(name), lines[0]), lines[0]


def test_cpu_compat_state_in_use_refused(work, coord):
    xcr0, mask, name = missing_feature(work)
    img = work("cpu.img", "--xcr0", "%x" % (xcr0 | mask), "--xcr0-in-use",
               "%x" % (3 | mask))
    assert_refused(restart(img, coord, "--cpu-compat"), img,
                   r"this CPU lacks .*%s, which the saved threads hold"
                   % re.escape(name))


def test_cpu_compat_older_image_refused(work, coord):
    """cpu_features_in_use 0: an image from before the field."""
    xcr0, mask, name = missing_feature(work)
    img = work("cpu.img", "--xcr0", "%x" % (xcr0 | mask))
    assert_refused(restart(img, coord, "--cpu-compat"), img,
                   r"this CPU lacks .*does not record which state")


def test_cpu_compat_nothing_missing(work, coord):
    img = work("cpu.img", "--xcr0-in-use", "3")
    r = restart(img, coord, "--cpu-compat")
    restarted_ok(r)
    assert r.stderr == ""


def test_help_mentions_cpu_compat(built):
    r = run([RESTART, "--help"])
    assert r.returncode == 0 and "--cpu-compat" in r.stdout


# --- a real glibc program through redirected entry points ----------------------

CLOCKS_C = r"""
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* clocks N: N steps, each calling glibc's vdso-backed functions and
 * checking them against each other; "tick K" per step, "done N". */
int main(int argc, char **argv)
{
	long n = atol(argv[1]), k;
	struct timespec prev = { 0 }, mono, real, res;
	struct timeval tv;
	unsigned cpu;

	for (k = 1; k <= n; k++) {
		if (clock_gettime(CLOCK_MONOTONIC, &mono) ||
		    clock_gettime(CLOCK_REALTIME, &real) ||
		    gettimeofday(&tv, NULL) || clock_getres(CLOCK_MONOTONIC,
							    &res) ||
		    getcpu(&cpu, NULL)) {
			printf("error at %ld\n", k);
			return 1;
		}
		if (mono.tv_sec < prev.tv_sec ||
		    labs(real.tv_sec - time(NULL)) > 2 ||
		    labs(tv.tv_sec - real.tv_sec) > 2 || res.tv_sec) {
			printf("bad clocks at %ld\n", k);
			return 1;
		}
		prev = mono;
		printf("tick %ld\n", k);
		fflush(stdout);
		usleep(20000);
	}
	printf("done %ld\n", n);
	return 0;
}
"""


@pytest.fixture
def clocks(tmp_path):
    src = tmp_path / "clocks.c"
    src.write_text(CLOCKS_C)
    exe = str(tmp_path / "clocks")
    r = subprocess.run(["cc", "-O2", "-o", exe, str(src)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return exe


def test_real_image_other_vdso_code(session, clocks, tmp_path):
    """A libckpt image whose saved vdso differs from this kernel's (one
    byte of padding): restarted with the old vdso's code at its address,
    glibc's cached pointers sent on to this kernel's vdso; the program
    keeps calling its clocks and finishes. Checkpointed again, it restarts
    once more (now the same kernel)."""
    p = session.launch([clocks, "150"])
    p.wait_line(r"^tick 10$")
    real = session.checkpoint()[0]
    p.sigkill()
    im = Image(real)
    try:
        vdso_region(im)
    except AssertionError:
        pytest.skip("libckpt saved no vdso region")
    if vdso_region(im)[1][5] == 0:
        pytest.skip("libckpt does not save the vdso code yet")

    def flip_last_byte(code):
        code[-1] ^= 0x5a
    change_vdso_code(im, flip_last_byte)
    img = im.write(str(tmp_path / "other_vdso.img"))
    r = run([INSPECT, img])
    assert r.returncode == 0, r.stderr
    assert "a restart will redirect" in r.stdout
    q = session.restart([img])
    q.wait_line(r"^tick 30$")
    again = session.checkpoint()[0]
    q.sigkill()
    q2 = session.restart([again])
    q2.wait_line(r"^done 150$")
    assert not any(l.startswith(("error", "bad")) for l in q2.lines())
