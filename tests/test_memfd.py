# SPDX-License-Identifier: LGPL-2.1-or-later
"""A memfd comes back as the object it was (libckpt-preload/files.c,
shared_memory.c): one file behind the program's fd, a second description
of it and its MAP_SHARED mappings (written through the mapping, read
through the fd, and back; a ring mapped twice), under its name, with its
seals; and a memfd whose fd was closed, mapped twice, and shared
anonymous memory a child forked after the restart writes into. After a
restart the fd and the mapping were two objects (what the program wrote
through one, the other never saw), so were two mappings of one memfd,
the shared anonymous page became private to the parent, the memfd was
named "ckpt-deleted-file" and its seals were gone."""

import re

import pytest

from ckpt_harness import checkpoint_and_kill, numbers

STEP = r"^step (\d+) ok$"
STEPS = 160
PROGRAM = r"""
import fcntl, mmap, os, sys, time
F_ADD_SEALS, F_GET_SEALS = 1033, 1034
SEALED = 2 | 4 | 8                      # SHRINK | GROW | WRITE
page = mmap.PAGESIZE

ring = os.memfd_create("ring", os.MFD_ALLOW_SEALING)
os.ftruncate(ring, page)
one = mmap.mmap(ring, page, mmap.MAP_SHARED)
two = mmap.mmap(ring, page, mmap.MAP_SHARED)     # the same pages again
again = os.open("/proc/self/fd/%d" % ring, os.O_RDWR)   # 2nd description

closed = os.memfd_create("closed-ring")        # its fd closed at once:
os.ftruncate(closed, page)                      # the mappings alone
c1 = mmap.mmap(closed, page, mmap.MAP_SHARED)
c2 = mmap.mmap(closed, page, mmap.MAP_SHARED)
os.close(closed)

anon = mmap.mmap(-1, page, mmap.MAP_SHARED)      # shared with children

ro = os.memfd_create("sealed", os.MFD_ALLOW_SEALING)
os.write(ro, b"constant" * 64)
fcntl.fcntl(ro, F_ADD_SEALS, SEALED)
view = mmap.mmap(ro, 512, mmap.MAP_SHARED, mmap.PROT_READ)

def check(k):
    stamp = b"%08d" % k
    one[0:8] = stamp                            # through a mapping
    assert two[0:8] == stamp, ("two", two[0:8], stamp)
    assert os.pread(ring, 8, 0) == stamp, "fd"
    os.pwrite(again, stamp, 100)                 # through the other one
    assert one[100:108] == stamp, ("one", one[100:108])
    assert os.readlink("/proc/self/fd/%d" % ring) == "/memfd:ring (deleted)"
    assert fcntl.fcntl(ro, F_GET_SEALS) == SEALED, fcntl.fcntl(ro, F_GET_SEALS)
    assert view[0:8] == b"constant"
    c1[0:8] = stamp
    assert c2[0:8] == stamp, ("closed ring", c2[0:8], stamp)
    if k % 10 == 0:                 # a child forked now writes for us
        pid = os.fork()
        if pid == 0:
            anon[0:8] = stamp
            os._exit(0)
        os.waitpid(pid, 0)
        assert anon[0:8] == stamp, ("anonymous", anon[0:8], stamp)
    try:
        os.pwrite(ro, b"x", 0)
        raise AssertionError("a write-sealed memfd took a write")
    except PermissionError:
        pass

for k in range(1, int(sys.argv[1]) + 1):
    try:
        check(k)
    except AssertionError as e:
        print("FAIL step %d: %s" % (k, e), flush=True)
        sys.exit(1)
    print("step %d ok" % k, flush=True)
    time.sleep(0.03)
print("done", flush=True)
"""


@pytest.mark.time_limit(200)
def test_memfd_fd_mappings_name_and_seals_come_back(session):
    s = session
    p = s.launch(["/usr/bin/python3", "-c", PROGRAM, str(STEPS)])
    images, seen, before = checkpoint_and_kill(s, p, STEP, 5)
    assert not [l for l in p.lines() if l.startswith("FAIL")], p.lines()
    for cycle in range(2):
        r = s.restart(images)
        r.wait_line(STEP, minimum=before[-1] + 3 if cycle == 0 else 1)
        if cycle == 1:
            break
        images, seen, before = checkpoint_and_kill(s, r, STEP,
                                                   before[-1] + 5)
    assert r.wait_exit() == 0, (r.lines()[-3:], r.stderr_text())
    out = r.lines()
    assert not [l for l in out if l.startswith("FAIL")], out
    assert out[-1] == "done"
    assert numbers(out, STEP)[-1] == STEPS
    assert not re.search(r"seals|mapping the restored copy", r.stderr_text()),\
        r.stderr_text()


# A memfd shared across fork, held as an fd and mapped by both
# processes (two images): the parent writes through its fd, the child
# reads through its mapping and answers through it, the parent reads the
# answer through its mapping and its fd. Restored as two objects (one
# file for the fds, another for the mappings), nothing would cross.
SHARED_ACROSS_FORK = r"""
import mmap, os, sys, time
page = mmap.PAGESIZE
fd = os.memfd_create("across-fork")
os.ftruncate(fd, page)
m = mmap.mmap(fd, page, mmap.MAP_SHARED)
ask, answer = os.pipe(), os.pipe()
split = sys.argv[2] == "split"     # the child maps, the parent holds the fd
pid = os.fork()
if pid == 0:
    os.close(ask[1])
    os.close(answer[0])
    if split:
        os.close(fd)
    while True:
        k = os.read(ask[0], 16)
        if not k:
            os._exit(0)
        n = int(k)
        assert m[0:8] == b"%08d" % n, ("child saw", m[0:8], n)
        m[8:16] = b"%08d" % (n * 2)            # answer through the mapping
        if split:
            m[16:24] = b"%08d" % (n * 3)
        else:
            os.pwrite(fd, b"%08d" % (n * 3), 16)   # and through its fd
        os.write(answer[1], b"k")
os.close(ask[0])
os.close(answer[1])
if split:
    m.close()
for k in range(1, int(sys.argv[1]) + 1):
    os.pwrite(fd, b"%08d" % k, 0)
    os.write(ask[1], b"%d" % k)
    os.read(answer[0], 1)
    ok = (os.pread(fd, 8, 8) == b"%08d" % (2 * k) and
          os.pread(fd, 8, 16) == b"%08d" % (3 * k) and
          (split or m[8:16] == b"%08d" % (2 * k)))
    print("step %d %s" % (k, "ok" if ok else "FAIL %r" % os.pread(fd, 24, 0)),
          flush=True)
    if not ok:
        sys.exit(1)
    time.sleep(0.03)
os.close(ask[1])
os.waitpid(pid, 0)
print("done", flush=True)
"""


@pytest.mark.time_limit(200)
@pytest.mark.parametrize("holders", ["both", "split"])
def test_memfd_held_and_mapped_by_two_processes(session, holders):
    # both: each process holds the fd and the mapping; split: the
    # parent only the fd, the child the mapping (and the fd python's
    # mmap keeps a duplicate of)
    s = session
    p = s.launch(["/usr/bin/python3", "-c", SHARED_ACROSS_FORK, str(STEPS),
                  holders])
    p.wait_line(STEP, minimum=5)
    images = s.checkpoint(expect_images=2)
    p.sigkill()
    s.kill_all()
    r = s.restart(images)
    assert r.wait_exit() == 0, (r.lines()[-3:], r.stderr_text())
    out = r.lines()
    assert not [l for l in out if "FAIL" in l], out[-3:]
    assert out[-1] == "done" and numbers(out, STEP)[-1] == STEPS
