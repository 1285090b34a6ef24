# SPDX-License-Identifier: LGPL-2.1-or-later
"""A shell pipeline: a python3 -u generator | xz -3 -T2 (two compressing
threads, 1 MiB blocks) | tee data.xz | xz -d | sha256sum. Five processes
and four pipes with data in flight come back as they were; the checksum
and the compressed file must be an uninterrupted run's. The generator
writes 64 KiB chunks unbuffered and ignores write's count (a checkpoint
must not cut a write short: tests/test_short_writes.py)."""

import pytest

from realprogs.driver import Program, check_program, require

PYTHON = "/usr/bin/python3"
GENERATOR = r"""
import sys
chunks, lines = int(sys.argv[1]), int(sys.argv[2])
words = [w.encode() for w in (
    "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu "
    "nu xi omicron pi rho sigma tau upsilon phi chi psi omega").split()]
x, out = 1, sys.stdout.buffer
for c in range(1, chunks + 1):
    buf = []
    for i in range(lines):
        x = (x * 1103515245 + 12345) % 2147483648
        buf.append(b"%d %s %s %d\n" % (c * lines + i, words[x % 24],
                                       words[(x >> 8) % 24], x % 9973))
    out.write(b"".join(buf))
    print("chunk", c, file=sys.stderr, flush=True)
out.flush()
"""


class XzPipeline(Program):
    name = "xz-pipeline"

    def setup(self, work):
        with open("%s/gen.py" % work, "w") as f:
            f.write(GENERATOR)

    def argv(self, run):
        return ["/bin/sh", "-c",
                "%s -u gen.py 100 3000 2>gen.log | xz -3 -T2 --block-size=1MiB "
                "| tee data.xz | xz -d | sha256sum" % PYTHON]

    def progress(self, run):
        return run.read(run.path("gen.log")).count(b"\n")

    def finished(self, run):
        return bool(run.stdout_lines())


@pytest.mark.time_limit(600)
def test_xz_pipeline(session):
    require("/usr/bin/xz", "xz-utils")
    require(PYTHON, "python3")
    check_program(session, XzPipeline())
