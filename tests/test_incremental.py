# SPDX-License-Identifier: LGPL-2.1-or-later
"""Incremental checkpoints (ckpt_launch --incremental, ckpt_command
--checkpoint --incremental): after a full image each checkpoint writes
only the pages changed since the previous one, the images form a chain
that ckpt_restart follows, and a restart from a chain continues exactly as
an uninterrupted run (dirty_pages hashes every word of its buffer after
every step). A missing, replaced or damaged link is refused naming the
file; a chain grows to CKPT_CHAIN_MAX images, then a full image starts a
new one and the old images go."""

import os
import re
import shutil
import struct

import pytest

from ckpt_harness import (COMMAND_TIMEOUT, app, assert_resumed,
                          checkpoint_silently, numbers, reference_output,
                          run)
from ckpt_image import EXTENT_FMT, IMG_F_CHAIN, LINK_FMT, Image

PROGRESS = r"^step (\d+)/"
STEPS = 150
# 16 MiB, 3 threads, 1% of the pages written per step, 20 ms apart
DIRTY = [app("dirty_pages"), "16", str(STEPS), "3", "10", "20"]


def chain_info(img):
    """(chain_length, [link names], bytes stored in the image itself)."""
    im = Image(img)
    h = im.header()
    assert h["flags"] & IMG_F_CHAIN, "%s is no member of a chain" % img
    links = [im.string(link[3]) for link in
             im.table(LINK_FMT, "links_offset", "nlinks")]
    own = sum(e[1] for e in im.table(EXTENT_FMT, "extents_offset",
                                     "nextents") if e[6] == 0)
    return h["chain_length"], links, own


def checkpoints(session, proc, count, steps_apart=4):
    """count checkpoints, steps_apart steps of the program between them;
    returns the image paths (one process) and the last step seen before
    the last checkpoint was requested."""
    images = []
    for _ in range(count):
        start = max(numbers(proc.lines(), PROGRESS))
        proc.wait_line(PROGRESS, minimum=start + steps_apart)
        seen = max(numbers(proc.lines(), PROGRESS))
        images += checkpoint_silently(session, expect_images=1)
    return images, seen


def kill(proc):
    proc.sigkill()
    return numbers(proc.lines(), PROGRESS)


def restart_exact(session, images, seen, before, ref, last=STEPS):
    """Restart, run to the end: the steps go on from the checkpoint and
    every digest equals the uninterrupted run's (last: the final step)."""
    r = session.restart(images)
    rc = r.wait_exit(120)
    assert rc == 0, "exit %d; last lines %r; stderr:\n%s" % (
        rc, r.lines()[-5:], r.stderr_text())
    lines = r.lines()
    assert_resumed(before, numbers(lines, PROGRESS), PROGRESS, last, seen)
    start = ref.index(lines[0])
    assert lines == ref[start:], "the restarted run's digests differ"
    return r


@pytest.mark.time_limit(120)
def test_chain_of_five_restarted_exactly(session):
    """A full image and four deltas of a 3-thread program: each delta
    stores a small part of memory and links to the images before it; the
    restart from the last one is exact."""
    ref = reference_output(DIRTY)
    p = session.launch(DIRTY, extra=["--incremental"])
    p.wait_line(PROGRESS, minimum=3)
    images, seen = checkpoints(session, p, 5)
    before = kill(p)
    full_len, full_links, full_own = chain_info(images[0])
    assert (full_len, full_links) == (1, []), (full_len, full_links)
    assert full_own > 16 << 20
    for n, img in enumerate(images[1:], start=2):
        length, links, own = chain_info(img)
        assert length == n, "image %s: chain length %d" % (img, length)
        assert os.path.basename(images[n - 2]) in links, links
        assert os.path.basename(images[0]) in links, links
        assert own * 5 < full_own, (
            "delta %s stores %d bytes of memory, the full image %d" % (
                img, own, full_own))
        assert os.path.getsize(img) * 4 < os.path.getsize(images[0])
    out = session.inspect(images[-1])
    assert re.search(r"chain: image 5 of its chain, a delta", out), out
    assert os.path.basename(images[0]) in out
    restart_exact(session, images[-1:], seen, before, ref)


@pytest.mark.time_limit(120)
def test_process_tree_incremental(session):
    """A ring of three processes joined by pipes, checkpointed twice with
    --incremental: every process's second image is a delta, and the
    restart of the tree from the deltas finishes the ring exactly."""
    argv = [app("pipe_ring"), "3", "8", "300", "3"]
    ref = reference_output(argv)
    p = session.launch(argv, extra=["--incremental"])
    p.wait_line(r"^round (\d+)$", minimum=20)
    first = checkpoint_silently(session, expect_images=3)
    p.wait_line(r"^round (\d+)$", minimum=40)
    seen = max(numbers(p.lines(), r"^round (\d+)$"))
    second = checkpoint_silently(session, expect_images=3)
    session.kill_all()
    p.popen.wait(30)
    for img in second:
        length, links, _ = chain_info(img)
        assert length == 2 and len(links) == 1, (img, length, links)
        assert os.path.join(os.path.dirname(img), links[0]) in first
    r = session.restart(second)
    rc = r.wait_exit(120)
    lines = r.lines()
    assert rc == 0, "exit %d, last lines %r, stderr:\n%s" % (
        rc, lines[-5:], r.stderr_text())
    assert lines[-1] == ref[-1]
    after = numbers(lines, r"^round (\d+)$")
    assert after[0] > seen and after == list(range(after[0], 301))


def refused(session, img, pattern):
    for tool in ("ckpt_restart", "ckpt_inspect"):
        r = run([session.tool(tool), img], COMMAND_TIMEOUT, env=session.env)
        assert r.returncode == 1, "%s accepted %s: %s" % (tool, img,
                                                          r.stdout[-300:])
        assert re.search(pattern, r.stderr), "%s said:\n%s" % (tool,
                                                              r.stderr)


def corrupt_refused(session, last, addr, length, link):
    """ckpt_restart of last fails on the corrupt memory addr+length of
    chain link `link`, naming both."""
    r = run([session.tool("ckpt_restart"), last], COMMAND_TIMEOUT,
            env=session.env)
    assert r.returncode != 0, "restarted on corrupt data of %s" % link
    assert re.search(r"memory %x-%x: checksum mismatch: the saved data in "
                     r"chain link %s is corrupt" % (
                         addr, addr + length, re.escape(link)),
                     r.stderr), r.stderr


@pytest.mark.time_limit(120)
def test_missing_or_damaged_link_refused(session):
    """ckpt_restart and ckpt_inspect refuse a delta whose link is missing,
    replaced by another image or damaged, naming the link; a corrupt page
    in a link fails the restart naming the memory and the link."""
    p = session.launch(DIRTY, extra=["--incremental"])
    p.wait_line(PROGRESS, minimum=3)
    images, _ = checkpoints(session, p, 3)
    kill(p)
    last, middle = images[2], images[1]
    name = re.escape(middle)
    keep = middle + ".keep"
    shutil.copy2(middle, keep)

    os.unlink(middle)
    refused(session, last, r"chain link %s \(generation \d+\): cannot open:"
            r" No such file or directory: this incremental image needs it"
            % name)

    shutil.copy2(images[0], middle)         # another image of the chain
    refused(session, last, r"chain link %s \(generation \d+\): replaced"
            % name)

    shutil.copy2(keep, middle)
    with open(middle, "r+b") as f:          # a bit of the header
        f.seek(200)
        b = f.read(1)
        f.seek(200)
        f.write(bytes([b[0] ^ 1]))
    refused(session, last, r"chain link %s \(generation \d+\): its header "
            r"is damaged" % name)

    shutil.copy2(keep, middle)
    with open(middle, "ab") as f:           # grown
        f.write(b"\0" * 4096)
    refused(session, last, r"chain link %s \(generation \d+\): damaged"
            % name)

    # a page the middle delta changed, put over the full image's mapping
    # with others of its file in one batch (restart/loader/extent_patch.c)
    shutil.copy2(keep, middle)
    im = Image(last)
    links = [im.string(link[3]) for link in
             im.table(LINK_FMT, "links_offset", "nlinks")]
    source = links.index(os.path.basename(middle)) + 1
    pages = [e for e in im.table(EXTENT_FMT, "extents_offset", "nextents")
             if e[6] == source and e[1] <= 16 << 10]
    assert len(pages) > 10, "the middle delta gives the last few pages"
    addr, length, foff = pages[len(pages) // 2][:3]
    with open(middle, "r+b") as f:
        f.seek(foff + length - 1)
        b = f.read(1)
        f.seek(foff + length - 1)
        f.write(bytes([b[0] ^ 0x01]))
    corrupt_refused(session, last, addr, length, os.path.basename(middle))

    # a page of the full image the last delta takes its memory from
    shutil.copy2(keep, middle)
    im = Image(last)
    ext = sorted((e for e in im.table(EXTENT_FMT, "extents_offset",
                                      "nextents") if e[6]),
                 key=lambda e: -e[1])
    assert ext and ext[0][1] >= 64 << 10, (
        "the last delta takes no large extent from a link")
    links = [im.string(link[3]) for link in
             im.table(LINK_FMT, "links_offset", "nlinks")]
    addr, length, foff = ext[0][:3]
    target = os.path.join(session.ckptdir, links[ext[0][6] - 1])
    with open(target, "r+b") as f:
        f.seek(foff + 100)
        b = f.read(1)
        f.seek(foff + 100)
        f.write(bytes([b[0] ^ 0x40]))
    corrupt_refused(session, last, addr, length, links[ext[0][6] - 1])


@pytest.mark.time_limit(150)
def test_restart_then_more_increments(session):
    """Restart from a delta, two more incremental checkpoints of the
    restarted process (deltas on the chain it came from), restart again:
    exact."""
    ref = reference_output(DIRTY)
    p = session.launch(DIRTY, extra=["--incremental"])
    p.wait_line(PROGRESS, minimum=3)
    images, _ = checkpoints(session, p, 3)
    kill(p)
    r1 = session.restart(images[-1:])
    r1.wait_line(PROGRESS, minimum=max(numbers(p.lines(), PROGRESS)) + 3)
    more, seen = checkpoints(session, r1, 2)
    before = kill(r1)
    length, links, _ = chain_info(more[-1])
    assert length == 5, length
    assert os.path.basename(images[0]) in links, links
    restart_exact(session, more[-1:], seen, before, ref)


@pytest.mark.time_limit(120)
def test_chain_compacted_into_full_image(session):
    """CKPT_CHAIN_MAX=3: the fourth image is full again, and once it is
    durable the older images of the process are removed; the restart
    from the new chain is exact."""
    ref = reference_output(DIRTY)
    session.env["CKPT_CHAIN_MAX"] = "3"
    p = session.launch(DIRTY, extra=["--incremental"])
    p.wait_line(PROGRESS, minimum=3)
    images, seen = checkpoints(session, p, 5)
    before = kill(p)
    assert [chain_info(i)[0] for i in images[3:]] == [1, 2]
    left = sorted(f for f in os.listdir(session.ckptdir)
                  if f.endswith(".img"))
    assert left == sorted(os.path.basename(i) for i in images[3:]), left
    restart_exact(session, images[-1:], seen, before, ref)


@pytest.mark.time_limit(120)
def test_one_incremental_checkpoint_by_command(session):
    """A process launched without --incremental: ckpt_command
    --checkpoint --incremental writes a chain image, the next such
    checkpoint a delta of it."""
    p = session.launch(DIRTY)
    p.wait_line(PROGRESS, minimum=3)
    plain = checkpoint_silently(session, expect_images=1)
    assert not Image(plain[0]).header()["flags"] & IMG_F_CHAIN
    imgs = []
    for _ in range(2):
        r = session.command("--checkpoint", "--incremental")
        assert r.returncode == 0, r.stderr
        imgs += r.stdout.split()
    kill(p)
    assert [chain_info(i)[0] for i in imgs] == [1, 2]
    r = run([session.tool("ckpt_command"), "--status", "--incremental"],
            COMMAND_TIMEOUT, env=session.env)
    assert r.returncode == 2 and "--checkpoint only" in r.stderr, r.stderr
    assert struct.calcsize(EXTENT_FMT) == 48


MIX_MIB = 8
MIX_ROUNDS = 60
MIX_PROGRESS = r"^round (\d+)/"
MIX = [app("memory_mix"), str(MIX_MIB), str(MIX_ROUNDS)]
MIX_RANGES = r"^ranges ([0-9a-f]+) ([0-9a-f]+) ([0-9a-f]+)$"


@pytest.mark.time_limit(180)
def test_zero_pages_left_out_of_deltas(session):
    """A mapping of written zeros, never written again: the chain writer
    (which tests for zeros itself, the memory scan leaving that to it)
    stores none of its pages in the full image nor in any delta, and the
    restart from the last delta is exact."""
    ref = reference_output(MIX)
    p = session.launch(MIX, extra=["--incremental"])
    zeros = int(p.wait_line(MIX_RANGES).group(3), 16)
    p.wait_line(MIX_PROGRESS, minimum=2)
    images = []
    for _ in range(3):
        start = max(numbers(p.lines(), MIX_PROGRESS))
        p.wait_line(MIX_PROGRESS, minimum=start + 2)
        seen = max(numbers(p.lines(), MIX_PROGRESS))
        images += checkpoint_silently(session, expect_images=1)
    p.sigkill()
    before = numbers(p.lines(), MIX_PROGRESS)
    for n, img in enumerate(images, start=1):
        im = Image(img)
        assert im.header()["chain_length"] == n, img
        stored = [e for e in im.table(EXTENT_FMT, "extents_offset",
                                      "nextents")
                  if zeros <= e[0] < zeros + (MIX_MIB << 20)]
        assert stored == [], "%s stores pages of zeros: %r" % (
            img, stored[:3])
    r = session.restart(images[-1:])
    rc = r.wait_exit(120)
    assert rc == 0, "exit %d; stderr:\n%s" % (rc, r.stderr_text())
    lines = r.lines()
    assert_resumed(before, numbers(lines, MIX_PROGRESS), MIX_PROGRESS,
                   MIX_ROUNDS, seen)
    start = ref.index(lines[0])
    assert lines == ref[start:], "the restarted run's digests differ"
