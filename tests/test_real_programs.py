# SPDX-License-Identifier: LGPL-2.1-or-later
"""Unmodified programs from Debian: python3 with hashlib, perl, bash.

Each runs a deterministic loop that prints "step K ..." progress and a
final "final ..." line; the restarted run must continue from the
checkpoint and end exactly like an uninterrupted run.
"""

import os

import pytest

from ckpt_harness import (checkpoint_and_kill, numbers, reference_output,
                          restart_to_end, tail_after_progress)

PROGRESS = r"^step (\d+) "

PYTHON = "/usr/bin/python3"
PYTHON_SCRIPT = r"""
import hashlib, sys
n, every = int(sys.argv[1]), int(sys.argv[2])
h = b"ckpt"
for i in range(1, n + 1):
    h = hashlib.sha256(h).digest()
    if i % every == 0:
        print("step %d %s" % (i // every, h.hex()[:16]), flush=True)
print("final", hashlib.sha256(h).hexdigest(), flush=True)
"""

PERL = "/usr/bin/perl"
PERL_SCRIPT = r"""
$| = 1;
my ($n, $every) = @ARGV;
my ($x, $s, %seen) = (1, "perl");
for my $i (1 .. $n) {
    $x = ($x * 1103515245 + 12345 + $i) % 2147483648;
    $s = substr($s . chr(97 + $x % 26), -32);
    $seen{$x % 1000}++;
    if ($i % $every == 0) {
        printf "step %d %d %s\n", $i / $every, $x, $s;
    }
}
printf "final %d %s %d\n", $x, $s, scalar(keys %seen);
"""

BASH = "/bin/bash"
BASH_SCRIPT = r"""
n=$1 every=$2 x=7 s=bash
for ((i = 1; i <= n; i++)); do
    x=$(( (x * 31 + i) % 1000003 ))
    s="${s:1}${x: -1}"
    if (( i % every == 0 )); then
        echo "step $(( i / every )) $x $s"
    fi
done
echo "final $x $s ${#s}"
"""

# (name, argv, number of progress steps). Each runs ~5 s uninterrupted
# on the reference machine; the checkpoint is taken at step 10.
PROGRAMS = [
    ("python3", [PYTHON, "-c", PYTHON_SCRIPT, "12000000", "120000"], 100),
    ("perl", [PERL, "-e", PERL_SCRIPT, "20000000", "200000"], 100),
    ("bash", [BASH, "-c", BASH_SCRIPT, "bash", "1000000", "10000"], 100),
]


@pytest.mark.parametrize("name,argv,steps", PROGRAMS,
                         ids=[p[0] for p in PROGRAMS])
def test_reference_run(apps_only, name, argv, steps):
    if not os.path.exists(argv[0]):
        pytest.fail("%s is not installed" % argv[0])
    ref = reference_output(argv)
    assert numbers(ref, PROGRESS) == list(range(1, steps + 1))
    assert ref[-1].startswith("final ")


@pytest.mark.time_limit(600)
@pytest.mark.parametrize("name,argv,steps", PROGRAMS,
                         ids=[p[0] for p in PROGRAMS])
def test_checkpoint_kill_restart(session, name, argv, steps):
    ref = reference_output(argv)
    p = session.launch(argv, name="launch " + name)
    images, seen, before = checkpoint_and_kill(session, p, PROGRESS, 10,
                                               kill="command")
    base = os.path.basename(images[0])
    assert base.startswith("ckpt_" + name[:15]), (
        "image %s is not named after %s" % (base, name))
    r, first = restart_to_end(session, images, PROGRESS, steps, seen,
                              before)
    assert tail_after_progress(r.lines(), PROGRESS) == \
        tail_after_progress(ref, PROGRESS)
