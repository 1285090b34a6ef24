#!/bin/bash
# make kernel-check: fetch Debian's pinned kernel (cached outside the
# repository), build ckpt_accel.ko and the guest programs, make an image
# on the host when the core checkpointer is built, boot the guest under
# QEMU and report what it printed. Exit 0 only if every check passed.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
OUT=$REPO/build/kernel
XFER=/tmp/ckpt-kernel-xfer
CC=${CC:-gcc}
START=$(date +%s)

die() { echo "kernel-check: $*" >&2; exit 1; }
step() { echo "kernel-check: [$(($(date +%s) - START))s] $*"; }

mkdir -p "$OUT"
step "fetching kernel packages into ${CKPT_KERNEL_CACHE:-/var/cache/ckpt-kernel}"
ROOT=$("$HERE/fetch-kernel.sh" | tail -n 1) || die "fetching the kernel failed"

step "building ckpt_accel.ko"
"$HERE/build-module.sh" "$ROOT" "$OUT/module" >/dev/null || die "module build failed"

step "building static guest tests and benchmarks"
GBIN=$OUT/guest-bin
rm -rf "$GBIN" && mkdir -p "$GBIN"
GFLAGS="-O2 -g -Wall -Wextra -Werror -std=gnu11 -D_GNU_SOURCE -I$REPO/include -I$HERE/tests"
for prog in "$HERE/tests/accel_test.c $REPO/libckpt-preload/accel.c" \
	    "$HERE/tests/accel_fuzz.c" "$REPO/bench/accel_populated.c" \
	    "$REPO/bench/accel_dirty.c"; do
	set -- $prog
	name=$(basename "$1" .c)
	$CC $GFLAGS -static -pthread "$@" -o "$GBIN/$name" \
		|| die "building $name failed"
done
# The checkpointed program is dynamic: LD_PRELOAD needs a dynamic program.
$CC $GFLAGS "$HERE/tests/ckpt_counter.c" -o "$GBIN/ckpt_counter" \
	|| die "building ckpt_counter failed"

# Test programs of the core suite (tests/apps), run under the checkpointer
# in the guest too; `make install` below builds them.
GUEST_APPS="heap_digest"

# The core checkpointer is optional here: when it does not build yet,
# its guest tests report SKIPPED.
STAGE=$OUT/stage/ckpt
rm -rf "$OUT/stage" "$XFER"
step "installing the core checkpointer (optional)"
if timeout 600 make -s -C "$REPO" install PREFIX="$STAGE" >"$OUT/core-install.log" 2>&1 &&
   [ -x "$STAGE/bin/ckpt_launch" ] && [ -x "$STAGE/bin/ckpt_restart" ] &&
   [ -x "$STAGE/bin/ckpt_command" ]; then
	step "making an image on the host kernel ($(uname -r))"
	"$HERE/make-host-image.sh" "$STAGE" "$GBIN/ckpt_counter" "$XFER" \
		|| step "host image failed: the guest will report it"
else
	step "core checkpointer not installable yet (see $OUT/core-install.log): its guest tests will be SKIPPED"
	STAGE=
fi

for app in $GUEST_APPS; do
	[ -x "$REPO/build/tests/apps/$app" ] && cp "$REPO/build/tests/apps/$app" "$GBIN/"
done

step "building the initramfs"
"$HERE/make-initramfs.sh" "$OUT/initramfs.cpio.gz" "$OUT/module/ckpt_accel.ko" \
	"$GBIN" "$STAGE" "$XFER" || die "initramfs build failed"

step "booting the guest (qemu, ${ACCEL:-tcg})"
"$HERE/boot-guest.sh" "$ROOT" "$OUT/initramfs.cpio.gz" "$OUT/console.log"
qemu_status=$?
"$HERE/report.sh" "$OUT/console.log" "$qemu_status"
status=$?
step "done (console: $OUT/console.log)"
exit $status
