#!/usr/bin/env bash
# make deb-check: build the Debian packages (make deb), install them into
# the running root with dpkg -i, run the demo (tests/demo.sh) from the
# installed /usr/bin tools, check that lintian reports no errors and that
# the packages hold what `make install` installs, then dpkg -r both.
# It installs over the system: it refuses to run unless CI=true (a
# throw-away CI root) or --i-mean-it is given.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
if [ "${CI:-}" != true ] && [ "${1:-}" != --i-mean-it ]; then
	echo "deb_check: refusing to install the ckpt packages into this" \
	     "system: run it in a throw-away root with CI=true, or pass" \
	     "--i-mean-it (make deb-check DEB_CHECK_FLAGS=--i-mean-it)" >&2
	exit 2
fi
for pkg in ckpt ckpt-dev; do
	if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q installed; then
		echo "deb_check: $pkg is already installed here; not touching" \
		     "it (remove it first)" >&2
		exit 2
	fi
done
step() { printf '\n== deb_check: %s (%ds)\n' "$*" "$SECONDS"; }

step "make deb"
make deb
debs=(build/deb/ckpt_*.deb build/deb/ckpt-dev_*.deb)
ls -l "${debs[@]}"

step "lintian (no errors allowed)"
if command -v lintian >/dev/null; then
	lintian --fail-on error "${debs[@]}"
else
	echo "deb_check: lintian is not installed (.ci/install-deps installs" \
	     "it); no lintian check" >&2
	[ "${CI:-}" != true ] || exit 1
fi

step "the packages hold what make install installs"
stage=$(mktemp -d /tmp/ckpt-deb-check.XXXXXX)
removed=
cleanup() {
	rm -rf "$stage"
	[ -n "$removed" ] || dpkg -r ckpt-dev ckpt >/dev/null 2>&1 || true
}
trap cleanup EXIT
make -C build/deb/src install DESTDIR="$stage/inst" PREFIX=/usr >/dev/null
(cd "$stage/inst" && find . ! -type d | sed 's|^\.||; s|\.gz$||' | sort) \
	> "$stage/make-install"
for d in "${debs[@]}"; do dpkg-deb -c "$d"; done |
	awk '$1 !~ /^d/ {print $6}' | sed 's|^\.||; s|\.gz$||' |
	grep -v '^/usr/share/doc/' | sort > "$stage/packaged"
if ! diff -u "$stage/make-install" "$stage/packaged"; then
	echo "deb_check: make install and the packages differ (above)" >&2
	exit 1
fi
for f in /usr/share/ckpt/slurm/ckpt_job.sbatch /usr/share/ckpt/gdb/ckpt-gdb.py \
	 /usr/share/ckpt/schemas/ckpt_command-status.schema.json; do
	grep -qx "$f" "$stage/packaged" ||
		{ echo "deb_check: $f is not packaged" >&2; exit 1; }
done

step "dpkg -i"
dpkg -i "${debs[@]}"

step "the demo with the installed tools"
make -C build/deb/src -j2 test-apps >/dev/null
CKPT_BINDIR=/usr/bin CKPT_DEMO_APP="$top/build/deb/src/build/tests/apps/counter" \
	tests/demo.sh
pkg-config --exists ckpt || { echo "deb_check: ckpt.pc not found" >&2; exit 1; }

step "dpkg -r"
dpkg -r ckpt-dev ckpt
removed=1
! dpkg-query -W -f='${Status}' ckpt 2>/dev/null | grep -q 'ok installed'
step "done"
