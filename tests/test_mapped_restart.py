# SPDX-License-Identifier: LGPL-2.1-or-later
"""Restart by mapping the image (docs/restart.md, "Mapped or copied").

The restarted memory is a private mapping of the image file, yet it must
stay the program's anonymous memory: a later checkpoint over the same
path saves it whole (the image is replaced by rename, then deleted), and
MADV_DONTNEED, MADV_FREE, mremap growth, fork and threads behave as on
anonymous memory (tests/apps/mapped_memory.c checks each round). A
corrupt mapped extent stops the restart before the program runs."""

import os
import re

from ckpt_harness import app, reference_output, run, COMMAND_TIMEOUT
from ckpt_image import EXTENT_FMT as EXTENT, Image

ROUNDS = 60
MIB = 8
PROGRESS = r"^round (\d+)/"
CHILD_PROGRESS = r"^child round (\d+)/"
ARGV = [app("mapped_memory"), str(MIB), str(ROUNDS)]
TREE_ARGV = ARGV + ["tree"]
MAPPABLE = 0x8                  # CKPT_IMG_F_MAPPABLE


def checkpoint(s):
    """Checkpoint; the images (the program's round child may be caught
    too, so one or more)."""
    r = s.command("--checkpoint")
    assert r.returncode == 0, r.stderr
    images = r.stdout.split()
    assert images, r.stdout
    return images


def kill_computation(s, procs):
    s.kill_all()
    for p in procs:
        p.popen.wait(30)


def last_round(proc, progress=PROGRESS):
    rx = re.compile(progress)
    found = [int(m.group(1)) for m in map(rx.search, proc.lines()) if m]
    return max(found) if found else 0


def assert_rounds_match(proc, ref, progress=PROGRESS):
    """Every round line the process printed is the reference's line."""
    rx = re.compile(progress)
    want = {int(rx.search(l).group(1)): l for l in ref if rx.search(l)}
    lines = [l for l in proc.lines() if rx.search(l)]
    fails = [l for l in proc.lines() if l.startswith("FAIL")]
    assert not fails, "%s: %s; stderr:\n%s" % (proc.name, fails,
                                               proc.stderr_text())
    assert lines, "%s printed no rounds; stderr:\n%s" % (
        proc.name, proc.stderr_text())
    for l in lines:
        assert l == want[int(rx.search(l).group(1))], (
            "%s: %r, uninterrupted run: %r" % (
                proc.name, l, want[int(rx.search(l).group(1))]))


def image_mapping_lines(images):
    """Lines of every process's /proc/PID/maps that map one of images
    (by name, "(deleted)" included)."""
    names = [os.path.basename(i) for i in images]
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/maps" % pid) as f:
                found += [l for l in f if any(n in l for n in names)]
        except OSError:
            pass
    return found


def restart(s, images, copy=False):
    return s.start([s.tool("ckpt_restart")] + (["--copy"] if copy else [])
                   + list(images), "restart" + (" --copy" if copy else ""))


def checkpointed_run(s, argv=ARGV, progress=PROGRESS, minimum=3):
    """Launch argv, checkpoint once progress reaches minimum, kill it.
    Returns (reference output, the killed Proc, the images)."""
    ref = reference_output(argv)
    p = s.launch(argv)
    p.wait_line(progress, minimum=minimum)
    images = checkpoint(s)
    kill_computation(s, [p])
    return ref, p, images


def test_checkpoint_of_a_mapped_restart_continues_exactly(session):
    """checkpoint, kill, mapped restart, checkpoint over the same path,
    kill, restart: the exact continuation, with madvise, mremap, fork and
    threads checked every round by the program itself."""
    s = session
    ref, p, images = checkpointed_run(s, minimum=4)

    r1 = restart(s, images)
    r1.wait_line(PROGRESS, minimum=last_round(p) + 2)
    mapped = image_mapping_lines(images)
    assert mapped, "the restart copied the memory: no process maps %s" % (
        images)
    images2 = checkpoint(s)
    assert sorted(images2) != [] and set(images) & set(images2), (
        "the second checkpoint did not go to the same path")
    deleted = [l for l in image_mapping_lines(images) if "(deleted)" in l]
    assert deleted, ("the image the process runs from was written in "
                     "place, not replaced by rename")
    seen = last_round(r1)
    kill_computation(s, [r1])
    assert_rounds_match(r1, ref)

    r2 = restart(s, images2)
    assert r2.wait_exit() == 0, r2.stderr_text()
    assert_rounds_match(r2, ref)
    assert last_round(r2) == ROUNDS
    first = min(int(re.search(PROGRESS, l).group(1))
                for l in r2.lines() if re.search(PROGRESS, l))
    assert first <= seen + 1, "rounds %d..%d lost" % (seen + 1, first - 1)


def test_copy_restart_maps_nothing(session):
    s = session
    ref, p, images = checkpointed_run(s)
    r = restart(s, images, copy=True)
    r.wait_line(PROGRESS, minimum=last_round(p) + 2)
    assert not image_mapping_lines(images), (
        "ckpt_restart --copy mapped the image")
    assert r.wait_exit() == 0, r.stderr_text()
    assert_rounds_match(r, ref)
    assert last_round(r) == ROUNDS


def test_process_tree_runs_on_after_its_images_are_deleted(session):
    """Both processes of a tree restart mapped; the user deletes the
    images; both go on, and a checkpoint then restart from new images
    continues exactly."""
    s = session
    ref, p, images = checkpointed_run(s, TREE_ARGV, CHILD_PROGRESS)
    assert len(images) >= 2, images

    r1 = restart(s, images)
    r1.wait_line(CHILD_PROGRESS, minimum=last_round(p, CHILD_PROGRESS) + 1)
    assert image_mapping_lines(images)
    for img in images:
        os.unlink(img)
    r1.wait_line(PROGRESS, minimum=last_round(r1) + 3)
    images2 = checkpoint(s)
    kill_computation(s, [r1])
    for prog in (PROGRESS, CHILD_PROGRESS):
        assert_rounds_match(r1, ref, prog)

    r2 = restart(s, images2)
    assert r2.wait_exit() == 0, r2.stderr_text()
    for prog in (PROGRESS, CHILD_PROGRESS):
        assert_rounds_match(r2, ref, prog)
        assert last_round(r2, prog) == ROUNDS


def test_corrupt_mapped_extent_is_refused(session):
    """A flipped byte in the data of an extent that would be mapped:
    the restart fails naming the memory, mapped or copied, before any of
    the program runs."""
    s = session
    _, _, images = checkpointed_run(s, minimum=2)
    main = max(images, key=os.path.getsize)
    im = Image(main)
    addr, length, off = max(im.table(EXTENT, "extents_offset",
                                     "nextents"), key=lambda e: e[1])[:3]
    assert length >= 1 << 20, "no extent of the %d MiB block" % MIB
    im.data[off + 5000] ^= 0x20
    im.write(main)
    want = r"memory %x-%x: checksum mismatch" % (addr, addr + length)
    for copy in (False, True):
        r = run([s.tool("ckpt_restart")] + (["--copy"] if copy else []) +
                [main], COMMAND_TIMEOUT, env=s.env)
        assert r.returncode != 0, "the corrupt image restarted"
        assert re.search(want, r.stderr), r.stderr
        assert not re.search(PROGRESS, r.stdout), r.stdout


def test_image_of_an_older_libckpt_is_copied(session):
    """Without CKPT_IMG_F_MAPPABLE (a libckpt that would save mapped
    memory by reference) the restart copies, and the program goes on."""
    s = session
    ref, p, images = checkpointed_run(s)
    for img in images:
        im = Image(img)
        assert im.header()["flags"] & MAPPABLE, "the flag is not written"
        im.set_header(flags=im.header()["flags"] & ~MAPPABLE)
        im.rehash()
        im.write(img)
    r = restart(s, images)
    r.wait_line(PROGRESS, minimum=last_round(p) + 2)
    assert not image_mapping_lines(images), (
        "an image without CKPT_IMG_F_MAPPABLE was mapped")
    assert r.wait_exit() == 0, r.stderr_text()
    assert_rounds_match(r, ref)
