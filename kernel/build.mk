# kernel/: the optional accelerator module, built against Debian's 6.1
# kernel and tested booted in QEMU (never loaded into the host kernel).
# `make kernel-check` fetches the pinned kernel packages into
# $(CKPT_KERNEL_CACHE) (default /var/cache/ckpt-kernel), builds
# ckpt_accel.ko and the guest tests, boots the guest and reports.
kernel-check:
	bash kernel/check.sh
