# SPDX-License-Identifier: LGPL-2.1-or-later
"""The Slurm workflow of docs/slurm.md on a one-node Slurm started here
(tests/slurm_cluster.py): dist/slurm/ckpt_job.sbatch runs a program
under ckpt_launch; near its time limit it checkpoints, stops the
computation and the job is requeued (or a dependent job submitted); the
next run continues from the images with ckpt_restart_script.sh; the
output is exactly that of an uninterrupted run.

What the test simulates: the approaching time limit. Slurm's smallest
time limit is a minute and it sends --signal=B:USR1@N with up to a
minute's slack, so the test sends that signal itself, exactly as Slurm
would (scancel --signal=USR1 --batch: to the batch shell only). And a
requeued job waits until its old job credential expired before it starts
again (two minutes by default): the test's Slurm makes credentials last
5 s (AuthInfo cred_expire). Everything else is Slurm's own doing."""

import os
import re
import time

import pytest

from ckpt_harness import (BIN, ROOT, app, assert_resumed, numbers,
                          reference_output)
from slurm_cluster import Cluster

JOB_SCRIPT = os.path.join(ROOT, "dist", "slurm", "ckpt_job.sbatch")
PROGRESS = r"^count (\d+) "
STEPS, PAUSE_MS = 100, 40       # 4 s uninterrupted
JOB_TIMEOUT = 40


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


def submit(c, out, ckptdir, extra_env):
    env = dict(PATH=BIN + ":" + os.environ["PATH"], CKPT_DIR=ckptdir,
               **extra_env)
    for var in list(c.env):
        if var.startswith("CKPT_") and var not in env:
            env[var] = ""
    r = c.run(["sbatch", "--parsable", "--time=5", "--output=" + out,
               "--chdir=" + c.work, JOB_SCRIPT, app("counter"), str(STEPS),
               str(PAUSE_MS)], env=env)
    return r.stdout.strip().split(";")[0]


def interrupt_and_check(c, job, out, ckptdir, continue_job):
    """Near the limit (simulated), the job checkpoints and continues;
    the combined output is an uninterrupted run's."""
    wait_output(out, r"^count 30 ", 30, c, job)
    c.run(["scancel", "--signal=USR1", "--batch", job])
    text = wait_output(out, r"^ckpt_job: (requeued|continued by a "
                       r"dependent job)$", 30, c, job)
    next_job = continue_job(text)
    end = wait_job_ended(c, next_job)
    with open(out) as f:
        text = f.read()
    first, sep, second = text.partition("ckpt_job: continuing from the "
                                        "images in %s" % ckptdir)
    assert sep, "job %s ended (%s) and never continued from its " \
        "images:\n%s\n%s" % (next_job, end, text, c.logs())
    seen = max(numbers(first.split("ckpt_job: time limit near")[0]
                       .splitlines(), PROGRESS))
    before = numbers(first.splitlines(), PROGRESS)
    after = numbers(second.splitlines(), PROGRESS)
    try:
        assert_resumed(before, after, PROGRESS, STEPS, seen)
    except AssertionError as e:
        raise AssertionError("%s\njob output:\n%s" % (e, text)) from None
    ref = reference_output([app("counter"), str(STEPS), str(PAUSE_MS)])
    assert [l for l in second.splitlines() if l.startswith("done ")] == \
        [ref[-1]], text
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
@pytest.mark.parametrize("srun", [False, True], ids=["batch", "srun"])
def test_job_checkpoints_requeues_and_continues(cluster, srun):
    c = cluster
    out, ckptdir = (os.path.join(c.work, "job.out"),
                    os.path.join(c.work, "ckpt"))
    job = submit(c, out, ckptdir, {"CKPT_SRUN": "1" if srun else "0"})
    text = interrupt_and_check(c, job, out, ckptdir, requeued(c, job))
    state, _ = c.job_state(job)
    assert state == "COMPLETED", text
    assert "ckpt_job: done (exit 0)" in text.splitlines()[-1] or \
        "ckpt_job: done (exit 0)" in text, text


@pytest.mark.time_limit(120)
def test_job_continues_in_a_dependent_job(cluster):
    c = cluster
    out, ckptdir = (os.path.join(c.work, "job.out"),
                    os.path.join(c.work, "ckpt"))
    job = submit(c, out, ckptdir, {"CKPT_CONTINUE": "dependent"})

    def continue_job(text):
        m = re.search(r"^Submitted batch job (\d+)$", text, re.M)
        assert m, text
        return m.group(1)

    text = interrupt_and_check(c, job, out, ckptdir, continue_job)
    # both parts end well: the first once its checkpoint is taken
    assert text.count("ckpt_job: done (exit 0)") == 2, text
    assert c.job_state(job)[0] == "COMPLETED"
