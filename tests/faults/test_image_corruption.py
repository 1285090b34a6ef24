# SPDX-License-Identifier: LGPL-2.1-or-later
"""Every byte a restart reads back is covered by a checksum (issue 8,
item 14). A real image of a program reading a file deleted while open
(its content saved with the fd record) and appending to a log on
/dev/shm (tmpfs: its content saved with a file record, put back when it
is gone) is corrupted one byte at a time, at many offsets of every
section: the header, each metadata table, the memory extents, the
deleted file's content and the log's content. ckpt_inspect and
ckpt_restart must refuse each copy with a message naming the section,
by a clean exit status 1, never by a signal and never by restarting the
program. Before image format 3 the deleted file's content had no hash:
such a copy restarted and exited 0 with wrong results while ckpt_inspect
said "all checksums verified". A byte no restart reads (the header
page's padding) may change: the restart must then give exactly the
uninterrupted run's results."""

import os
import random
import re
import struct

import pytest

from ckpt_harness import (app, checkpoint_and_kill, copy_image,
                          reference_output, tail_after_progress, tool)
from ckpt_image import run_tool
from ckpt_image import (EXTENT_FMT, FD_FMT, FILE_FMT, Image, REGION_FMT,
                        THREAD_FMT)

PROGRESS = r"^record (\d+)$"
COUNT = 300
TIMEOUT = 120
FD_DELETED = 2
FILE_F_CONTENT = 0x20
CHECKSUM = r"checksum mismatch"


def make_input(path):
    lines = ["rec %04d %s" % (i, "abcdefghijklmnopqrstuvwxyz"[:(i * 5) % 21])
             for i in range(1, COUNT + 1)]
    with open(path, "w") as f:
        f.write("".join(line + "\n" for line in lines))
    return lines


def header_pattern():
    return r"header|bad magic|image format version"


def meta_sections(im):
    """Each metadata table: a flipped byte breaks meta_hash."""
    h = im.header()
    out = []
    for name, fmt, off, count in (
            ("regions", REGION_FMT, "regions_offset", "nregions"),
            ("extents", EXTENT_FMT, "extents_offset", "nextents"),
            ("threads", THREAD_FMT, "threads_offset", "nthreads"),
            ("fds", FD_FMT, "fds_offset", "nfds"),
            ("files", FILE_FMT, "files_offset", "nfiles")):
        size = len(im.table(fmt, off, count)) * struct.calcsize(fmt)
        if size:
            out.append((name, h[off], h[off] + size,
                        r"metadata checksum mismatch"))
    out.append(("strings", h["strings_offset"],
                h["strings_offset"] + h["strings_size"],
                r"metadata checksum mismatch"))
    return out


def data_sections(im, deleted_path, log_path):
    """Memory extents, the content saved with the deleted file's fd
    record, the log's content saved with its file record."""
    out = []
    extents = im.table(EXTENT_FMT, "extents_offset", "nextents")
    step = max(1, len(extents) // 12)
    for addr, length, foff, _, _, stored, _, _ in extents[::step]:
        out.append(("memory %x" % addr, foff, foff + stored,
                    r"memory %x-%x: %s" % (addr, addr + length, CHECKSUM)))
    fds = [f for f in im.table(FD_FMT, "fds_offset", "nfds")
           if f[1] == FD_DELETED]
    assert len(fds) == 1, "no deleted-file record with content: %r" % fds
    fd, _, _, _, _, _, _, off, size, _ = fds[0]
    assert size > 0
    out.append(("deleted file content", off, off + size,
                r"fd %d \(deleted-file %s.*\): %s" % (
                    fd, re.escape(deleted_path), CHECKSUM)))
    files = [f for f in im.table(FILE_FMT, "files_offset", "nfiles")
             if f[1] & FILE_F_CONTENT and im.string(f[0]) == log_path]
    assert len(files) == 1, "the log's content is not saved in the image"
    size, off = files[0][6], files[0][8]
    assert size > 0
    out.append(("tmpfs file content", off, off + size,
                r"%s.*%s" % (re.escape(log_path), CHECKSUM)))
    return out


def offsets(rng, start, end, n):
    """The first and last byte and n - 2 in between."""
    picks = {start, end - 1}
    while len(picks) < min(n, end - start):
        picks.add(rng.randrange(start, end))
    return sorted(picks)


def run(argv, env):
    return run_tool(argv, env, TIMEOUT)


def assert_refused(r, img, pattern, what):
    assert r.returncode >= 0, "%s: killed by signal %d: %s" % (
        what, -r.returncode, r.stderr)
    assert r.returncode == 1, "%s: exit %d (a corrupted image restarted?)" \
        "; stderr: %r" % (what, r.returncode, r.stderr)
    lines = [line for line in r.stderr.splitlines() if img in line]
    assert any(re.search(pattern, line) for line in lines), (
        "%s: no line naming the image matches %r: %r" % (
            what, pattern, r.stderr))


@pytest.fixture
def shm_log():
    path = "/dev/shm/ckpt-test-corruption-%d.log" % os.getpid()
    if not os.path.isdir("/dev/shm"):
        pytest.skip("no /dev/shm")
    yield path
    if os.path.exists(path):
        os.unlink(path)


@pytest.mark.time_limit(900)
def test_every_flipped_byte_is_refused(session, shm_log):
    inp = session.path("in.txt")
    lines = make_input(inp)
    ref = reference_output([app("file_offset_log"), inp,
                            session.path("ref.log"), "0"])
    p = session.launch([app("file_offset_log"), inp, shm_log, "20"])
    p.wait_line(r"^record ")
    os.unlink(inp)
    images, _, _ = checkpoint_and_kill(session, p, PROGRESS, 40)
    good = copy_image(images[0], session.path("good"))
    r = run([tool("ckpt_inspect"), good], session.env)
    assert r.returncode == 0 and "all checksums verified" in r.stdout, \
        r.stderr

    im = Image(good)
    h = im.header()
    rng = random.Random(14)
    cases = [("header", off, header_pattern())
             for off in offsets(rng, 0, h["header_size"], 10)]
    for name, start, end, pattern in meta_sections(im):
        cases += [(name, off, pattern) for off in offsets(rng, start, end, 3)]
    for name, start, end, pattern in data_sections(im, inp, shm_log):
        n = 4 if name.startswith("memory") else 6
        cases += [(name, off, pattern) for off in offsets(rng, start, end, n)]

    bad = session.path("bad.img")
    for name, off, pattern in cases:
        im = Image(good)
        im.data[off] ^= 1 << rng.randrange(8)
        im.write(bad)
        what = "%s byte at offset %d" % (name, off)
        assert_refused(run([tool("ckpt_inspect"), bad], session.env), bad,
                       pattern, "ckpt_inspect, " + what)
        if os.path.exists(shm_log):
            os.unlink(shm_log)  # so the restart reads its content back
        assert_refused(run([tool("ckpt_restart"), bad], session.env), bad,
                       pattern, "ckpt_restart, " + what)

    # A byte nothing reads: the restart's results are exact.
    im = Image(good)
    im.data[h["header_size"] + 100] ^= 0xff
    im.write(bad)
    if os.path.exists(shm_log):
        os.unlink(shm_log)
    r = session.restart([bad])
    rc = r.wait_exit(TIMEOUT * 2)
    assert rc == 0, "exit %d: %s" % (rc, r.stderr_text())
    assert tail_after_progress(r.lines(), PROGRESS) == \
        tail_after_progress(ref, PROGRESS)
    with open(shm_log) as f:
        assert f.read().splitlines() == ["got " + line for line in lines]
