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
# The guest gets $D (at the same path) through a cpio archive, which keeps
# mtimes in whole seconds only, and ckpt_restart checks every mapped file's
# mtime to the nanosecond. So the program runs from copies under $D with
# whole-second mtimes: itself, its dynamic loader and libraries, and the
# ckpt tree (libckpt.so).
cp "$COUNTER" "$D/ckpt_counter"
mkdir -p "$D/lib"
for lib in $(ldd "$COUNTER" "$P/lib/ckpt/libckpt.so" | grep -v ":$" | grep -o '/[^ ]*' | sort -u); do
	cp "$(readlink -f "$lib")" "$D/lib/$(basename "$lib")"
done
cp -a "$P" "$D/ckpt"
find "$D" -type f -exec touch -d "@$(date +%s)" {} +
P=$D/ckpt
LDSO=$D/lib/$(basename "$(ldd "$COUNTER" | grep -o '/[^ ]*ld-linux[^ ]*' | head -n 1)")
# Keep glibc off AVX-512 (QEMU's TCG CPU has none): no saved thread then
# holds AVX-512 state, and the guest restarts the image with
# ckpt_restart --cpu-compat. Keep it off XSAVEC too: QEMU 7.2's TCG lacks
# that instruction, and glibc's lazy-binding trampoline
# (_dl_runtime_resolve_xsavec) uses it when the CPU has it (SIGILL in
# ld.so after the restart otherwise). And off RTM (TSX): on a host that
# has it glibc picks the *_rtm string functions (xtest), an invalid opcode
# under TCG (seen as SIGILL in __memmove_avx_unaligned_erms_rtm).
export GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX512F,-AVX512VL,-AVX512BW,-AVX512DQ,-AVX512CD,-AVX512ER,-AVX512PF,-XSAVEC,-RTM
export CKPT_DIR=$D/images CKPT_COORD=$W/coord.sock
mkdir -p "$CKPT_DIR"
LOG=$D/log
# Everything the program has open (its log, its stdout and stderr) and its
# working directory live under $D, at the same absolute path in the guest:
# the restart reopens them there.
cd "$D" || exit 1
timeout -s KILL 60 "$P/bin/ckpt_launch" -- "$LDSO" --library-path "$D/lib" \
	"$D/ckpt_counter" "$LOG" 300 \
	>"$D/launch.out" 2>&1 &
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
