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
BIN := $(BUILD)/bin
LIBDIR := $(BUILD)/lib/ckpt
OBJ := $(BUILD)/obj

WARN := -Wall -Wextra -Werror
CFLAGS ?= -O2 -g
CKPT_CFLAGS := $(CFLAGS) $(WARN) -std=gnu11 -D_GNU_SOURCE -Iinclude \
	-DCKPT_VERSION=\"$(VERSION)\" -DCKPT_ARCH_$(subst -,_,$(ARCH))=1

CLIENT_SRCS := $(wildcard coordinator/client*.c)

# libckpt.so: the preload library, its wrappers and virtual pids.
PRELOAD_SRCS := $(wildcard libckpt-preload/*.c wrappers/*.c vpid/*.c) \
	$(wildcard libckpt-preload/arch/$(ARCH)/*.c) \
	$(wildcard libckpt-preload/arch/$(ARCH)/*.S) $(CLIENT_SRCS)
PRELOAD_OBJS := $(patsubst %,$(OBJ)/pic/%.o,$(PRELOAD_SRCS))

.PHONY: all install test bench clean kernel-check demo check
all: $(LIBDIR)/libckpt.so

$(OBJ)/pic/%.c.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CKPT_CFLAGS) -fPIC -fvisibility=hidden -MMD -MP -c $< -o $@

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

$(LIBDIR)/libckpt.so: $(PRELOAD_OBJS)
	@mkdir -p $(dir $@)
	$(CC) -shared -pthread -Wl,-z,defs -Wl,-z,now -Wl,-soname,libckpt.so \
		-Wl,--exclude-libs,ALL -o $@ $(PRELOAD_OBJS) $(LIBZSTD_A) -ldl

-include $(sort $(wildcard */build.mk))
-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/ckpt
	install -m 0755 $(wildcard $(BIN)/*) $(DESTDIR)$(PREFIX)/bin/
	cp -a $(LIBDIR)/. $(DESTDIR)$(PREFIX)/lib/ckpt/

clean:
	rm -rf $(BUILD)

demo: all
	tests/demo.sh

# The whole suite: userspace tests, then the kernel module under QEMU.
check: test kernel-check
