#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""What the gdb extension's automatic snapshots cost in memory
(docs/performance.md, "Automatic snapshots: count and memory"):
bench/working_set.c (MIB MiB of random bytes, PERCENT % of its pages
rewritten every second, a stop at tick() every 100 ms) runs SECONDS
seconds under gdb with the extension and `ckpt auto seconds T max M`.
At its last stop the bench reads how many snapshots were taken and kept
(the rest thinned out), the bytes their images take on the tmpfs the
session directory is on (TMPDIR is put on /dev/shm), and the program's
own RSS, Pss and Private_Dirty (/proc/PID/smaps_rollup), in the same run.

Then the same program runs under ckpt_launch alone, with a template
snapshot (`ckpt_command --snapshot`) every T seconds thinned by the
extension's rule to M: the memory template snapshots would cost, the sum
of Private_Dirty and Pss of the template processes, and what they add
(their Pss plus the program's, less the program's RSS: a page the
program and several templates share is counted once), next to the
program's RSS at the same moment.

Usage: bench/bench_snapshot_memory.py [--mib N] [--percent P]
           [--seconds S] [--every T] [--max M] [--only gdb|templates]"""

import argparse
import os
import re
import shutil
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE = os.path.join(ROOT, "bench", "working_set.c")
EXTENSION = os.path.join(ROOT, "dist", "gdb", "ckpt-gdb.py")
BIN = os.path.join(ROOT, "build", "bin")
TMPFS = "/dev/shm"
MIB = 1 << 20

# at the last stop: counts, image bytes, the program's memory
REPORT = """
python
import os as _os
def _allocated(top):
    # each inode once: a kept snapshot may be a hard link of ckpt's image
    seen, total = set(), 0
    for d, _, files in _os.walk(top):
        for n in files:
            st = _os.lstat(_os.path.join(d, n))
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_blocks * 512
    return total
def _report():
    s = SESSION
    kept = sum(_os.lstat(x.data).st_blocks * 512 for x in s.snapshots)
    with open("/proc/%%d/smaps_rollup" %% gdb.selected_inferior().pid) as f:
        for line in f:
            print("ROLLUP " + line.rstrip())
    print("REPORT taken %%d kept %%d snapshot_bytes %%d session_bytes %%d "
          "ckptdir_bytes %%d stops %%s" %% (
          s.next_number - 1, len(s.snapshots), kept, _allocated(s.dir),
          _allocated(s.ckptdir),
          ",".join(str(x.stop.index) for x in s.snapshots)))
_last = %(slices)d
while int(gdb.parse_and_eval("slice")) < _last:
    gdb.execute("continue", to_string=True)
_report()
end
kill
"""


def compile_program(work):
    exe = os.path.join(work, "working_set")
    subprocess.run(["cc", "-g", "-O0", "-o", exe, SOURCE], check=True)
    return exe


def run_under_gdb(work, exe, args):
    script = os.path.join(work, "bench.gdb")
    with open(script, "w") as f:
        f.write("source %s\n" % EXTENSION)
        f.write("set args %d %d %d > %s\n" % (
            args.mib, args.percent, args.seconds,
            os.path.join(work, "out")))
        f.write("break tick\n")
        f.write("ckpt auto seconds %d max %d\n" % (args.every, args.max))
        f.write("ckpt run\n")
        f.write(REPORT % {"slices": args.seconds * 10})
    env = dict(os.environ, CKPT_BIN=BIN, CKPT_GDB_TIMEOUT="120",
               TMPDIR=work)
    r = subprocess.run(["gdb", "-nx", "-q", "-batch", "-x", script, exe],
                       capture_output=True, text=True,
                       timeout=args.seconds * 10 + 300, cwd=work, env=env)
    text = r.stdout + r.stderr
    m = re.search(r"^REPORT (.*)$", text, re.M)
    if not m:
        raise SystemExit("the gdb run did not reach its last stop:\n" +
                         text[-3000:])
    words = m.group(1).split()
    rep = dict(zip(words[::2], words[1::2]))
    own = parse_rollup(re.findall(r"^ROLLUP (.*)$", text, re.M))
    rep.update(rss=own["Rss"], pss=own["Pss"],
               private_dirty=own["Private_Dirty"])
    return rep


def show_gdb(args, rep):
    taken, kept = int(rep["taken"]), int(rep["kept"])
    snap, rss = int(rep["snapshot_bytes"]), int(rep["rss"])
    if not 2 <= kept <= min(taken, args.max) or snap < kept * args.mib * MIB:
        raise SystemExit("implausible: %d snapshots taken, %d kept (at most "
                         "%d), %d bytes of images" % (taken, kept, args.max,
                                                      snap))
    print("gdb extension (image snapshots), %d MiB, %d%%/s changed, %d s, "
          "auto every %d s, max %d:" % (args.mib, args.percent,
                                        args.seconds, args.every, args.max))
    print("  snapshots taken %d, kept %d (at stops %s), thinned %d" % (
        taken, kept, rep["stops"], taken - kept))
    print("  kept images on tmpfs %.1f MiB (%.1f MiB each), the session "
          "directory %.1f MiB (of which ckpt's checkpoint directory "
          "%.1f MiB)" % (snap / MIB, snap / MIB / max(kept, 1),
                         int(rep["session_bytes"]) / MIB,
                         int(rep["ckptdir_bytes"]) / MIB))
    print("  program RSS %.1f MiB, Pss %.1f MiB, Private_Dirty %.1f MiB; "
          "kept images / RSS %.2fx, session directory / RSS %.2fx" % (
              rss / MIB, int(rep["pss"]) / MIB,
              int(rep["private_dirty"]) / MIB, snap / rss,
              int(rep["session_bytes"]) / rss))


def parse_rollup(lines):
    """smaps_rollup's "Name: N kB" lines -> {Name: bytes}"""
    fields = {}
    for line in lines:
        parts = line.split()
        if len(parts) == 3 and parts[2] == "kB":
            fields[parts[0].rstrip(":")] = int(parts[1]) * 1024
    return fields


def rollup(pid):
    with open("/proc/%d/smaps_rollup" % pid) as f:
        return parse_rollup(f)


def command(coord, *argv):
    r = subprocess.run([os.path.join(BIN, "ckpt_command"), "--coord", coord]
                       + list(argv), capture_output=True, text=True,
                       timeout=120)
    if r.returncode != 0:
        raise SystemExit("ckpt_command %s failed: %s" % (
            " ".join(argv), r.stderr.strip()))
    return r.stdout


def thin(kept, limit):
    """The extension's rule (Session.thin): drop the snapshot whose gap
    to the one before it, over its distance to the newest, is smallest;
    the first and the newest stay. kept: [(time, id)]."""
    dropped = []
    while len(kept) > limit > 1:
        newest = kept[-1][0]
        worst = min(range(1, len(kept) - 1), key=lambda i: (
            kept[i][0] - kept[i - 1][0]) / max(newest - kept[i][0], 1e-3))
        dropped.append(kept.pop(worst)[1])
    return dropped


def template_pids(coord):
    pids = []
    for line in command(coord, "--snapshots").splitlines():
        m = re.search(r"\btemplate:(\d+)$", line.strip())
        if m:
            pids.append(int(m.group(1)))
    return pids


def run_with_templates(work, exe, args):
    """Returns (taken, kept, templates, their Private_Dirty and Pss sums,
    the program's smaps_rollup), measured at the end of the run."""
    coord = os.path.join(work, "coord.sock")
    ckptdir = os.path.join(work, "templates")
    os.makedirs(ckptdir)
    prog = subprocess.Popen(
        [os.path.join(BIN, "ckpt_launch"), "--coord", coord, "--ckptdir",
         ckptdir, exe, str(args.mib), str(args.percent),
         str(args.seconds + 30)], stdout=subprocess.DEVNULL,
        env=dict(os.environ, CKPT_SNAPSHOT_DIR=work))
    try:
        start = time.monotonic()
        kept, taken = [], 0
        while time.monotonic() - start < args.seconds:
            time.sleep(args.every)
            sid = command(coord, "--snapshot").split()[0]
            taken += 1
            kept.append((time.monotonic() - start, sid))
            for sid in thin(kept, args.max):
                command(coord, "--drop", sid)
        pids = template_pids(coord)
        own = rollup(prog.pid)
        dirty = pss = 0
        for pid in pids:
            r = rollup(pid)
            dirty += r["Private_Dirty"]
            pss += r["Pss"]
        return taken, len(kept), len(pids), dirty, pss, own
    finally:
        prog.kill()
        prog.wait(30)
        subprocess.run([os.path.join(BIN, "ckpt_command"), "--coord", coord,
                        "--quit"], capture_output=True, timeout=30)


def show_templates(args, taken, kept, templates, dirty, pss, own):
    print("template snapshots (ckpt_command --snapshot, no gdb), every %d "
          "s, thinned to %d:" % (args.every, args.max))
    print("  snapshots taken %d, kept %d, of which templates %d" % (
        taken, kept, templates))
    # the pages the templates add: every page counted once over the
    # program and its templates (the sum of their Pss), less the
    # program's own RSS (what it would hold alone)
    added = pss + own["Pss"] - own["Rss"]
    print("  templates: Private_Dirty %.1f MiB, Pss %.1f MiB; program RSS "
          "%.1f MiB, Pss %.1f MiB" % (dirty / MIB, pss / MIB,
                                     own["Rss"] / MIB, own["Pss"] / MIB))
    print("  memory the templates add %.1f MiB: %.2fx the program's RSS "
          "(templates' Private_Dirty alone %.2fx)" % (
              added / MIB, added / own["Rss"], dirty / own["Rss"]))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mib", type=int, default=64)
    p.add_argument("--percent", type=int, default=10)
    p.add_argument("--seconds", type=int, default=40)
    p.add_argument("--every", type=int, default=2)
    p.add_argument("--max", type=int, default=8)
    p.add_argument("--only", choices=("gdb", "templates"))
    args = p.parse_args()
    work = tempfile.mkdtemp(prefix="ckpt-bench-snapmem-", dir=TMPFS)
    try:
        exe = compile_program(work)
        if args.only != "templates":
            show_gdb(args, run_under_gdb(work, exe, args))
        if args.only != "gdb":
            show_templates(args, *run_with_templates(work, exe, args))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
