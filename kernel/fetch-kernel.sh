#!/bin/bash
# Fetch Debian's pinned 6.1 kernel image and headers into a cache folder
# outside the repository, without installing them (no /boot, no grub).
# Also installs the host tools the kernel check needs.
# Prints the extracted root folder on stdout's last line.
set -euo pipefail

PINNED=6.1.0-57-amd64
KREL=${CKPT_KERNEL_RELEASE:-$PINNED}
KBUILD_PKG=${CKPT_KERNEL_KBUILD:-linux-kbuild-6.1}
CACHE=${CKPT_KERNEL_CACHE:-/var/cache/ckpt-kernel}

log() { echo "fetch-kernel: $*" >&2; }

need_tools() {
	local missing=()
	command -v qemu-system-x86_64 >/dev/null || missing+=(qemu-system-x86)
	[ -x /bin/busybox ] && /bin/busybox --list 2>/dev/null | grep -qx insmod \
		|| missing+=(busybox-static)
	command -v cpio >/dev/null || missing+=(cpio)
	command -v gcc >/dev/null || missing+=(gcc)
	command -v make >/dev/null || missing+=(make)
	dpkg -s libc6-dev >/dev/null 2>&1 || missing+=(libc6-dev)
	dpkg -s libelf1 >/dev/null 2>&1 || missing+=(libelf1)
	[ ${#missing[@]} -eq 0 ] && return 0
	log "installing host packages: ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	timeout 300 apt-get update -q >/dev/null \
		|| { log "apt-get update failed"; return 1; }
	timeout 600 apt-get install -y -q --no-install-recommends "${missing[@]}" \
		>/dev/null || { log "apt-get install ${missing[*]} failed"; return 1; }
}

fetch_debs() {
	local pkgs=(linux-image-$KREL linux-headers-$KREL linux-headers-$COMMON
		    $KBUILD_PKG)
	mkdir -p "$CACHE/debs"
	cd "$CACHE/debs"
	local p
	for p in "${pkgs[@]}"; do
		ls "${p}"_*.deb >/dev/null 2>&1 && continue
		log "downloading $p"
		if ! timeout 300 apt-get download -q "$p" >/dev/null 2>&1; then
			timeout 300 apt-get update -q >/dev/null || true
			timeout 300 apt-get download -q "$p" >/dev/null \
				|| { log "apt-get download $p failed"; return 1; }
		fi
	done
}

extract_debs() {
	[ -f "$ROOT/.ckpt-extracted" ] && return 0
	rm -rf "$ROOT.tmp"
	mkdir -p "$ROOT.tmp"
	local d
	for d in "$CACHE"/debs/*.deb; do
		log "extracting $(basename "$d")"
		timeout 300 dpkg -x "$d" "$ROOT.tmp"
	done
	# The arch headers include the common tree by absolute path.
	sed -i "s#^include /usr/src/#include $ROOT/usr/src/#" \
		"$ROOT.tmp/usr/src/linux-headers-$KREL/Makefile"
	rm -rf "$ROOT"
	mv "$ROOT.tmp" "$ROOT"
	# The sed above wrote $ROOT (the final path), so renaming is enough.
	touch "$ROOT/.ckpt-extracted"
}

# The archive keeps only the newest ABI of bookworm's kernel: when the
# pinned one is gone (and none was asked for), take the release the
# linux-image-amd64 metapackage depends on now. Image and headers always
# come from the same release, so the module's vermagic still matches.
resolve_release() {
	[ -n "${CKPT_KERNEL_RELEASE:-}" ] && return 0
	ls "$CACHE/debs/linux-image-${KREL}_"*.deb >/dev/null 2>&1 && return 0
	apt-cache show "linux-image-$KREL" >/dev/null 2>&1 && return 0
	timeout 300 apt-get update -q >/dev/null || true
	apt-cache show "linux-image-$KREL" >/dev/null 2>&1 && return 0
	local now
	now=$(apt-cache depends linux-image-amd64 2>/dev/null |
	      sed -n 's/.*Depends: linux-image-\([0-9][^ ]*-amd64\)$/\1/p' |
	      head -n 1)
	[ -n "$now" ] || { log "linux-image-$KREL is not in the archive and no current release was found"; return 1; }
	log "linux-image-$KREL is no longer in the archive; using $now"
	KREL=$now
}

need_tools
resolve_release
ROOT=$CACHE/root-$KREL
COMMON=${KREL%-amd64}-common
fetch_debs
extract_debs
[ -f "$ROOT/boot/vmlinuz-$KREL" ] || { log "$ROOT/boot/vmlinuz-$KREL: missing after extraction"; exit 1; }
echo "$ROOT"
