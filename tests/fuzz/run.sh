#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Run one libFuzzer target for a bounded time: run.sh NAME SECONDS DIR.
# DIR (build/fuzz) holds fuzz_NAME, its growing corpus and its log; the
# seeds are tests/fuzz/seeds/NAME and DIR/seeds-NAME, when they exist.
# Prints the executions; fails, with the crash's input kept, on a crash.
set -eu
name=$1 secs=$2 dir=$3
corpus=$dir/corpus-$name
log=$dir/fuzz-$name.log
mkdir -p "$corpus"
set -- "$corpus"
for s in "tests/fuzz/seeds/$name" "$dir/seeds-$name"; do
	[ -d "$s" ] && set -- "$@" "$s"
done
if ! "$dir/fuzz_$name" -max_total_time="$secs" -print_final_stats=1 \
	-timeout=10 -rss_limit_mb=2048 -artifact_prefix="$dir/crash-$name-" \
	"$@" >"$log" 2>&1; then
	tail -40 "$log"
	echo "fuzz $name: FAILED (crash or leak); input in $dir/crash-$name-*" >&2
	exit 1
fi
execs=$(awk '/stat::number_of_executed_units/ { print $2 }' "$log")
echo "fuzz $name: $execs executions in $secs s, no crash (log: $log)"
