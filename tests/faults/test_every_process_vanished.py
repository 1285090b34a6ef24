# SPDX-License-Identifier: LGPL-2.1-or-later
"""A checkpoint during which every process of the computation left (it
exited while being suspended) saved nothing: it fails and says why,
instead of succeeding with no image ("0 process(es) durable")."""

import subprocess
import time

import pytest

from fault_util import VanishingFake, start_child
from test_coordinator import COMMAND, coord, env  # noqa: F401 (fixtures)


@pytest.mark.time_limit(60)
def test_checkpoint_everyone_left_fails(env, coord):  # noqa: F811
    c = coord()
    child = start_child(c.addr)
    try:
        fake = VanishingFake(c.addr, 4711, child, program="leaver")
        t0 = time.monotonic()
        r = subprocess.run([COMMAND, "--checkpoint"], env=env, timeout=30,
                           capture_output=True, text=True)
        took = time.monotonic() - t0
        assert fake.closed.wait(10)
    finally:
        child.kill()
        child.wait(10)
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    assert r.stdout == ""
    assert r.stderr.splitlines() == [
        "checkpoint 1 failed: every process of the computation left while "
        "it was being suspended (exited, or exec'd and did not join "
        "again); no image was written"], r.stderr
    assert took < 10
    assert "checkpoint 1 failed" in c.logtext()
    assert "0 process(es) durable" not in c.logtext()
