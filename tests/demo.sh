#!/usr/bin/env bash
# The ckpt demo: a counter is launched under ckpt_launch, checkpointed,
# killed, and restarted from its image; it continues where it stopped and
# ends with the same result as an uninterrupted run. Run by `make demo`;
# tests/deb_check.sh runs it on the installed tools (CKPT_BINDIR=/usr/bin).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bin=${CKPT_BINDIR:-$top/build/bin}
app=${CKPT_DEMO_APP:-$top/build/tests/apps/counter}
work=$(mktemp -d /tmp/ckpt-demo.XXXXXX)
export CKPT_COORD=$work/coord.sock CKPT_DIR=$work
cleanup() {
	timeout 10 "$bin/ckpt_command" --quit >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

say() { printf '\n== %s\n' "$*"; }

say "uninterrupted run: counter 30 steps"
expected=$("$app" 30 0 | tail -n 1)
echo "$expected"

say "ckpt_launch ./counter 30 100   (one step every 100 ms)"
# stdout is a pipe: after a restart the program writes into the pipe of
# the ckpt_restart invocation instead.
( "$bin/ckpt_launch" "$app" 30 100 2>&1 | cat >"$work/out" ) &
launched=$!
for _ in $(seq 100); do
	grep -q '^count 8 ' "$work/out" 2>/dev/null && break
	sleep 0.1
done
tail -n 2 "$work/out"

say "ckpt_command --checkpoint"
image=$(timeout 60 "$bin/ckpt_command" --checkpoint)
echo "$image"
ls -l "$image"

say "ckpt_command --kill   (the process is gone)"
timeout 30 "$bin/ckpt_command" --kill
wait "$launched" 2>/dev/null || true
echo "last line before the kill: $(tail -n 1 "$work/out")"

say "ckpt_restart $(basename "$image")"
timeout 60 "$bin/ckpt_restart" "$image" >"$work/restarted"
head -n 3 "$work/restarted"
echo "..."
got=$(tail -n 1 "$work/restarted")
echo "$got"

say "result"
first=$(grep -m1 '^count' "$work/restarted" | awk '{print $2}')
echo "restarted run resumed at step $first (not 1) and ended with: $got"
if [ "$got" = "$expected" ] && [ "$first" -gt 1 ]; then
	echo "PASS: same result as the uninterrupted run"
else
	echo "FAIL: expected '$expected'"
	exit 1
fi
