# SPDX-License-Identifier: LGPL-2.1-or-later
"""Going back by lines with the gdb extension (dist/gdb/ckpt-gdb.py,
docs/reversible-debugging.md): `ckpt reverse-step`, `reverse-next` and
`reverse-finish` walk back through a recursive function
(tests/gdb_apps/recursive_sum.c) and land on the lines, and the
activations, gdb showed going forward."""

import re

import pytest

from gdb_harness import build, gdb, line_of, needs_gdb, printed
from gdb_harness import work  # noqa: F401 (the fixture)

pytestmark = needs_gdb

WHERE = """
python
def where(tag):
    f = gdb.selected_frame()
    n = f.read_var("n") if f.name() == "sum_to" else "-"
    print("%s %s:%d n=%s" % (tag, f.name(), f.find_sal().line, n))
def attempt(cmd):
    try:
        gdb.execute(cmd)
    except Exception as e:
        print("%s: %s" % (cmd, e))
end
"""


def places(text, tag):
    return [(int(line), n) for line, n in
            re.findall(r"^%s sum_to:(\d+) n=(\d+)$" % tag, text, re.M)]


@pytest.mark.time_limit(180)
def test_reverse_step_next_finish_retrace_the_forward_lines(work):
    exe = build(work, "recursive_sum")
    back = ("ckpt reverse-step\n" * 4 + "ckpt reverse-finish\n" +
            "ckpt reverse-next\n" * 4)
    text, _ = gdb(work, exe, WHERE + """
break sum_to if n == 2
ckpt run
python attempt("ckpt reverse-step")
ckpt snapshot
python where("fwd")
%s
%s
next
python where("again")
print calls
continue
python where("stop2")
ckpt reverse-step
python where("cross")
""" % ("step\npython where('fwd')\n" * 15,
       "".join("%spython where('back')\n" % c for c in back.splitlines(True))))
    line = {m: line_of("recursive_sum", "line: " + m) for m in
            ("here", "base case", "recursive call", "after the call")}
    fwd = places(text, "fwd")
    # going forward: sum_to(2) -> sum_to(1) -> sum_to(0) and back up
    assert fwd[:5] == [(line["here"], "2"), (line["here"] + 2, "2"),
                       (line["here"] + 3, "2"), (line["recursive call"], "2"),
                       (line["here"], "1")], text
    assert fwd[11] == (line["base case"], "0"), text
    assert fwd[15] == (line["after the call"], "2"), text
    # 4 reverse-steps: 14, 13, 12, 11; reverse-finish from sum_to(0): the
    # call in sum_to(1) (7); reverse-next: 6, 5, 4, then from sum_to(1)'s
    # first line to the call in sum_to(2) (3)
    assert places(text, "back") == [fwd[i] for i in
                                    (14, 13, 12, 11, 7, 6, 5, 4, 3)], text
    # from there, forward again: `next` steps over the call as it did
    assert places(text, "again") == [fwd[15]], text
    assert printed(text)[0] == "4", text
    # reverse-step from the next breakpoint stop crosses the rest of round
    # 0 and lands in sum_to(3) of round 1, at its call of sum_to(2)
    assert places(text, "stop2") == [(line["here"], "2")], text
    assert places(text, "cross") == [(line["recursive call"], "3")], text
    assert ("ckpt reverse-step: ckpt: cannot go back before the first "
            "snapshot" in text), text
    assert "divergence" not in text, text
