# SPDX-License-Identifier: LGPL-2.1-or-later
"""Servers that never end by themselves, checkpointed while they serve,
killed, restarted from their images and then used from outside the
computation as before (docs/resources.md):

- tmux: a server on its own socket with a session whose job counts;
  after each of two restarts `tmux ls` lists the session and `capture-pane` shows
  the job counting on from where it was (its pty is the computation's
  own: "Pseudo-terminals");
- postgres (initdb in a temporary directory, Unix socket only, run as
  nobody when the tests run as root: it refuses root): rows inserted by
  psql before the checkpoint are found after the restart, more are
  inserted, found after a second checkpoint and restart, the server
  shuts down cleanly and its log holds no ERROR/FATAL/PANIC after the
  restarts;
- redis-server: 100,000 keys loaded by redis-cli, and a redis-cli of
  the computation incrementing a counter over TCP: after the restart the
  client goes on with every increment once, in order, the counter is
  exact, every key is there (DBSIZE), read and written by a new
  redis-cli.
"""

import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

import ckpt_harness
from ckpt_harness import COMMAND_TIMEOUT, assert_resumed, numbers, run
from realprogs.driver import clean_env, require

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "security"))
from ckpt_wire import free_port  # noqa: E402

POLL = 0.1
SERVE_TIMEOUT = 60


def wait_until(what, probe, timeout=SERVE_TIMEOUT, proc=None):
    """Call probe() until it returns a true value (returned); bounded."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = probe()
        if last and not isinstance(last, Exception):
            return last
        if proc is not None and not proc.alive():
            break
        time.sleep(POLL)
    raise AssertionError("%s: not within %d s (last: %r)%s" % (
        what, timeout, last, "" if proc is None else
        "; %s exit %s, stderr:\n%s" % (proc.name, proc.popen.poll(),
                                       proc.stderr_text()[-3000:])))


def checkpoint(session, proc=None):
    """ckpt_command --checkpoint; the image paths. proc: the launched
    process, if it is to stay alive (a daemon's launcher has exited)."""
    r = session.command("--checkpoint")
    assert r.returncode == 0, "ckpt_command --checkpoint: exit %d: %s" % (
        r.returncode, r.stderr)
    images = r.stdout.split()
    assert images, "the checkpoint printed no image"
    if r.stderr.strip():
        print("ckpt_command --checkpoint said: %s" % r.stderr.strip())
    assert proc is None or proc.alive(), "%s ended during the " \
        "checkpoint: %s" % (proc.name, proc.stderr_text()[-3000:])
    return images


def kill(session, proc=None):
    session.kill_all()
    if proc is None:
        return
    try:
        proc.popen.wait(30)
    except subprocess.TimeoutExpired:
        raise AssertionError("%s still runs 30 s after --kill" % proc.name)


# ----- tmux -----

JOB = 'i=0; while :; do i=$((i+1)); echo "count $i"; sleep 0.2; done\n'


def tmux(sock, *args):
    return run(["tmux", "-S", sock] + list(args), COMMAND_TIMEOUT,
               env=clean_env({"TERM": "xterm"}))


def pane_counts(sock):
    r = tmux(sock, "capture-pane", "-p")
    if r.returncode:
        return []
    return [int(m.group(1)) for m in re.finditer(r"^count (\d+)$",
                                                  r.stdout, re.M)]


def tmux_cycle(session, sock, running, cycle):
    """Checkpoint the tmux server while its job counts, kill, restart:
    the session is listed and the job counts on. Returns the restart."""
    seen = max(pane_counts(sock))
    images = checkpoint(session)
    assert len(images) >= 2, "tmux and its shell: %r" % images
    killed_at = max(pane_counts(sock), default=seen)
    kill(session, running)
    assert tmux(sock, "ls").returncode != 0, "tmux outlived the kill"

    r = session.restart(images, name="restart %d of tmux" % cycle)
    listed = wait_until("tmux ls lists the session after restart %d" % cycle,
                        lambda: tmux(sock, "ls").returncode == 0 and
                        tmux(sock, "ls").stdout, proc=r)
    assert listed.startswith("0: 1 windows"), listed
    wait_until("the job counts on after restart %d" % cycle,
               lambda: max(pane_counts(sock), default=0) >= seen + 10,
               proc=r)
    counts = pane_counts(sock)
    print("cycle %d: checkpoint after %d, killed at %d, pane now %r; "
          "ckpt_restart said: %s" % (cycle, seen, killed_at, counts,
                                     r.stderr_text()))
    assert counts == sorted(set(counts)), (
        "the job started over after restart %d: %r" % (cycle, counts))
    # the pane shows the screen saved at the checkpoint, then the job's
    # lines from there on; only a line still inside the pty at the
    # checkpoint may be missing (docs/resources.md)
    assert counts[0] <= seen, counts
    missing = counts[-1] - counts[0] + 1 - len(counts)
    assert missing <= 1, "lines lost after restart %d: %r" % (cycle, counts)
    return r


@pytest.mark.time_limit(300)
def test_tmux_session_keeps_counting(session):
    require(shutil.which("tmux") or "/usr/bin/tmux", "tmux")
    sock = session.path("tmux.sock")
    job = session.path("job.sh")
    with open(job, "w") as f:
        f.write(JOB)
    env = dict(session.env)
    env.update(clean_env({"TERM": "xterm"}))
    env["CKPT_COORD"], env["CKPT_DIR"] = session.coord, session.ckptdir
    client = ckpt_harness.Proc(
        [session.tool("ckpt_launch"), "--", "tmux", "-S", sock, "-f",
         "/dev/null", "new-session", "-d", "-x", "80", "-y", "24",
         "sh " + job], env, "ckpt_launch tmux new-session")
    session.procs.append(client)
    assert client.wait_exit(COMMAND_TIMEOUT) == 0, client.stderr_text()
    try:
        wait_until("the job counts to 10 in the tmux pane",
                   lambda: max(pane_counts(sock), default=0) >= 10)
        running = None      # the launcher exited: tmux is a daemon
        for cycle in (1, 2):
            running = tmux_cycle(session, sock, running, cycle)
    finally:
        tmux(sock, "kill-server")


# ----- postgres -----

def pg_bin(name):
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/" + name))
    return found[-1] if found else "/usr/lib/postgresql/15/bin/" + name


@pytest.fixture
def pg_session():
    """postgres refuses to run as root: the session runs as nobody."""
    if os.geteuid() == 0 and not shutil.which("setpriv"):
        pytest.skip("setpriv (util-linux) is needed to drop root")
    s, _ = ckpt_harness.unprivileged_session()
    try:
        yield s
    finally:
        s.close()


def psql(sockdir, sql):
    return run(["psql", "-X", "-h", sockdir, "-U", "postgres", "-d",
                "postgres", "-v", "ON_ERROR_STOP=1", "-Atc", sql],
               COMMAND_TIMEOUT, env=clean_env({}))


def log_problems(lines):
    """Errors, and failures logged as LOG (shmdt of the segment at
    shutdown: "shmdt(0x...) failed: Invalid argument")."""
    return [l for l in lines if re.search(r"\b(ERROR|FATAL|PANIC):", l) or
            re.search(r"\) failed: ", l)]


def client_backends(postmaster):
    """The pids of postmaster's children serving a client connection
    (process title "postgres: USER DB [local] ...")."""
    found = []
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(stat) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(stat[:-4] + "cmdline", "rb") as f:
                title = f.read()
        except (OSError, ValueError, IndexError):
            continue
        if ppid == postmaster and b"[local]" in title:
            found.append(int(stat.split("/")[2]))
    return found


def wait_client_backends_gone(postmaster, timeout=COMMAND_TIMEOUT):
    """psql exits once it sent its Terminate message; the backend that
    served it ends a moment later, which under load can be after a
    shutdown signal sent at once: then postgres logs FATAL "terminating
    connection due to administrator command" for it, as it would
    natively."""
    deadline = time.time() + timeout
    while client_backends(postmaster) and time.time() < deadline:
        time.sleep(0.05)
    assert not client_backends(postmaster), "client backends still " \
        "running %ds after the last psql: %r" % (
            timeout, client_backends(postmaster))


PARALLEL = ("SET max_parallel_workers_per_gather = 2; "
            "SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; "
            "SET min_parallel_table_scan_size = 0; ")


@pytest.mark.time_limit(300)
def test_postgres_rows_survive(pg_session):
    s = pg_session
    require(pg_bin("postgres"), "postgresql")
    require(shutil.which("psql") or "/usr/bin/psql", "postgresql-client")
    data, sockdir = s.path("pgdata"), s.path("pgsock")
    os.mkdir(sockdir)
    if s.run_as is not None:
        os.chown(sockdir, s.run_as, s.run_as)
    init = run(s._argv([pg_bin("initdb"), "-D", data, "-A", "trust", "-U",
                        "postgres", "--no-sync"]), COMMAND_TIMEOUT,
               env=clean_env({}))
    assert init.returncode == 0, "initdb: %s%s" % (init.stdout, init.stderr)
    p = s.launch([pg_bin("postgres"), "-D", data, "-k", sockdir, "-c",
                  "listen_addresses=", "-c", "fsync=off"], name="postgres")
    p.err.wait_for(lambda ls: any("ready to accept connections" in l
                                  for l in ls), SERVE_TIMEOUT,
                   "postgres ready")
    r = psql(sockdir, "CREATE TABLE t (i int PRIMARY KEY, v text); "
             "INSERT INTO t SELECT g, 'row ' || g FROM "
             "generate_series(1, 1000) g")
    assert r.returncode == 0, r.stderr

    images = checkpoint(s, p)
    assert len(images) >= 2, "the postmaster and its workers: %r" % images
    kill(s, p)
    assert psql(sockdir, "SELECT 1").returncode != 0, \
        "postgres outlived the kill"

    rs = s.restart(images, name="restarted postgres")
    count = wait_until("psql connects after the restart", lambda: (
        psql(sockdir, "SELECT count(*), sum(i) FROM t").stdout.strip()),
        proc=rs)
    assert count == "1000|500500", count
    r = psql(sockdir, "INSERT INTO t SELECT g, 'row ' || g FROM "
             "generate_series(1001, 2000) g; SELECT count(*) FROM t")
    assert r.returncode == 0 and r.stdout.split()[-1:] == ["2000"], (
        r.stdout, r.stderr)
    log = rs.err.snapshot()

    # once more, from the restarted server's images
    images = checkpoint(s, rs)
    kill(s, rs)
    rs = s.restart(images, name="postgres restarted twice")
    count = wait_until("psql connects after the second restart", lambda: (
        psql(sockdir, "SELECT count(*), sum(i) FROM t").stdout.strip()),
        proc=rs)
    assert count == "2000|2001000", count
    r = psql(sockdir, "SELECT v FROM t WHERE i = 1500")
    assert r.stdout.strip() == "row 1500", (r.stdout, r.stderr)
    # a parallel query: the restored postmaster forks background workers
    # that attach the dynamic shared memory and answer through it
    r = psql(sockdir, PARALLEL + "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, "
             "SUMMARY OFF) SELECT count(*), sum(i) FROM t")
    assert "Workers Launched: 2" in r.stdout, (r.stdout, r.stderr)
    r = psql(sockdir, PARALLEL + "SELECT count(*), sum(i) FROM t")
    assert r.stdout.split()[-1:] == ["2000|2001000"], (r.stdout, r.stderr)

    # a fast shutdown, as pg_ctl -m fast would ask it (pg_ctl itself
    # would signal the pid in postmaster.pid, the original process's),
    # once no client connection is left
    wait_client_backends_gone(rs.pid)
    os.kill(rs.pid, signal.SIGINT)
    status = rs.wait_exit(COMMAND_TIMEOUT)
    log += rs.err.snapshot()
    print("\n".join(log[-20:]))
    assert status == 0, "postgres exit %d after SIGINT" % status
    assert any("database system is shut down" in l for l in log), log[-10:]
    assert not log_problems(log), "the log after the restart: %r" % (
        log_problems(log))


# ----- redis -----

KEYS = 100000
INCRS = 400
REPLY = r"^(\d+)$"


@pytest.mark.time_limit(300)
def test_redis_keys_survive(session):
    require(shutil.which("redis-server") or "/usr/bin/redis-server",
            "redis-server")
    require(shutil.which("redis-cli") or "/usr/bin/redis-cli",
            "redis-tools")
    port = str(free_port())

    def cli(*args, stdin=None):
        argv = ["redis-cli", "-h", "127.0.0.1", "-p", port] + list(args)
        try:
            return subprocess.run(argv, input=stdin, capture_output=True,
                                  timeout=COMMAND_TIMEOUT,
                                  env=clean_env({}))
        except subprocess.TimeoutExpired:
            raise AssertionError("%s did not finish" % " ".join(argv))

    p = session.launch(["redis-server", "--port", port, "--bind",
                        "127.0.0.1", "--save", "", "--appendonly", "no",
                        "--dir", session.dir], name="redis-server")
    p.wait_line("Ready to accept connections", timeout=SERVE_TIMEOUT)
    load = "".join("SET key:%d value:%d\r\n" % (i, i * 7)
                   for i in range(1, KEYS + 1)).encode()
    r = cli("--pipe", stdin=load)
    assert r.returncode == 0 and b"errors: 0" in r.stdout, r.stdout
    assert cli("DBSIZE").stdout.split() == [str(KEYS).encode()]

    # a client of the computation increments a counter over TCP
    client = session.launch(["redis-cli", "-h", "127.0.0.1", "-p", port,
                             "-i", "0.02", "-r", str(INCRS), "INCR",
                             "counter"], name="redis-cli INCR")
    client.wait_line(REPLY, minimum=30)
    seen = max(numbers(client.lines(), REPLY))

    images = checkpoint(session, p)
    assert len(images) == 2, "redis-server and redis-cli: %r" % images
    kill(session, p)
    client.wait_exit(30)
    before = numbers(client.lines(), REPLY)
    assert cli("PING").stdout.strip() != b"PONG", "redis outlived the kill"

    # both images, one ckpt_restart: the client's connection is made
    # again between the restored processes
    rs = session.restart(images, name="restarted redis-server and client")
    wait_until("redis answers PING after the restart",
               lambda: cli("PING").stdout.strip() == b"PONG", proc=rs)
    for i in (1, 4242, KEYS):
        got = cli("GET", "key:%d" % i).stdout.strip()
        assert got == b"value:%d" % (i * 7), (i, got)
    rs.wait_line(REPLY, minimum=INCRS)
    after = numbers(rs.lines(), REPLY)
    # every INCR once, its reply read once, in order
    assert_resumed(before, after, REPLY, INCRS, seen)
    assert cli("GET", "counter").stdout.strip() == str(INCRS).encode()
    assert cli("DBSIZE").stdout.split() == [str(KEYS + 1).encode()]
    assert cli("SET", "after", "restart").stdout.strip() == b"OK"
    assert cli("DBSIZE").stdout.split() == [str(KEYS + 2).encode()]
    cli("SHUTDOWN", "NOSAVE")
    assert rs.wait_exit(COMMAND_TIMEOUT) == 0, rs.stderr_text()[-3000:]
