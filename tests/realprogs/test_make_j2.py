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


# Three bugs this test found are fixed (a cc stopped inside a constructor's
# dlsym while its manager needed ld.so's lock; as hung in setlocale on a
# lock naming its old tid; cc1 crashed in sysmalloc, its break left above
# the heap), each with its own test. One remains, about 1 run in 25 here:
# after the second restart an object file is assembled from an empty .s
# (a cc1 saved with its 0-byte output file open, the file recreated
# empty; cause not yet found). It still runs and reports (XPASS when it
# passes); remove the mark with the fix.
@pytest.mark.xfail(strict=False, reason="known: 1 in 25 runs an object "
                   "is assembled from an empty .s after the second "
                   "restart")
@pytest.mark.time_limit(900)
def test_make_j2_100_files(session):
    require("/usr/bin/make", "make")
    require("/usr/bin/gcc", "gcc")
    check_program(session, MakeJ2())
