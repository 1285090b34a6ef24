# ckpt top-level Makefile. Each part adds its own rules in <dir>/build.mk;
# this file holds the shared flags, the preload library and install.

ARCH ?= $(shell uname -m)
CC ?= gcc
VERSION := 0.1.0
PREFIX ?= /usr/local

BUILD := build
# Cross-build (make ARCH=aarch64 on another host): docs/porting.md.
ifneq ($(ARCH),$(shell uname -m))
CROSS_COMPILE ?= $(ARCH)-linux-gnu-
CC := $(CROSS_COMPILE)gcc
BUILD := build/$(ARCH)
endif
OBJCOPY := $(CROSS_COMPILE)objcopy
READELF := $(CROSS_COMPILE)readelf
OBJDUMP := $(CROSS_COMPILE)objdump
BIN := $(BUILD)/bin
LIBDIR := $(BUILD)/lib/ckpt
OBJ := $(BUILD)/obj

WARN := -Wall -Wextra -Werror
CFLAGS ?= -O2 -g
CKPT_CFLAGS := $(CFLAGS) $(WARN) -std=gnu11 -D_GNU_SOURCE -Iinclude \
	-DCKPT_VERSION=\"$(VERSION)\" -DCKPT_ARCH_$(subst -,_,$(ARCH))=1

# protocol/: the wire protocol's client side, under everything else: it
# goes into libckpt.so, the coordinator and every tool.
CLIENT_SRCS := $(wildcard protocol/client*.c)
CLIENT_OBJS := $(patsubst %,$(OBJ)/app/%.o,$(CLIENT_SRCS))
# The command-line tools' helpers (control/tool_common.c) on top of it.
TOOL_OBJS := $(OBJ)/app/control/tool_common.c.o $(CLIENT_OBJS)

# libckpt.so: the preload library, its wrappers and virtual pids.
PRELOAD_SRCS := $(wildcard libckpt-preload/*.c wrappers/*.c vpid/*.c) \
	$(wildcard libckpt-preload/arch/$(ARCH)/*.c) \
	$(wildcard libckpt-preload/arch/$(ARCH)/*.S) $(CLIENT_SRCS)
PRELOAD_OBJS := $(patsubst %,$(OBJ)/pic/%.o,$(PRELOAD_SRCS))

.PHONY: all install install-runtime install-dev deb deb-check test bench clean kernel-check demo check
all: $(LIBDIR)/libckpt.so

$(OBJ)/pic/%.c.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CKPT_CFLAGS) -fPIC -fvisibility=hidden -fdata-sections -MMD -MP -c $< -o $@

$(OBJ)/pic/%.S.o: %.S
	@mkdir -p $(dir $@)
	$(CC) $(CKPT_CFLAGS) -fPIC -MMD -MP -c $< -o $@

$(OBJ)/app/%.c.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CKPT_CFLAGS) -MMD -MP -c $< -o $@

# zstd (Debian's libzstd-dev) is linked in statically and kept private
# (--exclude-libs): no libzstd.so for every launched program to load, no
# clash with a program's own zstd.
LIBZSTD_A ?= $(shell $(CC) -print-file-name=libzstd.a)

# The large arrays apart from the small variables (bss_layout.sh says why).
BSS_LAYOUT := $(OBJ)/pic/libckpt-bss.ld

$(BSS_LAYOUT): $(PRELOAD_OBJS) libckpt-preload/bss_layout.sh
	@mkdir -p $(dir $@)
	sh libckpt-preload/bss_layout.sh $(OBJDUMP) $(PRELOAD_OBJS) > $@.tmp
	mv $@.tmp $@

$(LIBDIR)/libckpt.so: $(PRELOAD_OBJS) $(BSS_LAYOUT)
	@mkdir -p $(dir $@)
	$(CC) -shared -pthread -Wl,-z,defs -Wl,-z,now -Wl,-soname,libckpt.so \
		-Wl,--exclude-libs,ALL -Wl,-T,$(BSS_LAYOUT) \
		-o $@ $(PRELOAD_OBJS) $(LIBZSTD_A) -ldl

-include $(sort $(wildcard */build.mk))
-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

# Man pages (docs/man) and bash completion (dist/bash-completion: one
# copy per tool name, as bash-completion loads them on demand).
MANDIR ?= $(PREFIX)/share/man
COMPLETIONDIR ?= $(PREFIX)/share/bash-completion/completions
TOOL_NAMES := ckpt_launch ckpt_command ckpt_coordinator ckpt_restart \
	ckpt_inspect ckpt_check

install: install-runtime install-dev

# Debian's ckpt: the tools, libckpt, man pages, completion.
install-runtime: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/ckpt
	install -m 0755 $(wildcard $(BIN)/*) $(DESTDIR)$(PREFIX)/bin/
	cp -a $(LIBDIR)/. $(DESTDIR)$(PREFIX)/lib/ckpt/
	install -d $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man7 \
		$(DESTDIR)$(COMPLETIONDIR)
	install -m 0644 $(wildcard docs/man/*.1) $(DESTDIR)$(MANDIR)/man1/
	install -m 0644 $(wildcard docs/man/*.7) $(DESTDIR)$(MANDIR)/man7/
	for t in $(TOOL_NAMES); do install -m 0644 dist/bash-completion/ckpt \
		$(DESTDIR)$(COMPLETIONDIR)/$$t || exit 1; done
	# the Slurm batch script of docs/slurm.md
	install -d $(DESTDIR)$(PREFIX)/share/ckpt/slurm
	install -m 0755 dist/slurm/ckpt_job.sbatch dist/slurm/ckpt_mpi_job.sh \
		$(DESTDIR)$(PREFIX)/share/ckpt/slurm/
	# the JSON schemas of the --json outputs (docs/schemas)
	install -d $(DESTDIR)$(PREFIX)/share/ckpt/schemas
	install -m 0644 $(wildcard docs/schemas/*.json) \
		$(DESTDIR)$(PREFIX)/share/ckpt/schemas/
	install -d $(DESTDIR)$(PREFIX)/share/ckpt/gdb
	sed 's|@CKPT_BINDIR@|$(PREFIX)/bin|' dist/gdb/ckpt-gdb.py \
		> $(DESTDIR)$(PREFIX)/share/ckpt/gdb/ckpt-gdb.py

# Debian's ckpt-dev: the in-process API (include/ckpt.h, header only:
# it looks libckpt up at run time, so ckpt.pc names no library of ckpt;
# -ldl for a glibc older than 2.34), the control API (ckpt/control.h,
# libckpt-control.a) and the format and protocol headers.
install-dev: all
	install -d $(DESTDIR)$(PREFIX)/include/ckpt \
		$(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 0644 include/ckpt.h $(DESTDIR)$(PREFIX)/include/ckpt.h
	install -m 0644 $(wildcard include/ckpt/*.h) \
		$(DESTDIR)$(PREFIX)/include/ckpt/
	install -m 0644 $(BUILD)/lib/libckpt-control.a $(DESTDIR)$(PREFIX)/lib/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' \
		dist/pkgconfig/ckpt.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/ckpt.pc

# The Debian packages ckpt and ckpt-dev (debian/), built from a copy of
# the tree into $(BUILD)/deb; not part of make test (a full build).
deb:
	rm -rf $(BUILD)/deb && mkdir -p $(BUILD)/deb/src
	git ls-files -z | xargs -0 cp --parents -t $(BUILD)/deb/src
	cd $(BUILD)/deb/src && dpkg-buildpackage -us -uc -b

# CI: build the packages, install them into this root (only with CI=true
# or DEB_CHECK_FLAGS=--i-mean-it), run the demo from /usr/bin, lintian,
# compare with make install, remove them (tests/deb_check.sh).
deb-check:
	tests/deb_check.sh $(DEB_CHECK_FLAGS)

clean:
	rm -rf $(BUILD)

demo: all
	tests/demo.sh

# The whole suite: the userspace tests, with the kernel module's check
# under QEMU beside them (it mostly waits for its guest; its output is
# printed when both are done, and either failing fails check). The
# suite's own load limits are unchanged: every wait is bounded.
KCHECK_LOG := $(BUILD)/kernel-check.log
check: all test-apps
	@mkdir -p $(BUILD)
	@rm -f $(KCHECK_LOG) $(KCHECK_LOG).rc
	@echo "make check: kernel-check runs beside the tests (log: $(KCHECK_LOG))"
	@( $(MAKE) --no-print-directory kernel-check > $(KCHECK_LOG) 2>&1; \
	   echo $$? > $(KCHECK_LOG).rc ) & kpid=$$!; \
	$(MAKE) --no-print-directory test; trc=$$?; \
	wait $$kpid; echo "----- make kernel-check -----"; cat $(KCHECK_LOG); \
	krc=$$(cat $(KCHECK_LOG).rc 2>/dev/null || echo 1); \
	echo "make check: tests exit $$trc, kernel-check exit $$krc"; \
	[ "$$trc" = 0 ] && [ "$$krc" = 0 ]
