# SPDX-License-Identifier: LGPL-2.1-or-later
"""bc -l (arbitrary precision with the math library; its stdout is
block-buffered into a file, so the bytes buffered at the checkpoint must
land at the right offset) and perl (a hash of 100,000 keys, regular
expressions, an output file kept open, exit status 3)."""

import pytest

from realprogs.driver import Program, check_program, require

BC_SCRIPT = """scale = 50
s = 0
for (i = 1; i <= 3000; i++) {
	s = s + sqrt(i) + l(i) + a(i) / e(i % 7)
	if (i % 30 == 0) print "step ", i / 30, " ", s, "\\n"
}
print "final ", s, "\\n"
quit
"""

PERL_SCRIPT = r"""
use strict;
use warnings;
$| = 1;
my ($steps, $per) = @ARGV;
my %count;
my ($dups, $sum, $x) = (0, 0, 1);
open(my $out, ">", "words.txt") or die "words.txt: $!";
for my $step (1 .. $steps) {
	for (1 .. $per) {
		$x = ($x * 1103515245 + 12345) % 2147483648;
		my $w = join "", map { chr(97 + ($x >> (3 * $_)) % 26) } 0 .. 4;
		$dups++ if ++$count{$w} == 2;
		$sum = ($sum * 31 + unpack("%32C*", $w)) % 1000000007;
		print $out "$w\n" if $w =~ /^[aeiou].*[aeiou]$/;
	}
	printf "step %d %d %d %d\n", $step, scalar(keys %count), $dups, $sum;
}
close($out) or die "words.txt: $!";
my @top = (sort { $count{$b} <=> $count{$a} || $a cmp $b } keys %count)[0 .. 4];
printf "final %d %s\n", scalar(keys %count), join(",", @top);
exit 3;
"""


class Bc(Program):
    name = "bc"
    progress_kind = "time"
    marks = (0.2, 0.2)

    def setup(self, work):
        with open("%s/work.bc" % work, "w") as f:
            f.write(BC_SCRIPT)

    def argv(self, run):
        return ["bc", "-lq", "work.bc"]

    def finished(self, run):
        return any(l.startswith("final ") for l in run.stdout_lines())


class Perl(Program):
    name = "perl"

    def argv(self, run):
        return ["perl", "-e", PERL_SCRIPT, "100", "12000"]

    def finished(self, run):
        return any(l.startswith("final ") for l in run.stdout_lines())


@pytest.mark.time_limit(600)
def test_bc(session):
    require("/usr/bin/bc", "bc")
    check_program(session, Bc())


@pytest.mark.time_limit(600)
def test_perl(session):
    require("/usr/bin/perl", "perl")
    check_program(session, Perl())
