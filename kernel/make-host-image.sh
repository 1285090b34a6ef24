#!/bin/bash
# Checkpoint the counter program on the host kernel, so the guest (a
# different kernel, so a different vdso) can restart the image. Leaves
# XFER/run (the program, its log and the image; the guest copies it to
# the same absolute path), XFER/image.path, XFER/log.path and
# XFER/host-kernel.
# Usage: make-host-image.sh CKPT_PREFIX COUNTER_BINARY XFER_DIR
set -uo pipefail
P=$1 COUNTER=$2 XFER=$3
W=$XFER/work
D=$XFER/run
mkdir -p "$D" "$W"
cp "$COUNTER" "$D/ckpt_counter"
# Keep glibc off AVX-512 (QEMU's TCG CPU has none) so the image can
# run in the guest if ckpt_restart accepts unused register state.
export GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX512F,-AVX512VL,-AVX512BW,-AVX512DQ,-AVX512CD
export CKPT_DIR=$D/images CKPT_COORD=$W/coord.sock
mkdir -p "$CKPT_DIR"
LOG=$D/log
# The counter's log lives at the same absolute path inside the guest.
timeout -s KILL 60 "$P/bin/ckpt_launch" -- "$D/ckpt_counter" "$LOG" 300 \
	>"$W/launch.out" 2>&1 &
launcher=$!
for _ in $(seq 100); do
	grep -q '^20$' "$LOG" 2>/dev/null && break
	sleep 0.1
done
if ! timeout -s KILL 30 "$P/bin/ckpt_command" --checkpoint >"$W/images" 2>&1; then
	echo "make-host-image: checkpoint failed: $(tail -n 2 "$W/images")" >&2
	timeout -s KILL 10 "$P/bin/ckpt_command" --quit >/dev/null 2>&1
	kill -KILL $launcher 2>/dev/null
	exit 1
fi
timeout -s KILL 10 "$P/bin/ckpt_command" --kill >/dev/null 2>&1
timeout -s KILL 10 "$P/bin/ckpt_command" --quit >/dev/null 2>&1
kill -KILL $launcher 2>/dev/null
wait $launcher 2>/dev/null
img=$(grep '\.img$' "$W/images" | head -n 1)
[ -f "$img" ] || { echo "make-host-image: no image path in ckpt_command output" >&2; exit 1; }
echo "$img" >"$XFER/image.path"
echo "$LOG" >"$XFER/log.path"
uname -r >"$XFER/host-kernel"
