# Test programs and the test suite. Included by the top-level Makefile.

# tests/apps/mpi_*.c need mpicc: tests/test_mpi.py builds them itself
TEST_APP_SRCS := $(filter-out tests/apps/mpi_%.c,$(wildcard tests/apps/*.c))
TEST_APPS := $(patsubst tests/apps/%.c,$(BUILD)/tests/apps/%,$(TEST_APP_SRCS))

.PHONY: test-apps realprogs
all: test-apps
test-apps: $(TEST_APPS)

$(BUILD)/tests/apps/%: tests/apps/%.c $(wildcard tests/apps/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CKPT_CFLAGS) -pthread $< -o $@

# Every wait in the suite is bounded; tests/conftest.py also puts a hard
# per-test limit (CKPT_TEST_TIMEOUT seconds, default 900). When Debian's
# python3-pytest-timeout is installed it adds its own limit on top.
PYTEST_TIMEOUT_ARGS := $(shell /usr/bin/python3 -c 'import pytest_timeout' \
	2>/dev/null && echo --timeout=1200)

# Two workers (CKPT_TEST_JOBS; 1 runs the tests one after the other) when
# Debian's python3-pytest-xdist is installed: most of a test's time is
# waiting (for a line, a checkpoint, a restart), and the suite is written
# so that tests do not meet (each its own coordinator address, directory,
# network namespaces, ports chosen by the kernel); the suite passes beside
# two CPU hogs as well.
CKPT_TEST_JOBS ?= 2
PYTEST_JOBS_ARGS := $(shell [ "$(CKPT_TEST_JOBS)" -gt 1 ] 2>/dev/null && \
	/usr/bin/python3 -c 'import xdist' 2>/dev/null && \
	echo '-n $(CKPT_TEST_JOBS) --dist loadgroup')

test: all
	/usr/bin/python3 -m pytest -v --durations=40 $(PYTEST_TIMEOUT_ARGS) \
		$(PYTEST_JOBS_ARGS) --ignore=tests/cross tests

# Only the real-program suite (docs/architecture.md, "Real programs");
# `make test` runs it too.
realprogs: all
	/usr/bin/python3 -m pytest -v $(PYTEST_TIMEOUT_ARGS) tests/realprogs

# Fuzzing targets (make fuzz): tests/fuzz/build.mk
include tests/fuzz/build.mk
include tests/cross/build.mk
