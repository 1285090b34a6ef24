# SPDX-License-Identifier: LGPL-2.1-or-later
"""An MPICH job (Debian's mpich: hydra's mpirun, its proxy and 4 ranks,
all in the computation) checkpointed mid-run, killed and restarted ends
with the result of an uninterrupted run, over MPICH's shared-memory
transport and over TCP only. tests/apps/mpi_ring.c is built here with
mpicc (not by make test-apps). Marked `mpi`: `-m mpi` runs only these;
on CI (CI set) a missing mpicc fails instead of skipping."""

import os
import shutil
import subprocess

import pytest

from ckpt_harness import FINISH_TIMEOUT, numbers

HERE = os.path.dirname(os.path.abspath(__file__))
STEPS = 150
PAUSE_MS = 20
STEP = r"^step (\d+) sum [0-9a-f]+$"
RANKS = 4
# hydra's mpirun, its proxy and the ranks
PROCESSES = 2 + RANKS
TRANSPORTS = {
    "shared-memory": {},
    # every rank as if on another node, UCX over TCP sockets only
    "tcp": {"MPIR_CVAR_NOLOCAL": "1", "UCX_TLS": "tcp,self"},
}

pytestmark = [pytest.mark.mpi, pytest.mark.time_limit(120)]


@pytest.fixture(scope="module")
def mpi_ring(tmp_path_factory):
    mpicc = shutil.which("mpicc")
    if not mpicc or not shutil.which("mpirun"):
        msg = "mpicc/mpirun missing (Debian mpich, libmpich-dev)"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    out = str(tmp_path_factory.mktemp("mpi") / "mpi_ring")
    subprocess.run([mpicc, "-O2", "-o", out,
                    os.path.join(HERE, "apps", "mpi_ring.c")],
                   check=True, timeout=120)
    return out


def job(binary, env):
    return ["env"] + ["%s=%s" % kv for kv in sorted(env.items())] + [
        "mpirun", "-np", str(RANKS), binary, str(STEPS), str(PAUSE_MS)]


M64 = (1 << 64) - 1


def mix(h, v):
    h ^= (v + 0x9e3779b97f4a7c15 + (h << 6) + (h >> 2)) & M64
    return (h * 0xff51afd7ed558ccd) & M64


def uninterrupted_result():
    """What mpi_ring.c computes, computed here: a native run over TCP
    hangs in MPI_Finalize in about half the runs on the test machine
    (MPICH 4.0.2 with UCX, without ckpt), so none is needed."""
    values = [mix(0, r + 1) for r in range(RANKS)]
    for k in range(1, STEPS + 1):
        got = [values[(r - 1) % RANKS] for r in range(RANKS)]
        values = [mix(values[r], (got[r] + k) & M64) for r in range(RANKS)]
    total = 0
    for v in values:
        total ^= v
    return "result %016x" % total


def wait_result(r, transport):
    """The job's exit; over TCP, the result line and at most 10 s more:
    MPI_Finalize may hang there natively (above)."""
    if transport != "tcp":
        assert r.wait_exit() == 0, "%r %s" % (r.lines()[-3:],
                                              r.stderr_text())
        return
    r.wait_line(r"^result ", timeout=FINISH_TIMEOUT)
    try:
        r.wait_exit(timeout=10)
    except AssertionError:
        pass


@pytest.mark.parametrize("transport", sorted(TRANSPORTS))
def test_mpich_job_restarts_to_the_same_result(session, mpi_ring, transport):
    env = TRANSPORTS[transport]
    want = uninterrupted_result()
    p = session.launch(job(mpi_ring, env), name="mpirun")
    p.wait_line(STEP, minimum=30)
    # printed before the checkpoint was asked for: it holds at least this
    seen = numbers(p.lines(), STEP)[-1]
    images = session.checkpoint(expect_images=PROCESSES)
    session.kill_all()
    p.popen.wait(30)
    before = numbers(p.lines(), STEP)
    r = session.restart(images, name="restart mpirun")
    wait_result(r, transport)
    after = numbers(r.lines(), STEP)
    # the restarted job goes on from the step after the checkpoint, every
    # step once, to the end (the original's lines read after the
    # checkpoint returned may run some steps ahead: not a bound)
    assert after and seen <= after[0] - 1 <= before[-1], (
        seen, before[-1], after[:3])
    assert after == list(range(after[0], STEPS + 1)), after[:5]
    results = [line for line in r.lines() if line.startswith("result")]
    assert results == [want], (results, r.lines()[-3:])
    assert "UCX  WARN" not in "\n".join(r.lines()) + r.stderr_text(), (
        r.lines()[-5:])
