# SPDX-License-Identifier: LGPL-2.1-or-later
"""ckpt under gdb (dist/gdb/ckpt-gdb.py, docs/reversible-debugging.md):
snapshots of a program stopped at a breakpoint and their restore,
checkpoints of a program gdb runs, the tracer named when gdb holds a
program stopped, and recorded inputs seen again on re-execution."""

import os
import re
import subprocess
import threading

import pytest

from ckpt_harness import tool
from gdb_harness import (GDB_TIMEOUT, build, gdb, native_output, needs_gdb,
                         printed)
from gdb_harness import work  # noqa: F401 (the fixture)

pytestmark = needs_gdb


@pytest.mark.time_limit(180)
def test_snapshot_restore_continue_gives_the_native_output(work):
    """A snapshot at a breakpoint moves no thread; restore brings back the
    stop; the output is the native run's."""
    exe = build(work, "counter_lines")
    text, out = gdb(work, exe, """
break progress if i == 12
ckpt run
ckpt snapshot
info threads
delete
break progress if i == 20
continue
print counter
ckpt restore 1
print i
print counter
python
addr = int(gdb.parse_and_eval("(long)&_dl_debug_state"))
pid = gdb.selected_inferior().pid
for lo, hi, off, path in file_mappings(pid):
    if lo <= addr < hi:
        with open(path, "rb") as f:
            f.seek(addr - lo + off)
            same = f.read(1) == bytes(
                gdb.selected_inferior().read_memory(addr, 1))
        print("ld.so code after restore: %s" % ("intact" if same else
                                                 "changed"))
end
delete
continue
""", args=["30"])
    assert "ckpt: snapshot 1 at stop 1" in text, text
    assert re.search(r'^\* 1 +Thread .* progress \(i=12\)', text, re.M), text
    assert '"ckpt-manager"' in text, text
    assert printed(text) == ["210", "12", "78"], text
    # gdb's breakpoint in ld.so was in memory when the image was written
    assert "ld.so code after restore: intact" in text, text
    # up to i=19, then from i=12 again: the restored stdout offset is the
    # snapshot's, so the second pass writes over the first
    assert out == native_output(exe, ["30"]), text + out


@pytest.mark.time_limit(120)
def test_checkpoint_of_a_running_program_under_gdb(work):
    """gdb never stops on the checkpoint signal, the checkpoint succeeds
    while gdb runs the program, and the output is the native run's."""
    exe = build(work, "counter_lines")
    text, out = gdb(work, exe, """
python
import subprocess, threading, time
def command(*args):
    return subprocess.run([find_tool("ckpt_command"), "--coord",
                           SESSION.coord] + list(args),
                          capture_output=True, text=True, timeout=60)
def take():
    for _ in range(200):
        if "vpid=" in command("--list").stdout:
            break
        time.sleep(0.05)
    r = command("--checkpoint")
    print("checkpoint exit %d: %s" % (r.returncode, r.stderr.strip()))
threading.Timer(0.2, take).start()
end
ckpt run
""", args=["150"])
    assert "checkpoint exit 0" in text, text
    assert "Real-time event" not in text and "SIG6" not in text, text
    assert out == native_output(exe, ["150"]), out


@pytest.mark.time_limit(120)
def test_checkpoint_of_a_program_stopped_in_gdb_names_the_tracer(work):
    """Without the extension a checkpoint cannot stop a program gdb holds:
    the failure says who traces it, not to kill -CONT."""
    exe = build(work, "counter_lines")
    coord = os.path.join(work, "coord.sock")
    script = os.path.join(work, "plain.gdb")
    with open(script, "w") as f:
        f.write("set exec-wrapper %s --coord %s --ckptdir %s\n"
                "break progress if i == 3\nrun > /dev/null\n"
                "shell %s --coord %s --checkpoint > %s/ckpt.out 2>&1\n"
                "kill\n" % (tool("ckpt_launch"), coord, work,
                            tool("ckpt_command"), coord, work))
    env = dict(os.environ, CKPT_PHASE_TIMEOUT="1")
    subprocess.run(["gdb", "-nx", "-q", "-batch", "-x", script, exe, "20"],
                   capture_output=True, text=True, timeout=GDB_TIMEOUT,
                   cwd=work, env=env)
    msg = open(os.path.join(work, "ckpt.out")).read()
    assert re.search(r"traced by PID \d+ \(gdb\)", msg), msg
    assert "kill -CONT" not in msg, msg


@pytest.mark.time_limit(200)	# above GDB_TIMEOUT: gdb's output is kept
def test_reexecution_sees_the_recorded_inputs(work):
    """A line read from a FIFO fed once, clock_gettime, getrandom and
    time: after a restore, the re-execution sees the first run's values
    (wrappers/record_inputs.c), though the FIFO has nothing left."""
    exe = build(work, "outside_inputs")
    fifo = os.path.join(work, "in.fifo")
    os.mkfifo(fifo)
    token = "line-%d" % os.getpid()

    def feed():
        with open(fifo, "w") as f:
            f.write(token + "\n")

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    show = "print line\nprint when\nprint dice\nprint now\n"
    text, out = gdb(work, exe, """
break progress
ckpt run
ckpt snapshot
continue
%s
ckpt restore 1
continue
%s
continue
""" % (show, show), args=["<", fifo])
    feeder.join(timeout=10)
    values = printed(text)
    assert len(values) == 8, text
    assert token in values[0], text
    assert values[:4] == values[4:], text
    assert out.startswith(token), out


@pytest.mark.time_limit(60)
def test_an_exec_records_under_a_name_of_its_own(work):
    """The image an exec starts keeps the vpid but numbers its events from
    0: it records in <base>.exec.<vpid>, never replaying the first image's
    entries as its own (each python3 takes the GIL's mutex)."""
    record = os.path.join(work, "rec")
    r = subprocess.run(
        [tool("ckpt_launch"), "--coord", os.path.join(work, "c.sock"), "--",
         "/usr/bin/python3", "-c", "import os; os.execv('/usr/bin/python3',"
         " ['python3', '-c', 'print(\"after exec\")'])"],
        env=dict(os.environ, CKPT_RECORD_INPUTS=record),
        capture_output=True, text=True, timeout=40)
    assert r.returncode == 0 and r.stdout == "after exec\n", r
    assert "differs" not in r.stderr, r.stderr
    names = sorted(os.listdir(work))
    locks = [n for n in names if n.endswith(".locks")]
    assert len(locks) == 2 and re.match(r"rec\.\d+\.locks$", locks[0]) and \
        locks[1] == "rec.exec." + locks[0][4:], names


@pytest.mark.time_limit(120)
def test_a_failed_snapshot_says_why_and_leaves_the_stop(work):
    """The checkpoint fails (no coordinator at the address): the error
    names it at once, the program is still at its stop, and continues to
    the native output."""
    exe = build(work, "counter_lines")
    text, out = gdb(work, exe, """
break progress if i == 2
ckpt run
python
SESSION.coord = SESSION.coord + ".gone"
try:
    gdb.execute("ckpt snapshot")
except Exception as e:
    print("refused: %s" % e)
end
print i
delete
continue
""", args=["10"], env={"CKPT_GDB_TIMEOUT": "60"})
    assert re.search(r"refused: ckpt: snapshot failed: ckpt_command: no "
                     r"coordinator at \S+\.gone", text), text
    assert printed(text) == ["2"], text
    assert out == native_output(exe, ["10"]), text + out
