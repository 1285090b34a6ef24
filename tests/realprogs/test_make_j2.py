# SPDX-License-Identifier: LGPL-2.1-or-later
"""make -j2 building a generated project of 100 C files with gcc -O2
and running the program it links: make's children, gcc's drivers and
their cc1/as come and go all the time (posix_spawn, fork), so both
checkpoints catch compilers mid-file and the second one children started
after the first restart."""

import glob
import os

import pytest

from realprogs.driver import Program, check_program, hash_tree, require

FILES = 100


def write_project(d):
    for i in range(FILES):
        body = ["unsigned long f%d(unsigned long x)\n{" % i]
        for k in range(4):
            body.append("\tx = x * %dUL + %d; x ^= x >> %d;" % (
                2 * k + 3 + i, 7 * k + i, k % 29 + 1))
            body.append("\tif (x %% %d == %d)\n\t\tx += %d;" % (
                k + 5, k % 3, k * k + i))
        body.append("\treturn x;\n}\n")
        with open(os.path.join(d, "f%03d.c" % i), "w") as f:
            f.write("\n".join(body))
    decls = "".join("unsigned long f%d(unsigned long);\n" % i
                    for i in range(FILES))
    calls = "".join("\tx = f%d(x);\n" % i for i in range(FILES))
    with open(os.path.join(d, "main.c"), "w") as f:
        f.write('#include <stdio.h>\n%s\nint main(void)\n{\n'
                '\tunsigned long x = 1;\n\n%s\tprintf("result %%lu\\n", x);'
                '\n\treturn 0;\n}\n' % (decls, calls))
    objs = " ".join(["f%03d.o" % i for i in range(FILES)] + ["main.o"])
    with open(os.path.join(d, "Makefile"), "w") as f:
        f.write("CFLAGS = -O2\nOBJS = %s\n\nall: prog\n\t./prog\n\n"
                "prog: $(OBJS)\n\t$(CC) -o $@ $(OBJS)\n\n"
                "%%.o: %%.c\n\t$(CC) $(CFLAGS) -c $< -o $@\n" % objs)


class MakeJ2(Program):
    name = "make-j2"

    def setup(self, work):
        write_project(work)

    def argv(self, run):
        # -s: with -j2 the order of the echoed commands varies from run
        # to run; the program's output is what is compared
        return ["make", "-s", "-j2"]

    def progress(self, run):
        return len(glob.glob(run.path("*.o")))

    def finished(self, run):
        return os.path.exists(run.path("prog"))

    def files(self, work):
        return hash_tree(work)


# A known bug, not yet fixed (about 1 run in 5): a cc1 that a checkpoint
# stops while it starts can deadlock: its main thread is parked holding
# ld.so's load lock (inside dlsym) and the manager thread waits for that
# lock in dlsym itself, so it never answers DO_SUSPEND. Seen on the commit
# before this mark too (30 s timeout then). It still runs and reports
# (XPASS when it passes); remove the mark with the fix.
@pytest.mark.xfail(strict=False, reason="known deadlock: manager thread "
                   "in dlsym while the main thread is stopped holding "
                   "ld.so's load lock")
@pytest.mark.time_limit(900)
def test_make_j2_100_files(session):
    require("/usr/bin/make", "make")
    require("/usr/bin/gcc", "gcc")
    check_program(session, MakeJ2())
