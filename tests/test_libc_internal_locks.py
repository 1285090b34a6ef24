# SPDX-License-Identifier: LGPL-2.1-or-later
"""Locks glibc takes inside itself, never through libckpt's wrappers: a
rwlock records the thread id of its writer (__cur_writer), and a thread
restored with a new tid that unlocks one it write-held at the checkpoint
is taken for a reader: the lock stays write-held forever, and the next
setlocale() hangs (seen as `as` hanging after a restart of make -j2).
setlocale_loop is almost always inside setlocale, holding glibc's
__libc_setlocale_lock, when it is stopped; after each restart it must go
on switching locales to the end."""

import os
import struct

import pytest

from ckpt_harness import app, checkpoint_and_kill, numbers

ROUND = r"^round (\d+)$"
# A round is about 2 ms: the program must still run when each checkpoint
# comes (400 rounds ended before a loaded machine's ckpt_command came)
ROUNDS = 1000000
# after the last restart, this many more rounds show setlocale still works
ROUNDS_AFTER_LAST = 300


@pytest.mark.time_limit(300)
def test_setlocale_lock_held_at_checkpoint(session):
    p = session.launch([app("setlocale_loop"), str(ROUNDS)])
    images, seen, before = checkpoint_and_kill(session, p, ROUND, 5)
    for restart in range(3):
        r = session.restart(images)
        r.wait_line(ROUND, minimum=before[-1] + 5, timeout=30)
        if restart == 2:
            break
        images = session.checkpoint()
        session.kill_all()
        r.wait_exit(30)
        before = numbers(r.lines(), ROUND)
    r.wait_line(ROUND, minimum=before[-1] + ROUNDS_AFTER_LAST, timeout=60)
    after = numbers(r.lines(), ROUND)
    assert after == list(range(after[0], after[-1] + 1)), after[:5]
    assert after[0] <= before[-1] + 1, (before[-1], after[0])


# ELF64 program headers, as far as this test reads them
PT_GNU_RELRO = 0x6474E552
PHDR = struct.Struct("<IIQQQQQQ")


def libc_of_this_process():
    """(path, load base) of the libc this python3 runs with: the apps
    link the same one."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            f = line.split()
            if len(f) >= 6 and f[5].endswith("/libc.so.6") and \
                    int(f[2], 16) == 0:
                return f[5], int(f[0].split("-")[0], 16)
    return None, None


def relro_part(path):
    """(vaddr, memsz) of the object's PT_GNU_RELRO, or None."""
    with open(path, "rb") as f:
        head = f.read(64)
        phoff, = struct.unpack_from("<Q", head, 0x20)
        phentsize, phnum = struct.unpack_from("<HH", head, 0x36)
        f.seek(phoff)
        table = f.read(phentsize * phnum)
    for i in range(phnum):
        p_type, _, _, vaddr, _, _, memsz, _ = PHDR.unpack_from(
            table, i * phentsize)
        if p_type == PT_GNU_RELRO:
            return vaddr, memsz
    return None


def tids_that_look_like_libc_rwlock_writers():
    """Thread ids that an int of libc's read-only data would match if it
    were taken for a write-locked rwlock (glibc's pthread_rwlock_t:
    __readers with PTHREAD_RWLOCK_WRLOCKED at +0, __cur_writer at +24).
    Only plain ints (their 8-byte word's upper half zero), which are the
    same in every process; pointers move with ASLR."""
    path, base = libc_of_this_process()
    if not path or os.uname().machine != "x86_64":
        return []
    relro = relro_part(path)
    if not relro:
        return []
    with open("/proc/self/mem", "rb") as mem:
        mem.seek(base + relro[0])
        data = mem.read(relro[1])
    with open("/proc/sys/kernel/pid_max") as f:
        pid_max = int(f.read())
    found = []
    for off in range(0, len(data) - 32, 8):
        readers, readers_hi = struct.unpack_from("<II", data, off)
        writer, writer_hi = struct.unpack_from("<iI", data, off + 24)
        if readers & 2 and not readers_hi and not writer_hi and \
                1000 <= writer < pid_max - 1000 and writer not in found:
            found.append(writer)
    return found


def launch_with_pid(session, argv, pid, attempts=20):
    """Launch argv so that its process gets this pid (root: the kernel's
    ns_last_pid); None when another process took it each time."""
    for _ in range(attempts):
        with open("/proc/sys/kernel/ns_last_pid", "w") as f:
            f.write(str(pid - 1))
        p = session.launch(argv)
        if p.pid == pid:
            return p
        p.sigkill()
        p.popen.wait(10)
    return None


@pytest.mark.time_limit(300)
def test_thread_whose_tid_an_int_of_libc_read_only_data_matches(session):
    """The rwlock rewrite above finds libc's locks by their shape in libc's
    writable segment, which starts with its RELRO part (the dynamic
    section, the GOT), read-only once ld.so relocated it. Debian 12's
    libc has there a dynamic entry DT_RELA (7) whose DT_RELASZ 2112 sits
    where __cur_writer would: a process checkpointed while its tid was
    2112 was taken for that lock's writer, and the restart's rewrite
    faulted (SIGSEGV in thread_ids_restore, seen in CI as python3, sh and
    sleep dying just after their restart). Run at each such tid."""
    if os.geteuid() != 0 or not os.access("/proc/sys/kernel/ns_last_pid",
                                          os.W_OK):
        pytest.skip("choosing a pid needs root (ns_last_pid)")
    tids = tids_that_look_like_libc_rwlock_writers()
    if not tids:
        pytest.skip("no int in this libc's read-only data looks like a "
                    "write-locked rwlock's writer")
    tested = []
    for tid in tids[:3]:
        p = launch_with_pid(session, [app("setlocale_loop"), "60"], tid)
        if p is None:       # a long-lived process has it
            continue
        tested.append(tid)
        # a killed attempt may have taken the coordinator it started with
        # it: this one then joins a new one a moment later
        session.wait_members(1)
        images, _, before = checkpoint_and_kill(session, p, ROUND, 3)
        r = session.restart(images)
        assert r.wait_exit() == 0, (
            "restarted at tid %d: status %s: %s" % (
                tid, r.popen.returncode, r.stderr_text()))
        assert r.lines()[-1] == "done", r.lines()[-3:]
        rounds = numbers(r.lines(), ROUND)
        assert rounds and rounds[0] <= before[-1] + 1, (before[-1], rounds)
    if not tested:
        pytest.skip("pids %r stayed taken by other processes" % tids[:3])
