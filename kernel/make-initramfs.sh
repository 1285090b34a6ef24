#!/bin/bash
# Build the guest's initramfs: busybox, kernel/guest/init, the module,
# the static tests and benchmarks, and, when present, the installed ckpt
# tree with the shared libraries its binaries need (their ldd closure, at
# their real paths, in a merged-/usr layout like the host's) plus the
# image made on the host.
# Usage: make-initramfs.sh OUT.cpio.gz MODULE.ko GUEST_BIN_DIR [CKPT_STAGE_DIR] [XFER_DIR]
set -euo pipefail
OUTFILE=$1 MODULE=$2 GBIN=$3 STAGE=${4:-} XFER=${5:-}
HERE=$(cd "$(dirname "$0")" && pwd)
R=$(mktemp -d "${TMPDIR:-/tmp}/ckpt-initramfs.XXXXXX")
trap 'rm -rf "$R"' EXIT

mkdir -p "$R"/usr/bin "$R"/usr/sbin "$R"/usr/lib "$R"/usr/lib64 "$R"/tests \
	"$R"/proc "$R"/sys "$R"/dev "$R"/tmp "$R"/opt "$R"/etc
ln -s usr/bin "$R/bin"
ln -s usr/sbin "$R/sbin"
ln -s usr/lib "$R/lib"
ln -s usr/lib64 "$R/lib64"
cp /bin/busybox "$R/usr/bin/busybox"
for app in $("$R/usr/bin/busybox" --list); do
	[ -e "$R/usr/bin/$app" ] || ln -s busybox "$R/usr/bin/$app"
done
echo 'root:x:0:0:root:/:/bin/sh' >"$R/etc/passwd"
echo 'nobody:x:65534:65534:nobody:/:/bin/sh' >>"$R/etc/passwd"
install -m 0755 "$HERE/guest/init" "$R/init"
cp "$MODULE" "$R/ckpt_accel.ko"
cp "$GBIN"/* "$R/tests/"
mv "$R/tests/ckpt_counter" "$R/usr/bin/ckpt_counter"

# copy_with_libs FILE...: each file and its ldd closure at real paths.
copy_with_libs() {
	local f lib real given
	for f in "$@"; do
		for lib in $(ldd "$f" 2>/dev/null | grep -o '/[^ ]*' || true); do
			real=$(readlink -f "$lib")
			mkdir -p "$R$(dirname "$real")"
			[ -e "$R$real" ] || cp "$real" "$R$real"
			# The name the binary asks for (e.g. the ELF interpreter
			# /lib64/ld-linux-x86-64.so.2) is a symlink on the host.
			given=$(readlink -f "$(dirname "$lib")")/$(basename "$lib")
			mkdir -p "$R$(dirname "$given")"
			[ "$given" = "$real" ] || [ -e "$R$given" ] ||
				ln -s "$real" "$R$given"
		done
	done
}
copy_with_libs "$R/usr/bin/ckpt_counter"
if [ -n "$STAGE" ] && [ -d "$STAGE" ]; then
	cp -a "$STAGE" "$R/opt/ckpt"
	copy_with_libs $(find "$R/opt/ckpt" -type f)
fi
if [ -n "$XFER" ] && [ -d "$XFER" ]; then
	cp -a "$XFER" "$R/xfer"
fi
(cd "$R" && find . | cpio -o -H newc --quiet) | gzip -1 >"$OUTFILE"
