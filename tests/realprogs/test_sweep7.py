# SPDX-License-Identifier: LGPL-2.1-or-later
"""Third sweep of Debian programs (docs/real-programs.md, "third sweep"):
each run natively, then under ckpt through two checkpoint -> kill ->
restart cycles (realprogs/driver.py), the output compared: nginx (master
and two workers) and lighttpd serving a curl loop, ruby (threads, fork,
IO.pipe, Queue), openssl s_server/s_client (TLS over loopback), bash
(coproc, wait -n, process substitution, set -m), GNU parallel, python3's
ProcessPoolExecutor over shared_memory, sqlite3 in WAL mode with two
writers, a Go program (goroutines, time.Ticker, net/http). And what the
sweep found: deleted files (empty, O_TMPFILE, held by two processes), a
process that changed its user, a connection in a listener's backlog."""

import os
import subprocess
import sys
import time

import pytest

from realprogs.driver import (WORK_ROOT, Program, check_program, hash_tree,
                              require)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "security"))
from ckpt_wire import free_port  # noqa: E402

PYTHON = "/usr/bin/python3"


def write(work, name, text, mode=0o644):
    path = os.path.join(work, name)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


def last_line_is(run, text):
    return run.stdout_lines()[-1:] == [text]


class EndsWithDone(Program):
    """A program that prints "done" last, on a loopback port of its own
    (the same for every run). The files of its work directory are
    compared with the native run's unless compare_files is False; those
    matching a regex of files_skip never are."""
    compare_files = True
    files_skip = ()

    def __init__(self):
        self.port = free_port()

    def finished(self, run):
        return last_line_is(run, "done")

    def files(self, work):
        if not self.compare_files:
            return {}
        return hash_tree(work, skip=self.files_skip)


class Scripted(EndsWithDone):
    """A bash script (script) run from the work directory with the port
    as its argument."""
    script = None

    def setup(self, work):
        write(work, "run.sh", self.script, 0o755)

    def argv(self, run):
        return ["/bin/bash", "./run.sh", str(self.port)]


# ----- nginx: master + two workers, a curl loop in the same computation --

NGINX_CONF = """
daemon off;
master_process on;
%(user)s
worker_processes 2;
pid %(work)s/nginx.pid;
error_log %(work)s/error.log warn;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path %(work)s/tmp;
    proxy_temp_path %(work)s/tmp;
    fastcgi_temp_path %(work)s/tmp;
    uwsgi_temp_path %(work)s/tmp;
    scgi_temp_path %(work)s/tmp;
    server {
        listen 127.0.0.1:%(port)d;
        root %(work)s/www;
    }
}
"""

# Once the server answers: 120 fetches of the 40 files, an md5 each.
CURL_LOOP = r"""
for t in $(seq 1 100); do curl -s -o /dev/null "http://127.0.0.1:$port/f1" && break; sleep 0.1; done
# no retry: a connection waiting in the listener's queue at the
# checkpoint (the driver checkpoints right after a line printed before a
# curl: often) is saved and accepted after the restart
# (libckpt-preload/accept_queue.c); before, it was lost (curl: Empty
# reply from server)
retry=
for r in 1 2 3; do
  for i in $(seq 1 40); do
    printf 'round %d f%d ' $r $i
    curl -s --max-time 20 $retry "http://127.0.0.1:$port/f$i" | md5sum
    sleep 0.05
  done
done
"""

NGINX_SCRIPT = r"""
set -u
port=$1
mkdir -p www tmp
for i in $(seq 1 40); do head -c $((i * 5000)) /dev/zero | tr '\0' x > www/f$i; done
user=; [ "$(id -u)" = 0 ] && user='user root root;'
sed "s|%(work)s|$PWD|g; s|%(port)d|$port|g; s|%(user)s|$user|" nginx.conf.in > nginx.conf
/usr/sbin/nginx -p "$PWD" -c "$PWD/nginx.conf" -e "$PWD/error.log" &
ngx=$!
""" + CURL_LOOP + r"""kill -QUIT $ngx
wait $ngx
echo "nginx exit $?"
echo done
"""


class Nginx(Scripted):
    name = "nginx"
    script = NGINX_SCRIPT
    files_skip = (r"^error\.log$", r"^nginx\.pid$", r"^tmp/")

    def setup(self, work):
        super().setup(work)
        write(work, "nginx.conf.in", NGINX_CONF)


@pytest.mark.time_limit(300)
def test_nginx_master_workers(session):
    require("/usr/sbin/nginx", "nginx-light")
    require("/usr/bin/curl", "curl")
    check_program(session, Nginx())


# ----- ruby: threads, fork, IO.pipe, Queue -----

RUBY_SCRIPT = r"""
$stdout.sync = true
q = Queue.new
r, w = IO.pipe
kids = 2.times.map do |k|
  fork do
    r.close
    40.times { |i| w.puts "kid#{k} #{i} #{(1..(i + 1) * 1000).sum}"; sleep 0.05 }
    w.close
  end
end
w.close
reader = Thread.new { r.each_line { |l| q << l.chomp }; q << :eof }
workers = 3.times.map do |t|
  Thread.new do
    s = 0
    30.times { |i| s = (s * 31 + i * t) % 1000003; sleep 0.04 }
    s
  end
end
got = []
log = File.open("progress.log", "w")
log.sync = true
loop do
  l = q.pop
  break if l == :eof
  got << l
  log.puts l
end
got.sort.each { |l| puts "got #{l}" }
kids.each { |pid| Process.wait(pid); puts "kid exit #{$?.exitstatus}" }
puts "sums #{workers.map(&:value).join(' ')}"
puts "lines #{got.size} #{got.sort.join.sum}"
puts "done"
"""


class RubyThreadsFork(EndsWithDone):
    name = "ruby-threads-fork"
    compare_files = False

    def setup(self, work):
        write(work, "prog.rb", RUBY_SCRIPT)

    def argv(self, run):
        return ["/usr/bin/ruby", "prog.rb"]

    def progress(self, run):
        return run.read(run.path("progress.log")).count(b"\n")


@pytest.mark.time_limit(300)
def test_ruby_threads_fork_pipe_queue(session):
    require("/usr/bin/ruby", "ruby")
    check_program(session, RubyThreadsFork())


# ----- openssl s_server -rev and s_client: a TLS session over loopback --

OPENSSL_SCRIPT = r"""
set -u
port=$1
openssl s_server -quiet -rev -naccept 1 -accept 127.0.0.1:$port \
  -cert cert.pem -key key.pem > server.out 2> server.err &
srv=$!
for t in $(seq 1 100); do
  ss -ltn 2>/dev/null | grep -q "127.0.0.1:$port " && break; sleep 0.1
done
for i in $(seq 1 120); do echo "line $i of the session"; sleep 0.04; done |
  openssl s_client -quiet -no_ign_eof -connect 127.0.0.1:$port 2> client.err
wait $srv
echo "server exit $?"
echo done
"""


def make_cert(work):
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec",
                    "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-subj", "/CN=localhost", "-days", "2",
                    "-keyout", os.path.join(work, "key.pem"),
                    "-out", os.path.join(work, "cert.pem")],
                   check=True, capture_output=True, timeout=60)


class OpensslTls(Scripted):
    name = "openssl-tls"
    compare_files = False
    script = OPENSSL_SCRIPT

    def setup(self, work):
        super().setup(work)
        make_cert(work)


@pytest.mark.time_limit(300)
def test_openssl_tls_session(session):
    require("/usr/bin/openssl", "openssl")
    check_program(session, OpensslTls())


# ----- bash: coproc, wait -n, process substitution, set -m job control --

BASH_SCRIPT = r"""
set -u
coproc UPPER { while read -r l; do echo "${l^^}"; done; }
upper=$UPPER_PID    # unset by bash once it reaps the coproc
set -m
for r in $(seq 1 30); do
  echo "round $r" >&"${UPPER[1]}"
  read -r got <&"${UPPER[0]}"
  echo "coproc: $got"
  (sleep 0.03; exit $((r % 3))) &
  a=$!
  # ends once the first is reaped: the order of wait -n is fixed
  (while kill -0 $a 2>/dev/null; do sleep 0.01; done; exit 7) &
  wait -n; first=$?
  wait -n; second=$?
  echo "wait -n: $first $second"
  paste -d+ <(seq $r $((r + 2))) <(seq $((r * 10)) $((r * 10 + 2))) | bc | tr '\n' ' '
  echo
  sleep 0.05 &
  job=$!
  jobs -p | grep -qx "$job" && echo "job $r listed"
  wait %%   # (fg on a job that ended first says "job has terminated")
  echo "job $r status $?"
done
exec {UPPER[1]}>&-
wait $upper
echo "coproc exit $?"
echo done
"""


class BashFeatures(Scripted):
    name = "bash-coproc-waitn"
    compare_files = False
    script = BASH_SCRIPT


@pytest.mark.time_limit(300)
@pytest.mark.xfail(strict=False, reason="bash hung in wait -n before any "
                   "checkpoint in 2 of about 100 runs under ckpt (none of 30 "
                   "without); cause not found (docs/real-programs.md, third "
                   "sweep): a known fault, not to fail CI while it is open")
def test_bash_coproc_wait_n_procsubst_jobs(session):
    require("/usr/bin/bc", "bc")
    check_program(session, BashFeatures())



# ----- an empty deleted file open at the checkpoint -----

EMPTY_DELETED = r"""
import os, sys, tempfile, time
d = sys.argv[1]
empty = open(os.path.join(d, "out"), "w+")     # like parallel's output
os.unlink(empty.name)                           # files: open, unlinked
again = os.dup(empty.fileno())                  # and a second fd on it
anon = tempfile.TemporaryFile(dir=d)            # O_TMPFILE, never named
for i in range(60):
    print("step", i, flush=True)
    time.sleep(0.05)
for f in (empty, anon):
    f.write(b"written after the restart\n" if f is anon else
            "written after the restart\n")
    f.flush()
    f.seek(0)
    print(f.read().strip(), os.fstat(f.fileno()).st_nlink)
print("dup offset", os.lseek(again, 0, os.SEEK_CUR))
print("done")
"""


class EmptyDeletedFile(EndsWithDone):
    """GNU parallel keeps each job's output in a file it opens in $TMPDIR
    and unlinks at once; a job that had written nothing yet left an empty
    deleted file open at the checkpoint, and ckpt_restart refused the
    image: `fd 6: saved content lies outside the image's data area`."""
    name = "empty-deleted-file"

    def setup(self, work):
        write(work, "prog.py", EMPTY_DELETED)

    def argv(self, run):
        return [PYTHON, "prog.py", run.tmp]


@pytest.mark.time_limit(120)
def test_empty_deleted_file_restarts(session):
    check_program(session, EmptyDeletedFile())



SHARED_DELETED = r"""
import os, sys, time
d = sys.argv[1]
outs = []
for job in range(2):
    path = os.path.join(d, "job%d.out" % job)
    w = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    r = os.open(path, os.O_RDONLY)      # parallel reads it back later
    os.unlink(path)
    pid = os.fork()
    if pid == 0:
        os.dup2(w, 1)
        for i in range(60):
            print("job", job, "line", i, flush=True)
            time.sleep(0.05)
        os._exit(0)
    os.close(w)
    outs.append((pid, r))
for i in range(70):
    print("waiting", i, flush=True)
    time.sleep(0.05)
for pid, r in outs:
    os.waitpid(pid, 0)
    data = b""
    while True:
        b = os.read(r, 65536)
        if not b:
            break
        data += b
    sys.stdout.write(data.decode())
print("done")
"""


class SharedDeletedFile(EndsWithDone):
    """As GNU parallel does: the parent makes a file, opens it to write
    and to read, unlinks it, and forks a job whose stdout is the write
    end; once the job has ended it reads what the job wrote. Each
    process restored its own copy of the deleted file: the parent read
    nothing the job wrote after the restart (parallel's output lost the
    lines of the jobs running at the checkpoint)."""
    name = "shared-deleted-file"
    progress_kind = "time"
    marks = (1, 1)     # s into the run, then into the restarted run

    def setup(self, work):
        write(work, "prog.py", SHARED_DELETED)

    def argv(self, run):
        return [PYTHON, "prog.py", run.tmp]


@pytest.mark.time_limit(120)
def test_deleted_file_shared_by_processes(session):
    check_program(session, SharedDeletedFile())


# ----- GNU parallel -j2 --keep-order -----

class GnuParallel(EndsWithDone):
    name = "gnu-parallel"

    def argv(self, run):
        return ["/bin/sh", "-c",
                "seq 1 80 | parallel --will-cite -j2 --keep-order "
                "'sleep 0.05; printf \"%s %s\\n\" {} $(echo {} | sha1sum)'"
                " && echo done"]

    def env(self, run):
        return {"HOME": run.work, "TMPDIR": run.tmp}


@pytest.mark.time_limit(300)
def test_gnu_parallel_keep_order(session):
    require("/usr/bin/parallel", "parallel")
    check_program(session, GnuParallel())


# ----- python3: ProcessPoolExecutor over multiprocessing.shared_memory --

SHM_SCRIPT = r"""
import sys, time, hashlib
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import shared_memory

N = 96

def work(args):
    name, i = args
    shm = shared_memory.SharedMemory(name=name)
    h = hashlib.sha256(str(i).encode())
    for _ in range(2000):
        h = hashlib.sha256(h.digest())
    shm.buf[i * 8:(i + 1) * 8] = h.digest()[:8]
    shm.close()
    time.sleep(0.04)
    return i, h.hexdigest()[:16]

if __name__ == "__main__":
    shm = shared_memory.SharedMemory(create=True, size=N * 8)
    try:
        with ProcessPoolExecutor(2) as ex:
            for i, d in ex.map(work, [(shm.name, i) for i in range(N)]):
                print(i, d, flush=True)
        print("table", hashlib.sha256(bytes(shm.buf)).hexdigest())
    finally:
        shm.close()
        shm.unlink()
    print("done")
"""


class PoolSharedMemory(EndsWithDone):
    name = "python-pool-shm"

    def setup(self, work):
        write(work, "prog.py", SHM_SCRIPT)

    def argv(self, run):
        return [PYTHON, "prog.py"]


@pytest.mark.time_limit(300)
def test_python_process_pool_shared_memory(session):
    check_program(session, PoolSharedMemory())


# ----- sqlite3 in WAL mode, two writer processes -----

SQLITE_SCRIPT = r"""
set -u
sqlite3 data.db 'PRAGMA journal_mode=WAL; CREATE TABLE t(w TEXT, i INT);' >/dev/null
writer() {
  for i in $(seq 1 80); do
    echo "INSERT INTO t VALUES('$1', $i);"
    echo "SELECT '$1', $i, count(*) FROM t WHERE w = '$1';"
    sleep 0.03
  done | sqlite3 -cmd '.timeout 10000' data.db > $1.out
}
writer a & writer b &
wait
cat a.out b.out
sqlite3 data.db "SELECT w, count(*), sum(i) FROM t GROUP BY w ORDER BY w;"
sqlite3 data.db "PRAGMA integrity_check;"
echo done
"""


class SqliteWal(Scripted):
    name = "sqlite-wal-2writers"
    compare_files = False
    script = SQLITE_SCRIPT

    def launch_options(self, run):
        return ["--save-files", os.path.join(run.work, "data.db*")]

    def progress(self, run):
        return sum(run.read(run.path(n)).count(b"\n")
                   for n in ("a.out", "b.out"))


@pytest.mark.time_limit(300)
def test_sqlite_wal_two_writers(session):
    require("/usr/bin/sqlite3", "sqlite3")
    check_program(session, SqliteWal())


# ----- Go: goroutines, time.Ticker, net/http on loopback -----

GO_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                         "sweep7_ticker.go")


class GoTicker(EndsWithDone):
    """A Go program built with cgo (dynamically linked: libckpt can be
    preloaded; a static one only gets ckpt_launch's warning): an HTTP
    server and a client polling it on a time.Ticker in one process."""
    name = "go-ticker-http"
    compare_files = False

    def setup(self, work):
        env = dict(os.environ, CGO_ENABLED="1", GOPROXY="off",
                   GOFLAGS="-mod=mod", HOME=work,
                   GOCACHE=os.path.join(WORK_ROOT, "go-cache"),
                   GOPATH=os.path.join(WORK_ROOT, "go-path"))
        subprocess.run(["go", "build", "-o", os.path.join(work, "tickd"),
                        GO_SOURCE], env=env, check=True, timeout=600,
                       capture_output=True)

    def argv(self, run):
        return ["./tickd", str(self.port)]


@pytest.mark.time_limit(600)
def test_go_goroutines_ticker_http(session):
    require("/usr/bin/go", "golang-go")
    check_program(session, GoTicker())


# ----- lighttpd serving static files to a curl loop -----

LIGHTTPD_SCRIPT = r"""
set -u
port=$1
mkdir -p www
for i in $(seq 1 40); do head -c $((i * 7000)) /dev/zero | tr '\0' y > www/f$i; done
cat > lighttpd.conf <<CONF
server.document-root = "$PWD/www"
server.port = $port
server.bind = "127.0.0.1"
server.errorlog = "$PWD/error.log"
server.max-keep-alive-requests = 4
CONF
/usr/sbin/lighttpd -D -f lighttpd.conf &
srv=$!
""" + CURL_LOOP + r"""kill $srv
wait $srv
echo "lighttpd exit $?"
echo done
"""


class Lighttpd(Scripted):
    name = "lighttpd"
    script = LIGHTTPD_SCRIPT
    files_skip = (r"^error\.log$",)


@pytest.mark.time_limit(300)
@pytest.mark.skipif(not os.environ.get("CKPT_HEAVY_TESTS"),
                    reason="heavy: nginx covers a server with a curl loop; "
                    "set CKPT_HEAVY_TESTS=1")
def test_lighttpd_curl_loop(session):
    require("/usr/sbin/lighttpd", "lighttpd")
    require("/usr/bin/curl", "curl")
    check_program(session, Lighttpd())


# ----- a connection in a listener's backlog at the checkpoint -----

BACKLOG = r"""
import os, socket, sys, time
ls = socket.socket()
ls.bind(("127.0.0.1", int(sys.argv[1])))
ls.listen(8)
pid = os.fork()
if pid == 0:
    if len(sys.argv) < 3:       # else the listener stays shared
        ls.close()
    c = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    c.sendall(b"request\n")
    print("client sent", flush=True)
    print("client got %r" % c.recv(100), flush=True)
    os._exit(0)
for i in range(40):            # busy: the connection waits to be accepted
    time.sleep(0.05)
ls.settimeout(10)               # bounded: a lost connection never comes
s, _ = ls.accept()
req = s.recv(100)
s.sendall(b"reply to " + req)
os.waitpid(pid, 0)
print("server got %r" % req, flush=True)
print("done")
"""


class Backlog(EndsWithDone):
    """Both ends in the computation, the server's end still in the
    listener's backlog at the checkpoint (nginx and lighttpd with a
    curl of the computation hit it often), both times: 1 s into the run
    and 0.3 s after the first restart, before the server accepts. The
    server accepts it after each restart and the client gets the reply
    (libckpt-preload/accept_queue.c, restart/restart_tcp.c); lost before
    (the client read b'', the server never got it)."""
    name = "tcp-backlog"
    progress_kind = "time"
    marks = (1, 0.3)
    shared = False

    def setup(self, work):
        write(work, "prog.py", BACKLOG)

    def argv(self, run):
        return [PYTHON, "prog.py", str(self.port)] + \
            (["shared"] if self.shared else [])


class BacklogOfSharedListener(Backlog):
    """The client keeps its copy of the listener: either process may take
    the waiting connection at the checkpoint (the one that claims it),
    the server accepts it."""
    name = "tcp-backlog-shared"
    shared = True


@pytest.mark.time_limit(200)
def test_connection_in_backlog_at_checkpoint(session):
    check_program(session, Backlog())


@pytest.mark.time_limit(200)
def test_connection_in_backlog_of_shared_listener(session):
    check_program(session, BacklogOfSharedListener())


# ----- a process that changes its user after the launch -----

DROPS_USER = r"""
import ctypes, os, time
pid = os.fork()
if pid == 0:
    os.setgid(65534)
    os.setuid(65534)    # as nginx's workers do when started as root,
    ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # and PR_SET_DUMPABLE again
for i in range(600):
    time.sleep(0.05)
"""


@pytest.mark.time_limit(120)
def test_checkpoint_of_process_that_changed_user_says_why(session):
    """nginx started as root runs its workers as nobody; their checkpoint
    failed with only `checkpoint directory DIR: Permission denied`. The
    answer now says the process changed its user, which ckpt cannot
    checkpoint (restart never changes credentials: docs/security.md)."""
    if os.geteuid() != 0:
        pytest.skip("needs root, to change user")
    p = session.launch([PYTHON, "-c", DROPS_USER], name="drops user")
    time.sleep(1.5)     # the child has changed its user
    r = session.command("--checkpoint")
    assert r.returncode != 0, "the checkpoint of a process running as " \
        "nobody into root's directory succeeded: %r" % r.stdout
    assert "changed its user after the launch" in r.stderr, r.stderr
    assert p.alive(), "the computation ended: %s" % p.stderr_text()
    session.kill_all()
