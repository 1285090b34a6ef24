# SPDX-License-Identifier: LGPL-2.1-or-later
"""The Slurm workflow of docs/slurm.md on a one-node Slurm started here
(tests/slurm_cluster.py): dist/slurm/ckpt_job.sbatch runs a program
under ckpt_launch; near its time limit it checkpoints, stops the
computation and the job is requeued (or a dependent job submitted); the
next run continues from the images with ckpt_restart_script.sh; the
output is exactly that of an uninterrupted run. Likewise an MPICH job
submitted with dist/slurm/ckpt_mpi_job.sh: hydra's mpirun and its ranks
in an srun step under ckpt_launch.

What the test simulates: the approaching time limit. Slurm's smallest
time limit is a minute and it sends --signal=B:USR1@N with up to a
minute's slack, so the test sends that signal itself, exactly as Slurm
would (scancel --signal=USR1 --batch: to the batch shell only), while
the program waits half-way for the test's go-ahead (counter's HOLD_FILE):
it cannot end before the signal. Slurm's own signal must then not come
during the test: the script's @300 with a 5-minute limit is due at once
(Slurm sent it at its first time-limit check, ~30 s into a run, a second
checkpoint the test did not ask for, or a dependent job's first part
ended before the test's signal, "Invalid job id"), so the test submits
with @SIGNAL_BEFORE_S, in SBATCH_SIGNAL so that the dependent job gets
it too. And a requeued job waits until its old job
credential expired before it starts again (two minutes by default): the
test's Slurm makes credentials last 5 s (AuthInfo cred_expire).
Everything else is Slurm's own doing."""

import collections
import os
import re
import time

import pytest

import test_mpi
from ckpt_harness import (BIN, ROOT, app, assert_resumed, numbers,
                          reference_output)
from slurm_cluster import Cluster
from test_mpi import mpi_ring  # noqa: F401 (a fixture)

JOB_SCRIPT = os.path.join(ROOT, "dist", "slurm", "ckpt_job.sbatch")
MPI_JOB_SCRIPT = os.path.join(ROOT, "dist", "slurm", "ckpt_mpi_job.sh")
STEPS, PAUSE_MS = 100, 40       # 4 s uninterrupted
JOB_TIMEOUT = 40
TIME_LIMIT_MIN = 5
# Slurm's own warning: due at 4 minutes, at 3 with its minute of slack
SIGNAL_BEFORE_S = 60


@pytest.fixture(scope="module")
def slurm():
    why = Cluster.skip_reason()
    if why:
        pytest.skip(why)
    c = Cluster()
    try:
        yield c
    finally:
        c.close()


@pytest.fixture
def cluster(slurm, tmp_path):
    """The module's Slurm; each test its own output and directory."""
    slurm.work = str(tmp_path)
    yield slurm
    slurm.run(["scancel", "--full", "--user=root"], check=False)


def wait_output(path, regex, timeout, c, job):
    deadline = time.monotonic() + timeout
    rx = re.compile(regex, re.M)
    while time.monotonic() < deadline:
        if os.path.exists(path):
            with open(path) as f:
                text = f.read()
            if rx.search(text):
                return text
        time.sleep(0.1)
    text = open(path).read() if os.path.exists(path) else "(no output)"
    raise AssertionError("job %s: no /%s/ in %d s; state %s; output:\n%s\n%s"
                         % (job, regex, timeout, c.job_state(job), text,
                            c.logs()))


def wait_job_ended(c, job, timeout=JOB_TIMEOUT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state, reason = c.job_state(job)
        if state in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT",
                     "NODE_FAIL", "OUT_OF_MEMORY"):
            return state
        time.sleep(0.2)
    raise AssertionError("job %s still %s after %d s" % (
        job, c.job_state(job), timeout))


# A program the jobs run: its arguments (after them the file it waits for
# half-way), its progress lines, their last number, and the last line of
# an uninterrupted run.
Program = collections.namedtuple("Program",
                                 "argv progress steps final_line")


def counter():
    argv = [app("counter"), str(STEPS), str(PAUSE_MS)]
    return Program(argv, r"^count (\d+) ", STEPS,
                   reference_output(argv)[-1])


def hold_file(c):
    return os.path.join(c.work, "go-on")


def submit(c, out, ckptdir, extra_env, prog, mpi_ranks=None):
    """sbatch ckpt_job.sbatch PROGRAM, or with mpi_ranks,
    ckpt_mpi_job.sh RANKS PROGRAM; returns the job id."""
    # SBATCH_SIGNAL rather than --signal: a dependent job's sbatch, run
    # in the job, reads it too
    env = dict(PATH=BIN + ":" + os.environ["PATH"], CKPT_DIR=ckptdir,
               SBATCH_SIGNAL="B:USR1@%d" % SIGNAL_BEFORE_S, **extra_env)
    for var in list(c.env):
        if var.startswith("CKPT_") and var not in env:
            env[var] = ""
    options = ["--parsable", "--time=%d" % TIME_LIMIT_MIN,
               "--output=" + out, "--chdir=" + c.work]
    if mpi_ranks:
        argv = [MPI_JOB_SCRIPT] + options + [str(mpi_ranks)]
    else:
        argv = ["sbatch"] + options + [JOB_SCRIPT]
    r = c.run(argv + prog.argv + [hold_file(c)], env=env)
    return r.stdout.strip().split(";")[0]


def interrupt_and_check(c, job, out, ckptdir, continue_job, prog):
    """Near the limit (simulated), the job checkpoints and continues;
    the combined output is an uninterrupted run's."""
    held_at = prog.steps // 2
    text = wait_output(out, prog.progress.replace(r"(\d+)", str(held_at)),
                       30, c, job)
    assert "time limit near" not in text, "a signal the test did not " \
        "send:\n" + text
    r = c.run(["scancel", "--signal=USR1", "--batch", job], check=False)
    assert r.returncode == 0, "scancel job %s: %s; state %s\n%s" % (
        job, r.stderr.strip(), c.job_state(job), c.logs())
    text = wait_output(out, r"^ckpt_job: (requeueing the job|continued "
                       r"by a dependent job)$", 30, c, job)
    open(hold_file(c), "w").close()
    next_job = continue_job(text)
    end = wait_job_ended(c, next_job)
    with open(out) as f:
        text = f.read()
    first, sep, second = text.partition("ckpt_job: continuing from the "
                                        "images in %s" % ckptdir)
    assert sep, "job %s ended (%s) and never continued from its " \
        "images:\n%s\n%s" % (next_job, end, text, c.logs())
    assert text.count("ckpt_job: time limit near") == 1, \
        "checkpointed more often than the test asked:\n" + text
    seen = max(numbers(first.split("ckpt_job: time limit near")[0]
                       .splitlines(), prog.progress))
    before = numbers(first.splitlines(), prog.progress)
    after = numbers(second.splitlines(), prog.progress)
    try:
        assert_resumed(before, after, prog.progress, prog.steps, seen)
    except AssertionError as e:
        raise AssertionError("%s\njob output:\n%s" % (e, text)) from None
    word = prog.final_line.split()[0] + " "
    assert [l for l in second.splitlines() if l.startswith(word)] == \
        [prog.final_line], text
    assert os.path.exists(os.path.join(ckptdir, "ckpt_restart_script.sh"))
    return text


def requeued(c, job):
    def continue_job(text):
        state, reason = None, None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            state, reason = c.job_state(job)
            if state == "PENDING":
                break
            time.sleep(0.2)
        assert state == "PENDING", (state, reason, text)
        return job
    return continue_job


@pytest.mark.time_limit(120)
def test_job_checkpoints_requeues_and_continues(cluster):
    """The program in the batch shell; as a job step (srun, CKPT_SRUN=1):
    the MPI test below."""
    c = cluster
    out, ckptdir = (os.path.join(c.work, "job.out"),
                    os.path.join(c.work, "ckpt"))
    job = submit(c, out, ckptdir, {"CKPT_SRUN": "0"}, counter())
    text = interrupt_and_check(c, job, out, ckptdir, requeued(c, job),
                               counter())
    state, _ = c.job_state(job)
    assert state == "COMPLETED", text
    assert "ckpt_job: done (exit 0)" in text.splitlines()[-1] or \
        "ckpt_job: done (exit 0)" in text, text


@pytest.mark.time_limit(120)
def test_job_continues_in_a_dependent_job(cluster):
    c = cluster
    out, ckptdir = (os.path.join(c.work, "job.out"),
                    os.path.join(c.work, "ckpt"))
    job = submit(c, out, ckptdir, {"CKPT_CONTINUE": "dependent"},
                 counter())

    def continue_job(text):
        m = re.search(r"^Submitted batch job (\d+)$", text, re.M)
        assert m, text
        return m.group(1)

    text = interrupt_and_check(c, job, out, ckptdir, continue_job,
                               counter())
    # both parts end well: the first once its checkpoint is taken
    assert text.count("ckpt_job: done (exit 0)") == 2, text
    assert c.job_state(job)[0] == "COMPLETED"


@pytest.mark.mpi
@pytest.mark.time_limit(120)
def test_mpi_job_launched_by_srun_continues_to_the_same_result(
        cluster, mpi_ring):  # noqa: F811
    """dist/slurm/ckpt_mpi_job.sh: hydra's mpirun and 4 ranks in an srun
    step under ckpt, checkpointed near the limit, requeued, restarted:
    every step once and the uninterrupted result."""
    c = cluster
    out, ckptdir = (os.path.join(c.work, "job.out"),
                    os.path.join(c.work, "ckpt"))
    prog = Program([mpi_ring, str(test_mpi.STEPS), str(test_mpi.PAUSE_MS)],
                   r"^step (\d+) sum ", test_mpi.STEPS,
                   test_mpi.uninterrupted_result())
    job = submit(c, out, ckptdir, {}, prog,
                 mpi_ranks=test_mpi.RANKS)
    text = interrupt_and_check(c, job, out, ckptdir, requeued(c, job),
                               prog)
    assert c.job_state(job)[0] == "COMPLETED", text
    assert "ckpt_job: done (exit 0)" in text, text
    assert "UCX  WARN" not in text, text
