# SPDX-License-Identifier: LGPL-2.1-or-later
"""Incremental checkpoints that learn the written pages from the kernel
(userfaultfd write-protection and PAGEMAP_SCAN, Linux >= 6.7;
libckpt-preload/dirty_pages.c) instead of hashing every page: a chain
of a multi-threaded program and a buffer that only the kernel writes
(read() into it) restart exactly, as an unprivileged user too; with
CKPT_DIRTY_TRACKING=hash every page is compared by its hash, as on a
kernel without the feature."""

import os

import pytest

import ckpt_harness
from ckpt_harness import app, numbers, reference_output
from test_incremental import (DIRTY, PROGRESS, chain_info, checkpoints,
                              restart_exact)

KERNEL_STEPS = 250
KERNEL_WRITES = [app("kernel_writes"), "4", str(KERNEL_STEPS), "20"]
BY_KERNEL = "dirty pages from userfaultfd write-protection"
BY_HASHES = "dirty pages by page hashes"
UNKNOWN = "comparing every page by its hash"


def kernel_has_async_wp():
    major, minor = (int(x) for x in os.uname().release.split(".")[:2])
    return (major, minor) >= (6, 7)


needs_kernel = pytest.mark.skipif(
    not kernel_has_async_wp(),
    reason="asynchronous userfaultfd write-protection needs Linux >= 6.7")


def run_chain(session, argv, count, ref, last):
    """Launch argv with --incremental, count checkpoints, kill, restart
    the last image; the restarted run must go on exactly. Returns the
    original's stderr."""
    p = session.launch(argv, extra=["--incremental"])
    p.wait_line(PROGRESS, minimum=3)
    images, seen = checkpoints(session, p, count)
    p.sigkill()
    before = numbers(p.lines(), PROGRESS)
    for n, img in enumerate(images, start=1):
        assert chain_info(img)[0] == n, (img, chain_info(img))
    restart_exact(session, images[-1:], seen, before, ref, last)
    return p.stderr_text()


@needs_kernel
@pytest.mark.time_limit(120)
def test_chain_of_five_tracked_by_the_kernel(session):
    """A 3-thread program, a full image and four deltas whose unchanged
    pages the kernel named: restarted exactly; no delta fell back to
    comparing hashes."""
    err = run_chain(session, DIRTY, 5, reference_output(DIRTY), 150)
    assert BY_KERNEL in err, err
    assert UNKNOWN not in err and BY_HASHES not in err, err


@needs_kernel
@pytest.mark.time_limit(180)
def test_pages_written_only_by_the_kernel_unprivileged():
    """A buffer changed only by read() (the kernel's copy to user
    memory), in a process of an unprivileged user (userfaultfd limited to
    user-mode faults): every delta holds the pages the kernel wrote, so
    the restart from the fifth image prints the uninterrupted run's
    digests."""
    s, (prog,) = ckpt_harness.unprivileged_session([KERNEL_WRITES[0]])
    try:
        argv = [prog] + KERNEL_WRITES[1:]
        err = run_chain(s, argv, 5, reference_output(KERNEL_WRITES),
                        KERNEL_STEPS)
    finally:
        s.close()
    assert BY_KERNEL in err, err
    assert UNKNOWN not in err, err


@pytest.mark.time_limit(120)
def test_hash_fallback_by_environment(session):
    """CKPT_DIRTY_TRACKING=hash: the written pages are found by hashing
    every page (the path of kernels without the feature); the chain still
    restarts exactly."""
    session.env["CKPT_DIRTY_TRACKING"] = "hash"
    err = run_chain(session, DIRTY, 3, reference_output(DIRTY), 150)
    assert BY_HASHES in err and "CKPT_DIRTY_TRACKING=hash" in err, err
    assert BY_KERNEL not in err, err


# No pause between steps: the threads write while the image is synced and
# while the written pages are protected again after the checkpoint
BUSY_STEPS = 200
BUSY = [app("dirty_pages"), "32", str(BUSY_STEPS), "2", "50", "0"]


@needs_kernel
@pytest.mark.time_limit(120)
def test_pages_written_while_protection_is_rearmed(session):
    """The written pages are protected again only once the checkpoint has
    answered, the program running (dirty_pages.c): pages the threads
    write between the resume and that protection count as written in the
    next delta, so a chain of a program that never pauses restarts
    exactly."""
    err = run_chain(session, BUSY, 4, reference_output(BUSY), BUSY_STEPS)
    assert BY_KERNEL in err, err
    assert UNKNOWN not in err and BY_HASHES not in err, err
