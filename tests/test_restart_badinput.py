# SPDX-License-Identifier: LGPL-2.1-or-later
"""ckpt_restart and ckpt_inspect on good and bad images.

Images come from the loader self-test generator (restart/selftest/mkimage:
a tiny freestanding "restored program" instead of libckpt, so the address
space rebuild is tested on its own) and, when libckpt works, from a real
checkpoint. Every bad image must be refused with exit status 1 and one
clear line on stderr naming the image, within a timeout, never by a
signal or a core dump. Run `make` first.
"""

import os
import random
import re
import shutil
import signal
import struct
import subprocess
import tempfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "build", "bin")
SELFTEST = os.path.join(ROOT, "build", "selftest", "restart")
RESTART = os.path.join(BIN, "ckpt_restart")
INSPECT = os.path.join(BIN, "ckpt_inspect")
COMMAND = os.path.join(BIN, "ckpt_command")
MKIMAGE = os.path.join(SELFTEST, "mkimage")
RESTORED = os.path.join(SELFTEST, "restored.bin")
TIMEOUT = 30

from ckpt_image import (EXTENT_FMT, HEADER_SIZE, OLD_HEADER_SIZE,  # noqa: F401
                        Image, ckpt_hash64)


def run(argv, timeout=TIMEOUT, **kw):
    try:
        return subprocess.run(argv, capture_output=True, text=True,
                              timeout=timeout, **kw)
    except subprocess.TimeoutExpired:
        pytest.fail("%s hung for more than %d s" % (" ".join(argv), timeout))


@pytest.fixture(scope="module")
def built():
    missing = [p for p in (RESTART, INSPECT, MKIMAGE, RESTORED)
               if not os.path.exists(p)]
    if missing:
        pytest.fail("not built (run make): " + ", ".join(missing))


@pytest.fixture(scope="module")
def coord():
    """A private coordinator address; the coordinator ckpt_restart starts
    there is told to quit at the end."""
    d = tempfile.mkdtemp(prefix="ckr-", dir="/tmp")
    addr = os.path.join(d, "c.sock")
    yield addr
    if os.path.exists(addr):
        run([COMMAND, "--coord", addr, "--quit"], timeout=15)
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def work(tmp_path, built):
    """mkimage in a fresh directory: returns a function making images."""
    def make(name="good.img", *extra):
        img = str(tmp_path / name)
        data = str(tmp_path / (name + ".data"))
        r = run([MKIMAGE, "--out", img, "--restored", RESTORED,
                 "--datafile", data] + list(extra))
        assert r.returncode == 0, r.stderr
        return img
    make.dir = tmp_path
    return make


def restart(image, coord, *extra):
    return run([RESTART, "--coord", coord] + list(extra) + [image])


def assert_refused(r, image, pattern, status=1):
    """Exit status 1, no signal, exactly one stderr line naming the image
    and matching pattern."""
    assert r.returncode >= 0, "killed by signal %d: %s" % (
        -r.returncode, r.stderr)
    assert r.returncode == status, "exit %d, stderr: %r" % (
        r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, "expected one error line, got %r" % r.stderr
    assert image in lines[0], "%r does not name %s" % (lines[0], image)
    assert re.search(pattern, lines[0]), "%r does not match %r" % (
        lines[0], pattern)


# --- the self-test image restarts -------------------------------------------

def assert_quiet(stderr, variant):
    """Nothing on stderr; with --cover-top, whose regions cover the
    loader's stack and so the program's command line there, at most the
    note that the restart goes on without it."""
    if "--cover-top" in variant:
        assert stderr == "" or re.fullmatch(
            r"ckpt_restart: \S+: note: the program's command line area "
            r"[0-9a-f]+-[0-9a-f]+ is needed by region [0-9a-f]+-[0-9a-f]+ "
            r"\(.*\): /proc/PID/cmdline of the restarted process stays "
            r"empty\n", stderr), stderr
    else:
        assert stderr == ""


@pytest.mark.parametrize("variant", [[], ["--cover-top"], ["--no-vdso"]],
                         ids=["plain", "cover-top", "no-vdso"])
def test_selftest_image_restarts(work, coord, variant):
    """Every region kind rebuilt, hashes right, args/TLS/stack/fds/signals
    as promised; --cover-top puts regions over the loader's own stack and
    vdso so they must be moved out of the way first."""
    img = work("st.img", "--exit-code", "42", *variant)
    r = restart(img, coord)
    assert r.returncode == 42, "exit %d, stderr: %r" % (r.returncode,
                                                       r.stderr)
    assert "all checks passed" in r.stdout
    assert_quiet(r.stderr, variant)


def test_selftest_extra_fds_are_closed(work, coord):
    img = work()
    fds = [os.open("/dev/null", os.O_RDONLY) for _ in range(3)]
    try:
        r = run([RESTART, "--coord", coord, img], pass_fds=fds)
    finally:
        for fd in fds:
            os.close(fd)
    assert r.returncode == 42, r.stderr


def test_selftest_stdin_closed(work, coord):
    """The image must not take fd 0, which the loader keeps for the
    program."""
    img = work()
    r = run([RESTART, "--coord", coord, img], stdin=None,
            preexec_fn=lambda: os.close(0))
    assert r.returncode == 42, r.stderr
    assert "all checks passed" in r.stdout


def test_selftest_several_images(work, coord):
    """One child per image; the first failure's status is ours."""
    ok = work("a.img", "--exit-code", "0")
    ok2 = work("b.img", "--exit-code", "0")
    r = run([RESTART, "--coord", coord, ok, ok2])
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("all checks passed") == 2
    bad = work("c.img", "--exit-code", "5")
    r = run([RESTART, "--coord", coord, ok, bad])
    assert r.returncode == 5, r.stderr


def test_older_shorter_header(work, coord):
    """An image whose header ends at header_hash (written before fields
    were appended) still restarts and inspects: the hash covers
    header_size bytes, the missing fields read as 0."""
    im = Image(work())
    im.set_header(header_size=OLD_HEADER_SIZE, computation_id=0,
                  files_offset=0, nfiles=0, unrestored=0, cmdline=0,
                  cmdline_size=0, environment=0, environment_size=0)
    im.rehash()
    img = im.write(str(work.dir / "older.img"))
    r = restart(img, coord)
    assert r.returncode == 42, r.stderr
    r = run([INSPECT, img])
    assert r.returncode == 0 and "computation" not in r.stdout, r.stdout
    im.set_header(header_size=OLD_HEADER_SIZE - 8)
    im.rehash()
    img = im.write(str(work.dir / "short.img"))
    assert_refused(restart(img, coord), img,
                   r"header size 344, expected 352 to 4096")


def test_inspect_good_image(work):
    img = work()
    r = run([INSPECT, img])
    assert r.returncode == 0, r.stderr
    for text in ("program     selftest", "file-shared", "[vdso]",
                 "all checksums verified", "1 threads", "3 fds",
                 "ckpt's checkpoint signal: SIGRTMAX",
                 "\n  SIGPIPE     ignored\n",
                 ", flags SA_SIGINFO SA_RESTART, mask SIGTERM\n",
                 "pending for the process: SIGWINCH\n",
                 "signals: blocked SIGUSR2; pending SIGUSR2\n"):
        assert text in r.stdout


@pytest.mark.parametrize("field,value,what", [
    ("signals_offset", 1 << 40, "signal state"),
    ("signals_offset", 4096 + 4, "signal state table at offset 4100 is not "
     "8-byte aligned"),
    ("nthread_signals", 1 << 20, "thread signal")])
def test_signal_state_outside_metadata(work, coord, field, value, what):
    """Version 7's signal state tables are checked like the others: a
    corrupt place or count is refused by ckpt_restart and ckpt_inspect,
    naming the table."""
    im = Image(work())
    im.set_header(**{field: value})
    im.rehash()
    img = im.write(str(work.dir / "signals.img"))
    pattern = what if "aligned" in what else (
        what + r" table \(\d+ entries at offset \d+\) lies outside the "
        r"metadata block")
    assert_refused(restart(img, coord), img, pattern)
    assert_refused(run([INSPECT, img]), img, pattern)


# --- bad images ----------------------------------------------------------------

def truncation_points(img):
    h = Image(img).header()
    size = h["image_size"]
    return [0, 5, 100, 4095, 4096 + 100, h["data_offset"] + 100, size - 1]


@pytest.mark.parametrize("point", range(7))
def test_truncated(work, coord, point):
    good = work()
    cut = truncation_points(good)[point]
    img = str(work.dir / "cut.img")
    with open(good, "rb") as f:
        data = f.read()[:cut]
    with open(img, "wb") as f:
        f.write(data)
    pattern = "not a ckpt image" if cut < 8 else "truncated"
    assert_refused(restart(img, coord), img, pattern)
    assert_refused(run([INSPECT, img]), img, pattern)


def test_random_bytes(work, coord):
    img = str(work.dir / "random.img")
    with open(img, "wb") as f:
        f.write(random.Random(1).randbytes(3 * 4096))
    assert_refused(restart(img, coord), img, r"not a ckpt image")


def test_text_file(work, coord):
    img = str(work.dir / "notes.txt")
    with open(img, "w") as f:
        f.write("hello\n")
    assert_refused(restart(img, coord), img, r"not a ckpt image")


@pytest.mark.parametrize("kind", ["fifo", "directory", "device"])
def test_not_a_regular_file(work, coord, kind):
    """A FIFO with no writer must not hang either tool; directories and
    devices are refused as quickly."""
    if kind == "fifo":
        img = str(work.dir / "pipe.img")
        os.mkfifo(img, 0o600)
    elif kind == "directory":
        img = str(work.dir / "dir.img")
        os.mkdir(img)
    else:
        img = "/dev/zero"
    pattern = r"not a regular file \(a %s\)" % (
        "FIFO" if kind == "fifo" else kind)
    assert_refused(restart(img, coord), img, pattern)
    assert_refused(run([INSPECT, img]), img, pattern)


def test_wrong_magic(work, coord):
    im = Image(work())
    im.data[0:8] = b"CKPTIMG9"
    img = im.write(str(work.dir / "magic.img"))
    assert_refused(restart(img, coord), img, r"not a ckpt image")


def test_wrong_version(work, coord):
    im = Image(work())
    im.set_header(version=8)
    im.rehash()
    img = im.write(str(work.dir / "version.img"))
    assert_refused(restart(img, coord), img,
                   r"image format version 8, this ckpt reads 6 to 7: made "
                   r"by a newer ckpt")


@pytest.mark.parametrize("version", [1, 2, 3, 4, 5])
def test_older_version_refused_clearly(work, coord, version):
    """An image of an older format (1: before file records; 2: before
    the content saved with fd records was hashed; 3: before compressed
    extents; 4: before chains of incremental images; 5: before extent
    hashes over page hashes) is refused, naming
    why, by ckpt_restart and ckpt_inspect. (Version 6 differs from 7 only
    by the signal state it lacks: it is read, test_inspect.py.)"""
    im = Image(work())
    im.set_header(version=version)
    im.rehash()
    img = im.write(str(work.dir / "version.img"))
    pattern = (r"image format version %d, this ckpt reads 6 to 7: made by "
               r"an older ckpt, restart it with the ckpt that made it" %
               version)
    assert_refused(restart(img, coord), img, pattern)
    assert_refused(run([INSPECT, img]), img, pattern)


def test_wrong_arch(work, coord):
    im = Image(work())
    im.set_header(arch=183)
    im.rehash()
    img = im.write(str(work.dir / "arch.img"))
    assert_refused(restart(img, coord), img,
                   r"image is for aarch64, this machine is x86_64")
    # Not corrupt: ckpt_inspect decodes it and says why it cannot run here.
    r = run([INSPECT, img])
    assert r.returncode == 0 and "aarch64" in r.stdout


def test_corrupt_header(work, coord):
    im = Image(work())
    im.set_header(restore_entry=im.header()["restore_entry"] ^ 0x1000)
    img = im.write(str(work.dir / "header.img"))
    assert_refused(restart(img, coord), img, r"header checksum mismatch")


def test_corrupt_metadata(work, coord):
    im = Image(work())
    im.data[im.header()["meta_offset"] + 10] ^= 0x40
    img = im.write(str(work.dir / "meta.img"))
    assert_refused(restart(img, coord), img, r"metadata checksum mismatch")
    assert_refused(run([INSPECT, img]), img, r"metadata checksum mismatch")


def test_corrupt_extent_data(work, coord):
    """Passes the up-front checks; the loader finds it while restoring,
    after the address space is half rebuilt, and must still exit cleanly."""
    im = Image(work())
    im.data[im.header()["data_offset"] + 123] ^= 0x01
    img = im.write(str(work.dir / "data.img"))
    assert_refused(restart(img, coord), img,
                   r"memory [0-9a-f]+-[0-9a-f]+: checksum mismatch")
    assert_refused(run([INSPECT, img]), img, r"checksum mismatch")


def test_overlapping_regions(work, coord):
    im = Image(work())
    regs = im.regions()
    regs[1][0] = regs[0][1] - 4096      # start inside the previous region
    im.set_region(1, regs[1])
    im.rehash()
    img = im.write(str(work.dir / "overlap.img"))
    assert_refused(restart(img, coord), img, r"overlap")


def test_unaligned_region(work, coord):
    im = Image(work())
    regs = im.regions()
    regs[2][1] += 12
    im.set_region(2, regs[2])
    im.rehash()
    img = im.write(str(work.dir / "unaligned.img"))
    assert_refused(restart(img, coord), img, r"not page-aligned")


def test_extent_outside_file(work, coord):
    im = Image(work())
    h = im.header()
    off = h["extents_offset"]
    addr, length, foff, hsh, enc, stored, src, res = struct.unpack_from(
        EXTENT_FMT, im.data, off)
    struct.pack_into(EXTENT_FMT, im.data, off, addr, length,
                     h["image_size"] + 4096 * 16, hsh, enc, stored, src,
                     res)
    im.rehash()
    img = im.write(str(work.dir / "extent.img"))
    assert_refused(restart(img, coord), img, r"outside the image")


def test_missing_mapped_file(work, coord):
    img = work()
    os.unlink(img + ".data")
    assert_refused(restart(img, coord), img,
                   r"mapped file .*: No such file or directory")


def test_changed_mapped_file(work, coord):
    img = work()
    with open(img + ".data", "ab") as f:
        f.write(b"x" * 100)
    assert_refused(restart(img, coord), img,
                   r"mapped file .* changed since the checkpoint")


def test_missing_cpu_feature(work, coord):
    im = Image(work())
    xcr0 = im.header()["cpu_features"]
    missing = [(m, name) for m, name in ((0x60000, "AMX state"),
                                         (0xe0, "AVX-512 state"),
                                         (1 << 62, "XSAVE component 62"))
               if not xcr0 & m]
    mask, name = missing[0]
    im.set_header(cpu_features=xcr0 | mask)
    im.rehash()
    img = im.write(str(work.dir / "cpu.img"))
    assert_refused(restart(img, coord), img,
                   r"this CPU lacks .*" + re.escape(name))


def test_other_kernel_vdso(work, coord):
    """A vdso set unlike this kernel's: refused, cross-kernel is not done."""
    im = Image(work())
    for i, reg in enumerate(im.regions()):
        if im.string(reg[11]) == "[vdso]":
            start = im.header()["strings_offset"] + reg[11]
            im.data[start:start + 6] = b"[vdsX]"
    im.rehash()
    img = im.write(str(work.dir / "vdso.img"))
    assert_refused(restart(img, coord), img, r"vdso layout differs")


def test_not_a_file(work, coord):
    d = str(work.dir)
    assert_refused(restart(d, coord), d, r"not a regular file")
    missing = str(work.dir / "nope.img")
    assert_refused(restart(missing, coord), missing,
                   r"cannot open: No such file or directory")


def test_usage(built):
    r = run([RESTART])
    assert r.returncode == 1 and "no image given" in r.stderr
    r = run([RESTART, "--help"])
    assert r.returncode == 0 and "Usage: ckpt_restart" in r.stdout
    r = run([RESTART, "--version"])
    assert r.returncode == 0 and r.stdout.startswith("ckpt_restart ")
    r = run([INSPECT])
    assert r.returncode == 1


def test_one_bad_image_stops_all(work, coord):
    """Several images: all are validated before any restarts."""
    good = work("a.img")
    bad = str(work.dir / "bad.img")
    with open(bad, "wb") as f:
        f.write(b"garbage")
    r = run([RESTART, "--coord", coord, good, bad])
    assert r.returncode == 1
    assert "all checks passed" not in r.stdout
    assert bad in r.stderr


# --- a real checkpoint, corrupted --------------------------------------------

def test_real_image_corruptions(session, tmp_path):
    """A real libckpt image: inspect verifies it; each corruption is
    refused cleanly."""
    import ckpt_harness
    p = session.launch([ckpt_harness.app("counter"), "100000", "50"])
    p.wait_line(r"^count 3 ")
    images = session.checkpoint()
    p.sigkill()
    real = images[0]
    r = run([INSPECT, real])
    assert r.returncode == 0, r.stderr
    assert "all checksums verified" in r.stdout

    im = Image(real)
    h = im.header()
    cases = {
        "cut": (bytes(im.data[:h["data_offset"] + 4096]), r"truncated"),
        "meta": (None, r"metadata checksum mismatch"),
        "arch": (None, r"image is for aarch64"),
    }
    for name, (data, pattern) in cases.items():
        bad = Image(real)
        if name == "meta":
            bad.data[h["meta_offset"] + 1] ^= 0xff
        elif name == "arch":
            bad.set_header(arch=183)
            bad.rehash()
        img = str(tmp_path / (name + ".img"))
        if data is not None:
            with open(img, "wb") as f:
                f.write(data)
        else:
            bad.write(img)
        assert_refused(restart(img, session.coord), img, pattern)

    # Last extent corrupted: the loader finds it mid-restore.
    bad = Image(real)
    bad.data[h["image_size"] - 100] ^= 0x55
    img = bad.write(str(tmp_path / "data.img"))
    assert_refused(restart(img, session.coord), img, r"checksum mismatch")


@pytest.mark.parametrize("which", ["deleted file", "pipe", "temporary file"])
def test_corrupt_saved_content(work, coord, which):
    """Content saved with an fd record (a deleted file's, a pipe's bytes in
    flight; hashed since image format 3) or a file record: one flipped
    byte is found by ckpt_inspect and by ckpt_restart before it uses the
    content, naming the record."""
    img = work("content.img", "--saved-content")
    r = run([INSPECT, img])
    assert r.returncode == 0, r.stderr
    im = Image(img)
    text, pattern = {
        "deleted file": (b"the content of a file deleted",
                         r"fd 3 \(deleted-file /tmp/selftest-in \(deleted\)"
                         r"\): checksum mismatch"),
        "pipe": (b"in flight", r"fd 4 \(pipe pipe:\[4242\]\): checksum "
                 r"mismatch"),
        "temporary file": (b"a temporary file\n",
                           r"file .*content\.img\.data\.tmp: checksum "
                           r"mismatch"),
    }[which]
    off = im.data.index(text, im.header()["data_offset"])
    im.data[off + 5] ^= 0x20
    bad = im.write(str(work.dir / "bad.img"))
    assert_refused(run([INSPECT, bad]), bad, pattern)
    assert_refused(restart(bad, coord), bad,
                   r"(fd [34] \(.*\)|content\.img\.data\.tmp.*): checksum "
                   r"mismatch")
    assert not os.path.exists(img + ".data.tmp")
