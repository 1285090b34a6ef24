# SPDX-License-Identifier: LGPL-2.1-or-later
"""`make -j2` building a small C project: make forks, gcc's driver
posix_spawns cc1 and as, which write and read temporary files in /tmp
that the driver removes. Checkpointed mid-build (twice, so older images
of finished compilers lie in the directory), killed, and restarted with
`ckpt_restart ckpt_*.img`: the build finishes and the program it built
prints what an uninterrupted build's program prints. Also: checkpoints
taken back to back while the build forks and execs all the time either
succeed or fail with a clear message, and the build is unharmed."""

import glob
import os
import subprocess
import time

import pytest

from ckpt_harness import run

PARTS = 12
LINES = 300


def write_project(d, parts=PARTS, lines=LINES):
    """`parts` files of arithmetic that takes gcc -O2 a moment each
    (bench/bench.py builds 100 of them)."""
    os.makedirs(d)
    for i in range(parts):
        body = ["unsigned long part%d(unsigned long x) {" % i]
        for k in range(lines):
            body.append("  x = x * %dUL + %d; x ^= x >> %d;" % (
                6364136223846793005 + 2 * k + i, 7 * k + i, k % 31 + 1))
            body.append("  if (x %% %d == %d) x += %d;" % (k + 3, k % 3,
                                                          k * k + i))
        body.append("  return x;\n}\n")
        with open(os.path.join(d, "part%d.c" % i), "w") as f:
            f.write("\n".join(body))
    decls = "".join("unsigned long part%d(unsigned long);\n" % i
                    for i in range(parts))
    calls = "".join("  x = part%d(x);\n" % i for i in range(parts))
    with open(os.path.join(d, "main.c"), "w") as f:
        f.write('#include <stdio.h>\n%sint main(void)\n{\n'
                '  unsigned long x = 1;\n%s  printf("result %%lu\\n", x);\n'
                '  return 0;\n}\n' % (decls, calls))
    objs = " ".join(["part%d.o" % i for i in range(parts)] + ["main.o"])
    with open(os.path.join(d, "Makefile"), "w") as f:
        f.write("CFLAGS = -O2\nprog: %s\n\t$(CC) -o $@ $^\n"
                "%%.o: %%.c\n\t$(CC) $(CFLAGS) -c $< -o $@\n" % objs)


def objects(d):
    return sorted(glob.glob(os.path.join(d, "*.o")))


def wait_objects(d, minimum, proc, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len(objects(d)) >= minimum:
            return len(objects(d))
        assert proc.alive(), "make ended early: %r %s" % (
            proc.lines()[-5:], proc.stderr_text())
        time.sleep(0.02)
    raise AssertionError("%d objects after %d s, waiting for %d" % (
        len(objects(d)), timeout, minimum))


def built_result(d):
    r = run([os.path.join(d, "prog")], 30)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("make_ref") / "proj")
    write_project(d)
    r = subprocess.run(["make", "-j2", "-C", d], capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return built_result(d)


def checkpoint_paths(session):
    r = session.command("--checkpoint")
    assert r.returncode == 0, "checkpoint failed: %s" % r.stderr
    return [l for l in r.stdout.splitlines() if l.strip()]


@pytest.mark.time_limit(600)
def test_make_j2_restart(session, reference):
    d = session.path("proj")
    write_project(d)
    p = session.launch(["make", "-j2", "-C", d])
    wait_objects(d, 2, p)
    first = checkpoint_paths(session)
    wait_objects(d, 4, p)
    second = checkpoint_paths(session)
    session.kill_all()
    p.popen.wait(30)
    assert not os.path.exists(os.path.join(d, "prog")), (
        "the build finished before it was killed")
    assert len(objects(d)) < PARTS + 1
    stale = set(first) - set(second)
    print("images: first %d, second %d, stale %d" % (
        len(first), len(second), len(stale)))

    r = session.restart(sorted(glob.glob(os.path.join(session.ckptdir,
                                                      "ckpt_*.img"))))
    rc = r.wait_exit(300)
    assert rc == 0, "make after restart: exit %d; stderr:\n%s" % (
        rc, r.stderr_text())
    for img in stale:
        assert "leaving out %s" % img in r.stderr_text(), (
            "an image of the older checkpoint was not left out: %s" % img)
    assert len(objects(d)) == PARTS + 1
    assert built_result(d) == reference
    assert any(l.startswith("cc -o prog") for l in r.lines()), r.lines()


@pytest.mark.time_limit(600)
def test_make_j2_two_restarts(session, reference):
    """Checkpoint, kill, restart, and again: the compilers make started
    after the first restart must come back as its children at the second
    (make said "wait: No child processes" when they did not)."""
    d = session.path("proj")
    write_project(d)
    p = session.launch(["make", "-j2", "-C", d])
    for cycle in range(2):
        wait_objects(d, 2 + 3 * cycle, p)
        images = checkpoint_paths(session)
        session.kill_all()
        p.popen.wait(30)
        assert not os.path.exists(os.path.join(d, "prog")), (
            "the build finished before it was killed (cycle %d)" % cycle)
        print("cycle %d: %d images, %d objects" % (cycle, len(images),
                                                   len(objects(d))))
        p = session.restart(images)
    rc = p.wait_exit(300)
    assert rc == 0, "make after the second restart: exit %d; stderr:\n%s" % (
        rc, p.stderr_text())
    assert len(objects(d)) == PARTS + 1
    assert built_result(d) == reference


@pytest.mark.time_limit(600)
def test_checkpoints_while_make_forks_and_execs(session, reference):
    d = session.path("proj")
    write_project(d)
    p = session.launch(["make", "-j2", "-C", d])
    ok = failed = 0
    while p.alive():
        r = session.command("--checkpoint")
        if r.returncode == 0:
            ok += 1
        elif not p.alive():
            break
        else:
            failed += 1
            # a clear reason, one line per process that failed
            assert r.stderr.strip(), "a failed checkpoint said nothing"
            print("checkpoint failed: %s" % r.stderr.strip())
        time.sleep(0.1)
    assert p.wait_exit() == 0, p.stderr_text()
    print("checkpoints: %d succeeded, %d failed" % (ok, failed))
    assert ok >= 3, "only %d checkpoints succeeded during the build" % ok
    assert built_result(d) == reference
