# SPDX-License-Identifier: LGPL-2.1-or-later
"""The gdb extension (dist/gdb/ckpt-gdb.py, docs/reversible-debugging.md),
driven by `gdb -batch -x SCRIPT`: snapshots of a program stopped at a
breakpoint, restore, reverse-continue, reverse-watch, the errors, and
checkpoints of a program gdb runs. The programs (tests/gdb_apps/) are
built here with -O0 -g so gdb shows their variables."""

import os
import re
import shutil
import subprocess
import tempfile
import threading

import pytest

from ckpt_harness import BIN, ROOT, missing_core, tool

EXTENSION = os.path.join(ROOT, "dist", "gdb", "ckpt-gdb.py")
SOURCES = os.path.join(ROOT, "tests", "gdb_apps")
GDB_TIMEOUT = 120

pytestmark = pytest.mark.skipif(
    shutil.which("gdb") is None or bool(missing_core()),
    reason="needs gdb and the built ckpt tools")


@pytest.fixture
def work():
    d = tempfile.mkdtemp(prefix="ckpt-gdb-test-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


def build(work, name):
    exe = os.path.join(work, name)
    subprocess.run(["cc", "-g", "-O0", "-o", exe,
                    os.path.join(SOURCES, name + ".c")], check=True,
                   timeout=60)
    return exe


def line_of(name, marker):
    with open(os.path.join(SOURCES, name + ".c")) as f:
        for n, line in enumerate(f, 1):
            if marker in line:
                return n
    raise AssertionError("%s not in %s.c" % (marker, name))


def gdb(work, exe, script, args=(), env=None):
    """Run gdb on exe with the extension and script; returns (gdb's
    output, the program's output)."""
    path = os.path.join(work, "script.gdb")
    out = os.path.join(work, "program.out")
    with open(path, "w") as f:
        f.write("source %s\n" % EXTENSION)
        f.write("set args %s > %s\n" % (" ".join(args), out))
        f.write(script)
    e = dict(os.environ, CKPT_BIN=BIN, CKPT_GDB_TIMEOUT="40")
    e.update(env or {})
    r = subprocess.run(["gdb", "-nx", "-q", "-batch", "-x", path, exe],
                       capture_output=True, text=True, timeout=GDB_TIMEOUT,
                       cwd=work, env=e)
    text = r.stdout + r.stderr
    program = open(out).read() if os.path.exists(out) else ""
    return text, program


def printed(text, name="$"):
    """The values gdb printed with `print`, in order."""
    return re.findall(r"^\$\d+ = (.*)$", text, re.M)


def native_output(exe, args):
    return subprocess.run([exe] + list(args), capture_output=True,
                          text=True, timeout=60).stdout


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
delete
continue
""", args=["30"])
    assert "ckpt: snapshot 1 at stop 1" in text, text
    assert re.search(r'^\* 1 +Thread .* progress \(i=12\)', text, re.M), text
    assert '"ckpt-manager"' in text, text
    assert printed(text) == ["210", "12", "78"], text
    # up to i=19, then from i=12 again: the restored stdout offset is the
    # snapshot's, so the second pass writes over the first
    assert out == native_output(exe, ["30"]), text + out


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


@pytest.mark.time_limit(120)
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
