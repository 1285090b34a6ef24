# SPDX-License-Identifier: LGPL-2.1-or-later
"""Going back in a multi-threaded program with the gdb extension
(dist/gdb/ckpt-gdb.py, docs/reversible-debugging.md): the order in which
threads take mutexes is recorded and enforced on re-execution
(wrappers/lock_order.c), so `ckpt restore` + `continue` crashes the same
way and `ckpt reverse-watch` names the same writing thread and line every
time (with pthread mutexes, rwlocks, semaphores, C11 mutexes, spin locks
and barriers); a program with an unsynchronized race is reported as a
divergence.
The heavy variant (10 repetitions) runs with CKPT_HEAVY_TESTS=1."""

import os
import re

import pytest

from gdb_harness import build, gdb, line_of, needs_gdb
from gdb_harness import work  # noqa: F401 (the fixture)

pytestmark = needs_gdb

CRASH = """
python print("CRASH %s signal %d writer %d" % (gdb.selected_thread().name, \
    int(gdb.parse_and_eval("$_siginfo.si_signo")), \
    int(gdb.parse_and_eval("bad_writer"))))
"""
WATCH = """
ckpt reverse-watch shared.last
python print("AT writer %d ticket %d of %d" % ( \
    int(gdb.parse_and_eval("bad_writer")), \
    int(gdb.parse_and_eval("ticket")), \
    int(gdb.parse_and_eval("bad_ticket"))))
"""


def watch_the_bad_link(work, repeats, args=""):
    exe = build(work, "lock_order_bug")
    text, _ = gdb(work, exe, """
break started
ckpt run %s
ckpt snapshot
continue
""" % args + CRASH + WATCH + ("ckpt restore 1\ncontinue\n" + CRASH + WATCH) *
                   (repeats - 1))
    bad = line_of("lock_order_bug", "the bad write")
    crashes = re.findall(r"^CRASH (\S+) signal (\d+) writer (\d+)$", text,
                         re.M)
    assert len(crashes) == repeats, text
    writer = crashes[0][2]
    # restore + continue: the same crash, in main, the same writer
    assert crashes == [("lock_order_bug", "11", writer)] * repeats, text
    answers = re.findall(r"^ckpt: shared\.last last changed before stop 2, "
                         r"at \S*lock_order_bug\.c:(\d+), in thread \d+ "
                         r"\((\S+)\): now .*0x10$", text, re.M)
    # the thread that drew the bad ticket in the first run, every time
    assert answers == [(str(bad), "worker-" + writer)] * repeats, text
    at = re.findall(r"^AT writer (\d+) ticket (\d+) of (\d+)$", text, re.M)
    assert all(a == (writer, a[2], a[2]) for a in at), text
    assert len(at) == repeats, text
    assert "divergence" not in text, text


@pytest.mark.time_limit(240)
def test_reverse_watch_names_the_writing_thread_every_time(work):
    watch_the_bad_link(work, 2)


@pytest.mark.time_limit(240)
def test_semaphores_and_rwlocks_are_ordered_too(work):
    # the tickets behind a semaphore, the link behind a rwlock
    watch_the_bad_link(work, 2, "1000 sem")


@pytest.mark.time_limit(240)
def test_c11_mutexes_spin_locks_and_barriers_are_ordered_too(work):
    # the tickets behind a C11 mtx_t, the link behind a spin lock, the go
    # behind a cnd_t, and a barrier whose serial thread draws a ticket
    watch_the_bad_link(work, 2, "1000 c11")


@pytest.mark.skipif(not os.environ.get("CKPT_HEAVY_TESTS"),
                    reason="heavy: set CKPT_HEAVY_TESTS=1")
@pytest.mark.time_limit(900)
def test_reverse_watch_names_the_writing_thread_ten_times(work):
    watch_the_bad_link(work, 10)


@pytest.mark.time_limit(180)
def test_an_unsynchronized_race_is_reported_as_a_divergence(work):
    """The spinning count decides which mutex is taken: re-executed, the
    lock order differs from the recording; reverse-continue says so and
    does not show the stop."""
    exe = build(work, "racy_spin")
    text, _ = gdb(work, exe, """
break started
break finished
ckpt run
ckpt snapshot
continue
continue
python
try:
    gdb.execute("ckpt reverse-continue")
    print("shown: %s" % gdb.parse_and_eval("n"))
except Exception as e:
    print("refused: %s" % e)
end
""")
    assert re.search(r"^refused: ckpt: divergence: the lock order differs "
                     r"at event \d+: thread \d+ locks 0x[0-9a-f]+ \(call at "
                     r"0x[0-9a-f]+\); the recording has locks 0x[0-9a-f]+",
                     text, re.M), text
    assert "shown:" not in text, text
