# make cross-check: aarch64 under qemu-user (tests/cross). Included by
# tests/build.mk. .ci/install-deps installs the cross packages only when
# the archive has them: without them cross-check says what is missing
# and is skipped, not failed. Bounded: each test at most
# CROSS_TEST_TIMEOUT seconds (tests/conftest.py), each qemu run under
# timeout -s KILL (tests/cross/test_aarch64.py), killed with its whole
# session.
.PHONY: cross cross-check
CROSS_TEST_TIMEOUT ?= 300
CROSS_GCC := aarch64-linux-gnu-gcc
CROSS_MISSING := $(strip \
	$(if $(shell command -v $(CROSS_GCC) 2>/dev/null),,gcc-aarch64-linux-gnu) \
	$(if $(wildcard /usr/aarch64-linux-gnu/lib/libc.so.6),,libc6-dev-arm64-cross) \
	$(if $(shell command -v qemu-aarch64 2>/dev/null),,qemu-user) \
	$(if $(filter /%,$(shell $(CROSS_GCC) -print-file-name=libzstd.a 2>/dev/null)),,libzstd-dev:arm64))

cross:
	$(MAKE) ARCH=aarch64 all test-apps

ifeq ($(CROSS_MISSING),)
cross-check: all test-apps cross
	CKPT_TEST_TIMEOUT=$(CROSS_TEST_TIMEOUT) /usr/bin/python3 -m pytest -v \
		--durations=0 $(PYTEST_TIMEOUT_ARGS) tests/cross
else
cross-check:
	@echo "cross-check: skipped: missing $(CROSS_MISSING) (.ci/install-deps installs them when the archive has them)"
endif
