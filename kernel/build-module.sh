#!/bin/bash
# Build ckpt_accel.ko against the extracted Debian headers, in a copy of
# kernel/ under build/kernel/module so the source tree stays clean.
# Usage: build-module.sh KERNEL_ROOT OUT_DIR
set -euo pipefail
ROOT=$1
OUT=$2
KREL=${ROOT##*/root-}	# fetch-kernel.sh names the root after the release
HERE=$(cd "$(dirname "$0")" && pwd)
KDIR=$ROOT/usr/src/linux-headers-$KREL

[ -d "$KDIR" ] || { echo "build-module: $KDIR: no headers (run fetch-kernel.sh)" >&2; exit 1; }
rm -rf "$OUT"
mkdir -p "$OUT/include/ckpt"
cp "$HERE"/Kbuild "$HERE"/*.c "$HERE"/ckpt_accel.h "$OUT/"
cp "$HERE/../include/ckpt/accel.h" "$OUT/include/ckpt/"
timeout 300 make -s -C "$KDIR" M="$OUT" modules >"$OUT/build.log" 2>&1 || {
	cat "$OUT/build.log" >&2
	echo "build-module: make modules in $OUT failed" >&2
	exit 1
}
# Any compiler warning is a failure, as in the rest of the tree.
if grep -q 'warning:' "$OUT/build.log"; then
	cat "$OUT/build.log" >&2
	echo "build-module: warnings building ckpt_accel.ko" >&2
	exit 1
fi
[ -f "$OUT/ckpt_accel.ko" ] || { echo "build-module: $OUT/ckpt_accel.ko missing" >&2; exit 1; }
echo "$OUT/ckpt_accel.ko"
