# make cross-check: aarch64 under qemu-user (tests/cross). Included by
# tests/build.mk.
.PHONY: cross cross-check
cross:
	$(MAKE) ARCH=aarch64 all test-apps

cross-check: all test-apps cross
	/usr/bin/python3 -m pytest -v $(PYTEST_TIMEOUT_ARGS) tests/cross
