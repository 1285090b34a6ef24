# SPDX-License-Identifier: LGPL-2.1-or-later
"""Compressed checkpoints (ckpt_launch --compress, ckpt_command
--checkpoint --compress) and zero pages: compressible memory is stored as
zstd frames, random memory raw, pages of zeros not at all, and a restart
of such an image continues exactly as an uninterrupted run; damaged
compressed data is refused naming the memory range."""

import os
import re
import shutil

import pytest

from ckpt_harness import (app, checkpoint_and_kill, numbers,
                          reference_output, restart_to_end, run,
                          tail_after_progress)
from ckpt_image import EXTENT_FMT, EXTENT_RAW, EXTENT_ZSTD, Image

MIB = 8
ROUNDS = 60
PROGRESS = r"^round (\d+)/"
MIX = [app("memory_mix"), str(MIB), str(ROUNDS)]
MIX_THREADS = MIX + ["3"]
RANGES = r"^ranges ([0-9a-f]+) ([0-9a-f]+) ([0-9a-f]+)$"


def extents_in(im, start, length):
    """The extents of the image that lie in [start, start + length)."""
    return [e for e in im.table(EXTENT_FMT, "extents_offset", "nextents")
            if start <= e[0] < start + length]


def check_mix_storage(session, p, img):
    """Random memory raw, text zstd-compressed, written zeros absent."""
    m = p.wait_line(RANGES)
    rnd, text, zeros = (int(m.group(i), 16) for i in (1, 2, 3))
    size = MIB << 20
    im = Image(img)
    random_ext = extents_in(im, rnd, size)
    text_ext = extents_in(im, text, size)
    assert sum(e[1] for e in random_ext) == size, "random memory not saved"
    assert all(e[4] == EXTENT_RAW and e[5] == e[1] for e in random_ext), (
        "random memory was stored compressed: %r" % random_ext[:3])
    assert text_ext and all(e[4] == EXTENT_ZSTD for e in text_ext), (
        "text was not compressed: %r" % text_ext[:3])
    stored = sum(e[5] for e in text_ext)
    assert stored * 3 < size, "text compressed only to %d bytes" % stored
    assert extents_in(im, zeros, size) == [], (
        "pages of written zeros were stored")
    out = session.inspect(img)
    assert re.search(r"stored in \d+ bytes \(ratio [\d.]+x\): \d+ extents "
                     r"raw, [1-9]\d* zstd-compressed", out), out


@pytest.mark.time_limit(180)
def test_mixed_memory_compressed_restart(session):
    ref = reference_output(MIX)
    p = session.launch(MIX, extra=["--compress"])
    images, seen, before = checkpoint_and_kill(session, p, PROGRESS, 5)
    check_mix_storage(session, p, images[0])
    r, _ = restart_to_end(session, images, PROGRESS, ROUNDS, seen, before)
    assert tail_after_progress(r.lines(), PROGRESS) == \
        tail_after_progress(ref, PROGRESS)


@pytest.mark.time_limit(180)
def test_zero_pages_not_stored_uncompressed(session):
    """Zero pages are left out in every mode."""
    p = session.launch(MIX)
    images, seen, before = checkpoint_and_kill(session, p, PROGRESS, 3)
    m = p.wait_line(RANGES)
    im = Image(images[0])
    assert extents_in(im, int(m.group(3), 16), MIB << 20) == []
    assert all(e[4] == EXTENT_RAW
               for e in im.table(EXTENT_FMT, "extents_offset", "nextents"))
    r, _ = restart_to_end(session, images, PROGRESS, ROUNDS, seen, before)
    assert tail_after_progress(r.lines(), PROGRESS) == \
        tail_after_progress(reference_output(MIX), PROGRESS)


@pytest.mark.time_limit(240)
def test_threads_compressed_image_restarted_twice(session):
    ref = reference_output(MIX_THREADS)
    p = session.launch(MIX_THREADS, extra=["--compress"])
    images, seen, before = checkpoint_and_kill(session, p, PROGRESS, 5)
    for _ in range(2):
        r, _ = restart_to_end(session, images, PROGRESS, ROUNDS, seen,
                              before)
        assert tail_after_progress(r.lines(), PROGRESS) == \
            tail_after_progress(ref, PROGRESS)


@pytest.mark.time_limit(240)
def test_process_tree_with_pipes_compressed(session):
    argv = [app("pipe_ring"), "3", "8", "300", "3"]
    ref = reference_output(argv)
    p = session.launch(argv, extra=["--compress"])
    p.wait_line(r"^round (\d+)$", minimum=40)
    seen = max(numbers(p.lines(), r"^round (\d+)$"))
    images = session.checkpoint(expect_images=3)
    session.kill_all()
    p.popen.wait(30)
    for img in images:
        assert re.search(r"[1-9]\d* zstd-compressed", session.inspect(img))
    r = session.restart(images)
    rc = r.wait_exit()
    lines = r.lines()
    assert rc == 0, "exit %d, last lines %r, stderr:\n%s" % (
        rc, lines[-5:], r.stderr_text())
    assert lines[-1] == ref[-1]
    after = numbers(lines, r"^round (\d+)$")
    assert after[0] > seen and after == list(range(after[0], 301))


def zstd_extents(img):
    return [e for e in Image(img).table(EXTENT_FMT, "extents_offset",
                                        "nextents")
            if e[4] == EXTENT_ZSTD]


@pytest.mark.time_limit(180)
def test_one_checkpoint_compressed_by_command(session):
    """A process launched without --compress: a plain checkpoint stores
    everything raw, ckpt_command --checkpoint --compress compresses."""
    p = session.launch(MIX)
    p.wait_line(PROGRESS, minimum=3)
    plain = session.checkpoint()
    assert zstd_extents(plain[0]) == []
    saved = os.path.join(session.dir, "plain.img")
    shutil.copy(plain[0], saved)
    seen = max(numbers(p.lines(), PROGRESS))
    r = session.command("--checkpoint", "--compress")
    assert r.returncode == 0, r.stderr
    images = r.stdout.split()
    assert zstd_extents(images[0])
    assert os.path.getsize(images[0]) < os.path.getsize(saved) - (
        MIB << 20) // 2
    p.sigkill()
    before = numbers(p.lines(), PROGRESS)
    r, _ = restart_to_end(session, images, PROGRESS, ROUNDS, seen, before)
    assert tail_after_progress(r.lines(), PROGRESS) == \
        tail_after_progress(reference_output(MIX), PROGRESS)
    bad = session.command("--status", "--compress")
    assert bad.returncode == 2 and "--checkpoint" in bad.stderr


def refused(session, img, pattern):
    r = run([session.tool("ckpt_restart"), img], 60, env=session.env)
    assert r.returncode == 1, "exit %d, stderr %r" % (r.returncode,
                                                     r.stderr)
    assert re.search(pattern, r.stderr), r.stderr
    return r


@pytest.mark.time_limit(180)
def test_corrupt_and_truncated_compressed_image(session):
    p = session.launch(MIX, extra=["--compress"])
    images, _, _ = checkpoint_and_kill(session, p, PROGRESS, 3)
    im = Image(images[0])
    ext = max(zstd_extents(images[0]), key=lambda e: e[5])
    addr, length, foff, stored = ext[0], ext[1], ext[2], ext[5]
    rng = r"memory %x-%x: " % (addr, addr + length)
    # Bytes flipped inside the frame: zstd refuses it or the hash does.
    for i in range(foff + stored // 2, foff + stored // 2 + 64):
        im.data[i] ^= 0x5a
    bad = im.write(os.path.join(session.dir, "flipped.img"))
    refused(session, bad, rng + r"(decompressing its data failed|checksum "
            r"mismatch)")
    r = run([session.tool("ckpt_inspect"), bad], 60)
    assert r.returncode != 0 and re.search(rng, r.stderr), r.stderr
    # The frame's magic number gone.
    im = Image(images[0])
    im.data[foff:foff + 4] = b"\0\0\0\0"
    bad = im.write(os.path.join(session.dir, "magic.img"))
    refused(session, bad, rng + r"(no zstd frame|decompressing)")
    # Truncated inside the compressed data.
    im = Image(images[0])
    with open(os.path.join(session.dir, "short.img"), "wb") as f:
        f.write(im.data[:foff + stored // 2])
    refused(session, f.name, r"truncated|image_size|bytes")
    # The original still restarts.
    r = session.restart(images)
    assert r.wait_line(PROGRESS)
    r.sigkill()
