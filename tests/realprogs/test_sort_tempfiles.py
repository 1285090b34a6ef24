# SPDX-License-Identifier: LGPL-2.1-or-later
"""GNU sort on a generated 33 MB input with a 1 MiB buffer (-S 1M),
temporary files in a directory of /tmp (-T) merged 8 at a time, on
several keys: over a hundred sorted runs are written, merged into new
temporary files and removed, all while checkpoints land."""

import os
import subprocess

import pytest

from realprogs.driver import Program, check_program, require
from realprogs.test_xz_pipeline import GENERATOR

PYTHON = "/usr/bin/python3"


class SortTempFiles(Program):
    name = "sort-tempfiles"
    marks = (0.3, 0.6)

    def setup(self, work):
        gen = os.path.join(work, "gen.py")
        with open(gen, "w") as f:
            f.write(GENERATOR)
        with open(os.path.join(work, "big.txt"), "wb") as out:
            subprocess.run([PYTHON, gen, "100", "15000"], stdout=out,
                           stderr=subprocess.DEVNULL, check=True,
                           timeout=300)

    def argv(self, run):
        return ["sort", "-S", "1M", "--batch-size=8", "-T", run.tmp,
                "-k2,2", "-k4,4n", "-k1,1n", "big.txt"]

    def progress(self, run):
        """Temporary files seen so far (sort names each one anew)."""
        seen = run.state.setdefault("seen", set())
        try:
            seen.update(os.listdir(run.tmp))
        except FileNotFoundError:
            pass
        return len(seen)

    def finished(self, run):
        return os.path.getsize(run.stdout) > 0 if os.path.exists(
            run.stdout) else False


@pytest.mark.time_limit(600)
def test_sort_tempfiles(session):
    require("/usr/bin/sort", "coreutils")
    check_program(session, SortTempFiles())
