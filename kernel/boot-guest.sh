#!/bin/bash
# Boot the Debian kernel with the test initramfs under QEMU and save the
# serial console. Exit status: qemu's (137 when the timeout killed it).
# Usage: boot-guest.sh KERNEL_ROOT INITRAMFS CONSOLE_LOG
# ACCEL=kvm uses real KVM where the machine has it (not nested PVM).
set -uo pipefail
ROOT=$1 INITRD=$2 LOG=$3
KREL=${ROOT##*/root-}	# fetch-kernel.sh names the root after the release
ACCEL=${ACCEL:-tcg}
TIMEOUT=${CKPT_GUEST_TIMEOUT:-480}	# 62-77 s quiet, over 180 s once loaded (TCG)
CPU=max
[ "$ACCEL" = kvm ] && CPU=host
timeout -s KILL "$TIMEOUT" qemu-system-x86_64 -accel "$ACCEL" -cpu "$CPU" \
	-m 2048 -smp 2 -nographic -no-reboot \
	-kernel "$ROOT/boot/vmlinuz-$KREL" -initrd "$INITRD" \
	-append 'console=ttyS0 panic=-1 quiet transparent_hugepage=madvise' \
	</dev/null >"$LOG" 2>&1
