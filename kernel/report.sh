#!/bin/bash
# Read the guest console and judge the run: every CKPT-TEST line, a
# closing "N passed, N failed, N skipped" line, exit 0 only when the guest
# reported PASS and nothing failed or crashed.
# Usage: report.sh CONSOLE_LOG QEMU_STATUS
LOG=$1 QEMU_STATUS=$2
tr -d '\r' <"$LOG" | grep -E '^  (bench-|fuzz|accel-functional)[a-z-]*\| (bench-|PASS|FAIL)' \
	| sed 's/^  [^|]*| /kernel-check:   /'
tr -d '\r' <"$LOG" | grep -E '^CKPT-TEST ' | sed 's/^CKPT-TEST /kernel-check: /'
passed=$(tr -d '\r' <"$LOG" | grep -cE '^CKPT-TEST [^:]*: PASS')
failed=$(tr -d '\r' <"$LOG" | grep -cE '^CKPT-TEST [^:]*: FAIL')
skipped=$(tr -d '\r' <"$LOG" | grep -cE '^CKPT-TEST [^:]*: SKIPPED')
ok=1
if [ "$QEMU_STATUS" != 0 ]; then
	echo "kernel-check: qemu exited with status $QEMU_STATUS (137: killed by the timeout)"
	ok=0
fi
if grep -qE 'Kernel panic|BUG:|Oops|general protection fault' "$LOG"; then
	echo "kernel-check: the guest kernel crashed:"
	grep -E -A5 'Kernel panic|BUG:|Oops|general protection fault' "$LOG" | head -40
	ok=0
fi
if ! grep -q '^CKPT-GUEST-RESULT: PASS' <(tr -d '\r' <"$LOG"); then
	echo "kernel-check: the guest did not report PASS; console tail:"
	tail -n 30 "$LOG"
	ok=0
fi
[ "$failed" = 0 ] || ok=0
[ $ok = 1 ] || [ "$failed" != 0 ] || failed=1
echo "kernel-check: $passed passed, $failed failed, $skipped skipped"
[ $ok = 1 ]
