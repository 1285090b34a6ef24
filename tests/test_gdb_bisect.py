# SPDX-License-Identifier: LGPL-2.1-or-later
"""`ckpt bisect EXPR` (dist/gdb/ckpt-gdb.py, docs/reversible-debugging.md):
the first moment a condition that held at the first snapshot is false, by
a binary search over the stops seen, in about log2(stops) re-executions,
then the change itself watched (tests/gdb_apps/ledger.c: a bounded run of
2000 steps, a millisecond each)."""

import math
import re

import pytest

from gdb_harness import build, gdb, line_of, needs_gdb, printed
from gdb_harness import work  # noqa: F401 (the fixture)

pytestmark = needs_gdb

STOPS = 21      # every 100 steps of 2000, and finished()


@pytest.mark.time_limit(240)
def test_bisect_finds_the_first_false_moment_in_log2_reexecutions(work):
    exe = build(work, "ledger")
    text, _ = gdb(work, exe, """
break progress if step %% 100 == 0
break finished
ckpt auto hits 5 max 8
ckpt run
python
for i in range(%d):
    gdb.execute("continue", to_string=True)
end
python
def attempt(cond):
    try:
        gdb.execute("ckpt bisect " + cond)
    except Exception as e:
        print("refused: %%s" %% e)
attempt("book.deposits >= 0")
attempt("no_such_thing")
end
ckpt bisect book.balance >= 0
print step
print bad_step
print book.balance < 0
continue
python attempt("book.balance > 100000")
""" % (STOPS - 1))
    found = re.search(r"^ckpt: book\.balance >= 0 first false at "
                      r"\S*ledger\.c:(\d+), in thread 1 \(ledger\), after "
                      r"stop (\d+) \(where it held\); (\d+) re-executions$",
                      text, re.M)
    assert found, text
    assert int(found.group(1)) == line_of("ledger", "book.balance -= amount")
    # step 1145 lies between the stops at steps 1100 (12) and 1200
    assert found.group(2) == "12", text
    # the search, its first probe, and the watch from the last good stop
    assert int(found.group(3)) <= math.ceil(math.log2(STOPS)) + 1, text
    assert printed(text) == ["1145", "1145", "1"], text
    assert ("refused: ckpt bisect: book.balance > 100000 does not hold at the "
            "first snapshot (stop 5)" in text), text
    assert "refused: ckpt bisect: book.deposits >= 0 holds now" in text, text
    assert re.search(r"refused: ckpt bisect: no_such_thing: No symbol",
                     text), text
