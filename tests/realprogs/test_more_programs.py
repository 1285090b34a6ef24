# SPDX-License-Identifier: LGPL-2.1-or-later
"""More Debian programs beyond the required list: gzip and zstd (two
threads) in one pipeline, tar -J (tar runs xz as its child), mawk over a
generated table, the sqlite3 command-line shell on a file database, and
python3's multiprocessing.Pool (forked workers, pipes between them)."""

import os
import subprocess

import pytest

from realprogs.driver import Program, check_program, require
from realprogs.test_xz_pipeline import GENERATOR
from test_multiprocessing import SCRIPT as POOL_SCRIPT

PYTHON = "/usr/bin/python3"


def write_generator(work):
    with open(os.path.join(work, "gen.py"), "w") as f:
        f.write(GENERATOR)


def generate(work, name, chunks, lines):
    with open(os.path.join(work, name), "wb") as out:
        subprocess.run([PYTHON, os.path.join(work, "gen.py"), str(chunks),
                        str(lines)], stdout=out, stderr=subprocess.DEVNULL,
                       check=True, timeout=300)


def done_once_stdout(run):
    return bool(run.stdout_lines())


class GzipZstd(Program):
    name = "gzip-zstd-pipeline"

    def setup(self, work):
        write_generator(work)

    def argv(self, run):
        return ["/bin/sh", "-c",
                "%s -u gen.py 100 12000 2>gen.log | gzip -9 | zstd -q -3 -T2 "
                "| tee data.gz.zst | zstd -q -d | gzip -d | sha256sum" % PYTHON]

    def progress(self, run):
        return run.read(run.path("gen.log")).count(b"\n")

    finished = staticmethod(done_once_stdout)


class TarXz(Program):
    name = "tar-J"
    progress_kind = "time"
    marks = (0.2, 0.2)

    def setup(self, work):
        write_generator(work)
        os.mkdir(os.path.join(work, "input"))
        for i in range(8):
            generate(work, "input/part%d.txt" % i, 10, 3000)

    def argv(self, run):
        return ["tar", "--sort=name", "--mtime=@0", "--owner=0", "--group=0",
                "--numeric-owner", "-cJf", "input.tar.xz", "input"]

    def finished(self, run):
        return False    # tar writes its archive as it goes


AWK_SCRIPT = r"""
{ n[$2]++; s[$2] += $4; if ($4 > max[$3]) max[$3] = $4
  key = $2 "-" $3 "-" ($4 % 50); pairs[key] += $4 % 97
  w = toupper(substr($2, 2) $3); if (w ~ /[AEIOU][^AEIOU]+$/) vow[length(w)]++
  h = (h * 31 + $4 + length(w)) % 1000003 }
NR % 15000 == 0 { printf "step %d %d %d\n", NR / 15000, length(pairs), h }
END { for (w in n) printf "%s %d %d %d\n", w, n[w], s[w], max[w] | "sort"
      close("sort"); t = 0; for (k in pairs) t += pairs[k]; print "final", t, h }
"""


class Mawk(Program):
    name = "mawk"
    progress_kind = "time"
    marks = (0.2, 0.2)

    def setup(self, work):
        write_generator(work)
        generate(work, "table.txt", 100, 15000)

    def argv(self, run):
        return ["mawk", AWK_SCRIPT, "table.txt"]

    def finished(self, run):
        return any(l.startswith("final ") for l in run.stdout_lines())


SQL = """
create table t(id integer primary key, k text, v integer);
create index t_k on t(k);
""" + "".join("""
begin;
insert into t(k, v) select 'k' || (x * 7919 %% 997), x * %d %% 100003
  from (with recursive c(x) as (select 1 union all select x + 1 from c
        where x < 10000) select x from c);
update t set v = v + 1 where k = 'k%d';
delete from t where id %% 11 = %d;
commit;
select %d, count(*), sum(v) from t;
""" % (i + 3, i % 997, i % 11, i) for i in range(30)) + """
select k, count(*), sum(v) from t group by k order by k limit 5;
"""


class Sqlite3Cli(Program):
    name = "sqlite3-cli"
    progress_kind = "time"
    marks = (0.2, 0.2)

    def setup(self, work):
        with open(os.path.join(work, "script.sql"), "w") as f:
            f.write(SQL)

    def argv(self, run):
        return ["sqlite3", "-bail", "data.db", ".read script.sql"]

    def launch_options(self, run):
        return ["--save-files", os.path.join(run.work, "data.db*")]

    def finished(self, run):
        return len(run.stdout_lines()) >= 35


class PythonPool(Program):
    name = "python3-multiprocessing"

    def argv(self, run):
        return [PYTHON, "-c", POOL_SCRIPT, "200"]

    def finished(self, run):
        return any(l.startswith("final ") for l in run.stdout_lines())


PROGRAMS = [(GzipZstd, "/usr/bin/zstd", "zstd"),
            (TarXz, "/usr/bin/xz", "xz-utils"),
            (Mawk, "/usr/bin/mawk", "mawk"),
            (Sqlite3Cli, "/usr/bin/sqlite3", "sqlite3"),
            (PythonPool, PYTHON, "python3")]


@pytest.mark.time_limit(600)
@pytest.mark.parametrize("cls,path,package", PROGRAMS,
                         ids=[p[0].name for p in PROGRAMS])
def test_more_programs(session, cls, path, package):
    require(path, package)
    check_program(session, cls())
