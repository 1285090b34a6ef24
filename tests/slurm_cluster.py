# SPDX-License-Identifier: LGPL-2.1-or-later
"""A one-node Slurm on localhost for tests/test_slurm.py: its own munge
key and socket, slurm.conf, state and spool directories, all in a
temporary directory; slurmctld and slurmd as root (SlurmUser=root), on
two free ports. Every command the tests run gets SLURM_CONF in its
environment, and so does every process Slurm starts for them: close()
finds those by that variable (each one's /proc/PID/environ) and kills
them by pid, with the daemons, even when the test failed.

Needs root and Debian's slurm-wlm and munge; Cluster.skip_reason() says
why not.
"""

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

from ckpt_harness import run

START_TIMEOUT = 30      # munged, slurmctld and slurmd up, the node idle
# Job credentials' lifetime (default 120 s): a requeued job waits this
# long before it may start again, as its old credential must expire first
# (starting it sooner gets "Job credential revoked").
CRED_EXPIRE_S = 5
DAEMONS = ("munged", "mungekey", "slurmctld", "slurmd", "sbatch", "srun",
           "scontrol", "squeue", "scancel", "sinfo")

SLURM_CONF = """\
ClusterName=ckpttest
SlurmctldHost={host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
AuthType=auth/munge
AuthInfo=socket={dir}/munge/sock,cred_expire={cred_expire}
CredType=cred/munge
StateSaveLocation={dir}/state
SlurmdSpoolDir={dir}/spool
SlurmctldPidFile={dir}/slurmctld.pid
SlurmdPidFile={dir}/slurmd.pid
SlurmctldLogFile={dir}/log/slurmctld.log
SlurmdLogFile={dir}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SchedulerParameters=sched_interval=1
SelectType=select/linear
MpiDefault=none
ReturnToService=2
JobRequeue=1
KillWait=2
MinJobAge=300
InactiveLimit=0
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN
PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    @staticmethod
    def skip_reason():
        if os.geteuid() != 0:
            return "a test Slurm runs its daemons as root"
        missing = [d for d in DAEMONS if not shutil.which(d)]
        if missing:
            return ("Slurm not installed (apt-get install slurm-wlm "
                    "munge): no %s" % ", ".join(missing))
        return None

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="ckpt-slurm-", dir="/tmp")
        self.host = socket.gethostname()
        self.conf = os.path.join(self.dir, "slurm.conf")
        self.env = dict(os.environ, SLURM_CONF=self.conf)
        self.daemons = []
        try:
            self._configure()
            self._start()
        except BaseException:
            self.close()
            raise

    def path(self, *names):
        return os.path.join(self.dir, *names)

    def _configure(self):
        for d in ("state", "spool", "log", "munge", "munge-key"):
            os.mkdir(self.path(d), 0o755)
        os.chmod(self.path("munge-key"), 0o700)
        with open(self.conf, "w") as f:
            f.write(SLURM_CONF.format(
                host=self.host, dir=self.dir, ctld_port=free_port(),
                d_port=free_port(), cpus=os.cpu_count() or 1,
                cred_expire=CRED_EXPIRE_S))

    def _daemon(self, argv, name):
        log = open(self.path("log", name + ".out"), "w")
        p = subprocess.Popen(argv, env=self.env, stdout=log,
                             stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL)
        log.close()
        self.daemons.append(p)
        return p

    def _start(self):
        key = self.path("munge-key", "munge.key")
        r = run(["mungekey", "--create", "--keyfile=" + key], 30)
        assert r.returncode == 0, "mungekey: %s" % r.stderr
        self._daemon(["munged", "--foreground", "--force",
                      "--socket=" + self.path("munge", "sock"),
                      "--key-file=" + key,
                      "--pid-file=" + self.path("munge", "pid"),
                      "--seed-file=" + self.path("munge", "seed"),
                      "--log-file=" + self.path("log", "munged.log")],
                     "munged")
        self.wait_for(lambda: os.path.exists(self.path("munge", "sock")),
                      "munged's socket")
        self._daemon(["slurmctld", "-D", "-i"], "slurmctld")
        self._daemon(["slurmd", "-D"], "slurmd")
        self.wait_for(self._node_idle, "the node %s idle in sinfo" %
                      self.host)

    def _node_idle(self):
        r = self.run(["sinfo", "-h", "-o", "%T"], check=False)
        return r.returncode == 0 and r.stdout.strip() == "idle"

    def wait_for(self, pred, what, timeout=START_TIMEOUT):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for p in self.daemons:
                assert p.poll() is None, "%s exited (%s): %s" % (
                    p.args[0], p.returncode, self.logs())
            if pred():
                return
            time.sleep(0.2)
        raise AssertionError("no %s after %d s: %s" % (what, timeout,
                                                       self.logs()))

    def logs(self):
        text = []
        for name in sorted(os.listdir(self.path("log"))):
            with open(self.path("log", name), errors="replace") as f:
                text.append("--- %s\n%s" % (name, f.read()[-2000:]))
        return "\n".join(text)

    def run(self, argv, timeout=30, check=True, env=None):
        r = run(argv, timeout, env=dict(self.env, **(env or {})))
        if check:
            assert r.returncode == 0, "%s: exit %d: %s" % (
                " ".join(argv), r.returncode, r.stderr.strip())
        return r

    def job_state(self, job):
        """JobState and Reason of a job (scontrol show job)."""
        r = self.run(["scontrol", "-o", "show", "job", str(job)])
        fields = dict(f.split("=", 1) for f in r.stdout.split()
                      if "=" in f)
        return fields.get("JobState"), fields.get("Reason")

    def ours(self):
        """Pids of the processes carrying our SLURM_CONF: the daemons'
        children, slurmstepd and every process of the jobs."""
        mark = ("SLURM_CONF=" + self.conf).encode() + b"\0"
        pids = []
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) == os.getpid():
                continue
            try:
                with open("/proc/%s/environ" % name, "rb") as f:
                    if mark in f.read() + b"\0":
                        pids.append(int(name))
            except OSError:
                pass
        return pids

    def close(self):
        for p in self.daemons:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.daemons:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(10)
        for _ in range(3):
            pids = self.ours()
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            if not pids:
                break
            time.sleep(0.2)
        shutil.rmtree(self.dir, ignore_errors=True)
