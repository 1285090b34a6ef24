# SPDX-License-Identifier: LGPL-2.1-or-later
"""Named pipes (FIFOs) between processes come back connected, with the
bytes in flight at the checkpoint neither lost nor doubled: a writer keeps
a FIFO full while a reader takes one 64-byte record at a time and checks
every sequence number; checkpointed, killed, restarted with one
ckpt_restart (the FIFO's path removed or kept), the output equals an
uninterrupted run. Also a FIFO a bash script makes for two programs."""

import os
import re
import stat

import pytest

from ckpt_harness import app, numbers, reference_output

N = 1500
GOT = r"^got (\d+)$"


def saved_fifo_bytes(session, images):
    """Bytes in flight saved for FIFO records, and the count of records."""
    saved, records = 0, 0
    for img in images:
        for line in session.inspect(img).splitlines():
            if re.match(r"\s*\d+ fifo ", line):
                records += 1
                m = re.search(r"\((\d+) bytes saved\)", line)
                saved += int(m.group(1)) if m else 0
    return saved, records


def check_continued(r, ref, seen, before):
    rc = r.wait_exit()
    lines = r.lines()
    assert rc == 0, "exit %d, last lines %r, stderr:\n%s" % (
        rc, lines[-5:], r.stderr_text())
    assert not any(l.startswith("FAIL") for l in lines), lines[-5:]
    want = [l for l in ref if not l.startswith("got ")]
    assert [l for l in lines if not l.startswith("got ")] == want, (
        "the restarted reader saw other records than an uninterrupted "
        "run: %r, want %r" % (lines[-3:], want))
    after = numbers(lines, GOT)
    assert seen < after[0] <= before[-1] + 50, (after[0], seen, before[-1])
    assert after == list(range(after[0], N + 1, 50)), after[:5]


@pytest.mark.time_limit(300)
@pytest.mark.parametrize("remove_fifo", [True, False])
def test_fifo_tree_restart(session, remove_fifo):
    ref = reference_output([app("fifo_relay"), "tree",
                            session.path("ref.fifo"), str(N), "3"],
                           cache=False)
    assert ref[-2:] == [ref[-2], "OK tree"] and ref[-2].startswith("OK fifo")
    fifo = session.path("f.fifo")
    p = session.launch([app("fifo_relay"), "tree", fifo, str(N), "3"])
    p.wait_line(GOT, minimum=300)
    seen = max(numbers(p.lines(), GOT))
    images = session.checkpoint(expect_images=3)
    # The computation goes on unchanged after the drain and refill.
    p.wait_line(GOT, minimum=seen + 100)
    session.kill_all()
    p.popen.wait(30)
    before = numbers(p.lines(), GOT)
    assert not any(l.startswith("FAIL") for l in p.lines()), p.lines()[-3:]

    saved, records = saved_fifo_bytes(session, images)
    assert records == 3, "want the writer's, the reader's and the " \
        "parent's O_RDWR fd as FIFO records, got %d" % records
    assert saved >= 4096, "the full FIFO saved only %d bytes" % saved
    if remove_fifo:
        os.unlink(fifo)

    r = session.restart(images)
    check_continued(r, ref, seen, before)
    st = os.stat(fifo)
    assert stat.S_ISFIFO(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o640


@pytest.mark.time_limit(300)
def test_fifo_bash_script(session):
    """bash makes the FIFO; `writer > fifo &` and `reader < fifo` have it
    on their stdio."""
    script = ("mkfifo {f}; {a} write {n} > {f} & {a} read {n} 3 < {f}; "
              "wait; rm -f {f}")
    ref = reference_output(["bash", "-c", script.format(
        f=session.path("ref.fifo"), a=app("fifo_relay"), n=N)], cache=False)
    assert ref[-1].startswith("OK fifo")
    fifo = session.path("f.fifo")
    p = session.launch(["bash", "-c", script.format(
        f=fifo, a=app("fifo_relay"), n=N)])
    p.wait_line(GOT, minimum=300)
    seen = max(numbers(p.lines(), GOT))
    images = session.checkpoint(expect_images=3)
    session.kill_all()
    p.popen.wait(30)
    before = numbers(p.lines(), GOT)
    saved, records = saved_fifo_bytes(session, images)
    assert records == 2 and saved >= 4096, (records, saved)

    r = session.restart(images)
    check_continued(r, ref, seen, before)
    assert not os.path.exists(fifo), "the script's rm did not run"
