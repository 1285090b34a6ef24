# SPDX-License-Identifier: LGPL-2.1-or-later
"""Helpers of the gdb extension's tests (tests/test_gdb_*.py): build a
program of tests/gdb_apps/ with -O0 -g, run `gdb -batch` on it with
dist/gdb/ckpt-gdb.py and a script, read what gdb printed. Every run is
bounded (GDB_TIMEOUT; the extension's own waits by CKPT_GDB_TIMEOUT)."""

import os
import re
import shutil
import subprocess
import tempfile

import pytest

from ckpt_harness import BIN, ROOT, missing_core

EXTENSION = os.path.join(ROOT, "dist", "gdb", "ckpt-gdb.py")
SOURCES = os.path.join(ROOT, "tests", "gdb_apps")
GDB_TIMEOUT = 120

needs_gdb = pytest.mark.skipif(
    shutil.which("gdb") is None or bool(missing_core()),
    reason="needs gdb and the built ckpt tools")


@pytest.fixture
def work():
    """A private directory for the program, the script and the outputs."""
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
    """The line of marker in tests/gdb_apps/NAME (.c unless named)."""
    if "." not in name:
        name += ".c"
    with open(os.path.join(SOURCES, name)) as f:
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
    try:
        r = subprocess.run(["gdb", "-nx", "-q", "-batch", "-x", path, exe],
                           capture_output=True, text=True,
                           timeout=GDB_TIMEOUT, cwd=work, env=e)
    except subprocess.TimeoutExpired as t:
        # what gdb said until then: where it waited
        raise AssertionError("gdb did not finish within %d s; its output:"
                             "\n%s\n%s" % (GDB_TIMEOUT, partial(t.stdout),
                                            partial(t.stderr))) from None
    text = r.stdout + r.stderr
    program = open(out).read() if os.path.exists(out) else ""
    return text, program


def partial(output):
    if isinstance(output, bytes):
        return output.decode(errors="replace")
    return output or ""


def printed(text):
    """The values gdb printed with `print`, in order."""
    return re.findall(r"^\$\d+ = (.*)$", text, re.M)


def native_output(exe, args):
    return subprocess.run([exe] + list(args), capture_output=True,
                          text=True, timeout=60).stdout
