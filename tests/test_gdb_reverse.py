# SPDX-License-Identifier: LGPL-2.1-or-later
"""Going back with the gdb extension (dist/gdb/ckpt-gdb.py,
docs/reversible-debugging.md), driven by `gdb -batch -x SCRIPT`:
reverse-watch, reverse-continue, a divergence, automatic snapshots and the
errors. The programs (tests/gdb_apps/) are built with -O0 -g."""

import re

import pytest

from gdb_harness import build, gdb, line_of, needs_gdb, printed
from gdb_harness import work  # noqa: F401 (the fixture)

pytestmark = needs_gdb


@pytest.mark.time_limit(180)
def test_reverse_watch_stops_at_the_bad_write(work):
    exe = build(work, "list_corruption")
    text, _ = gdb(work, exe, """
break progress
ckpt auto hits 1 max 4
ckpt run
continue
continue
continue
continue
continue
continue
ckpt snapshots
ckpt reverse-watch nodes[9].next
print step
print nodes[9].next
""", args=["300"])
    bad = line_of("list_corruption", "the bad write")
    assert "received signal SIGSEGV" in text, text
    assert "list_corruption.c:%d, in thread 1" % bad in text, text
    values = printed(text)
    assert values[-2:] == ["263", "(struct node *) 0x10"], text
    assert "divergence" not in text, text


@pytest.mark.time_limit(180)
def test_reverse_continue_shows_the_previous_stop(work):
    exe = build(work, "counter_lines")
    text, _ = gdb(work, exe, """
break progress
ckpt run
continue
continue
ckpt snapshot
continue
continue
bt
print i
print counter
ckpt reverse-continue
bt
print i
print counter
ckpt reverse-continue
print i
""", args=["30"])
    values = printed(text)
    # stops at i = 2 (snapshot), 3, 4; back to 3, then to 2
    assert values == ["4", "10", "3", "6", "2"], text
    frames = re.findall(r"^#0 +progress \(i=(\d+)\) at \S*counter_lines.c:(\d+)",
                        text, re.M)
    # bt at 4, the stop reverse-continue shows (3), bt at 3, then 2
    assert [f[0] for f in frames] == ["4", "3", "3", "2"], text
    assert len(set(f[1] for f in frames)) == 1, text


@pytest.mark.time_limit(120)
def test_errors_before_the_first_snapshot(work):
    exe = build(work, "counter_lines")
    text, _ = gdb(work, exe, """
python
def attempt(cmd):
    try:
        gdb.execute(cmd)
    except Exception as e:
        print("%s: %s" % (cmd, e))
attempt("ckpt snapshot")
attempt("break progress")
attempt("ckpt run")
attempt("continue")
for cmd in ("ckpt reverse-continue", "ckpt reverse-watch counter",
            "ckpt restore 3", "ckpt restore x", "ckpt auto seconds x",
            "kill"):
    attempt(cmd)
end
""", args=["10"])
    assert "not stopped at a known point" in text, text
    assert text.count("cannot go back before the first snapshot") == 2, text
    assert "no snapshot 3" in text, text
    assert "'x' is not a snapshot number" in text, text
    assert "seconds x: expected hits K, seconds T or max M" in text, text


@pytest.mark.time_limit(120)
def test_a_different_path_on_reexecution_is_a_divergence(work):
    """The debugger changes a variable after the snapshot: re-executing
    from it takes the other path, reported as a divergence, never shown
    as the past."""
    exe = build(work, "two_paths")
    text, _ = gdb(work, exe, """
break progress
break left
break right
ckpt run
ckpt snapshot
continue
set var mode = 1
continue
continue
continue
python
try:
    gdb.execute("ckpt reverse-continue")
except Exception as e:
    print("refused: %s" % e)
end
""")
    assert re.search(r"refused: ckpt: divergence: expected stop 4 at "
                     r"\S*two_paths.c:\d+ \(pc 0x[0-9a-f]+\), the program is "
                     r"at \S*two_paths.c:\d+", text), text


@pytest.mark.time_limit(120)
def test_automatic_snapshots_are_bounded_and_thinned(work):
    """`ckpt auto hits 1 max 4` over 12 stops keeps 4 snapshots: the
    first, the newest, and gaps that grow with age; `seconds 1` takes one
    at the first stop a second after the last."""
    exe = build(work, "counter_lines")
    text, _ = gdb(work, exe, """
break progress
ckpt auto hits 1 max 4
ckpt run
%s
ckpt snapshots
ckpt auto hits 0 seconds 1
shell sleep 1.2
continue
continue
ckpt snapshots
""" % ("continue\n" * 11), args=["30"])
    lists = text.split("ckpt: a snapshot every 0 stop(s)")
    first = re.findall(r"^ +\d+ +stop (\d+) ", lists[0], re.M)
    stops = [int(s) for s in first]
    # the first is kept (going back to the start stays possible), the
    # newest too, and the gaps shrink toward now
    assert len(stops) == 4 and stops[0] == 1 and stops[-1] == 12, text
    gaps = [b - a for a, b in zip(stops, stops[1:])]
    assert gaps == sorted(gaps, reverse=True) and gaps[0] > gaps[-1], text
    second = re.findall(r"^ +\d+ +stop (\d+) ", lists[1], re.M)
    assert [int(s) for s in second][-1] == 13, text


@pytest.mark.time_limit(120)
def test_steps_are_not_stops_to_go_back_to(work):
    """After `next`, reverse-continue goes back to the breakpoint stop the
    step started from; a snapshot taken after a step serves the stops
    after it."""
    exe = build(work, "counter_lines")
    text, _ = gdb(work, exe, """
break progress
ckpt run
ckpt snapshot
continue
finish
next
ckpt snapshot
ckpt snapshots
continue
continue
ckpt reverse-continue
print i
ckpt reverse-continue
print i
ckpt reverse-continue
print i
""", args=["30"])
    assert re.search(r"^ +2 +after 2 ", text, re.M), text
    # stops at i = 0 (snapshot 1) and 1, finish and next (snapshot 2),
    # stops at 2 and 3; back to 2 (from snapshot 2), to 1 (from snapshot
    # 1: snapshot 2 comes after stop 2), to 0
    assert printed(text) == ["2", "1", "0"], text
    assert "divergence" not in text, text
