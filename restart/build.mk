# restart/: ckpt_restart, ckpt_inspect, the freestanding loader blob and
# the loader's self-test. Included by the top-level Makefile.
#
# Architecture files: restart/arch/$(ARCH)/*.S and *.h belong to the
# loader (freestanding); restart/arch/$(ARCH)/*.c to the tools (glibc).

RESTART_ARCH := restart/arch/$(ARCH)

# --- the loader blob -------------------------------------------------------
# Freestanding, position-independent and free of dynamic relocations: the
# blob runs wherever ckpt_restart places it, with nothing to relocate it.
# An architecture whose linker leaves GOT slots to relocate (aarch64) sets
# in its arch.mk the linker script, sections and relocation types its
# start.S applies itself (docs/porting.md).
LOADER_LDS := restart/loader/blob.lds
BLOB_SECTIONS := -j .blob_header -j .text -j .rodata -j .data
BLOB_SELF_RELOCS := NO_RELOCATION_IS_APPLIED
-include $(RESTART_ARCH)/arch.mk
LOADER_CFLAGS := -O2 -g -std=gnu11 $(WARN) -ffreestanding -nostdlib \
	-fno-stack-protector -fPIE -fvisibility=hidden -fno-builtin \
	-fno-asynchronous-unwind-tables -fno-unwind-tables \
	-fno-tree-loop-distribute-patterns -Iinclude -I$(RESTART_ARCH) \
	$(LOADER_ARCH_CFLAGS)
LOADER_LDFLAGS := -nostdlib -static-pie -Wl,-T,$(LOADER_LDS) \
	-Wl,-z,noexecstack -Wl,-z,norelro -Wl,--build-id=none \
	$(LOADER_ARCH_LDFLAGS)

LOADER_SRCS := $(wildcard restart/loader/*.c) $(wildcard $(RESTART_ARCH)/*.S)
LOADER_OBJS := $(patsubst %,$(OBJ)/freestanding/%.o,$(LOADER_SRCS))
LOADER_ELF := $(OBJ)/restart/ckpt_restart_loader.elf

$(OBJ)/freestanding/%.c.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(LOADER_CFLAGS) -MMD -MP -c $< -o $@

$(OBJ)/freestanding/%.S.o: %.S
	@mkdir -p $(dir $@)
	$(CC) $(LOADER_CFLAGS) -MMD -MP -c $< -o $@

# Link, refuse any dynamic relocation the blob does not apply itself,
# then flatten to the blob.
# $(1): output blob, $(2): ELF, $(3): objects
define link_blob
	@mkdir -p $(dir $(1)) $(dir $(2))
	$(CC) $(LOADER_LDFLAGS) -o $(2) $(3)
	@if $(READELF) -rW $(2) | grep -E '^[0-9a-f]+ +[0-9a-f]+ ' | \
		grep -vqE '$(BLOB_SELF_RELOCS)'; then \
		echo "error: $(2) has dynamic relocations:" >&2; \
		$(READELF) -rW $(2) >&2; rm -f $(2); exit 1; fi
	$(OBJCOPY) -O binary $(BLOB_SECTIONS) $(2) $(1)
endef

# The zstd decompressor of Debian's static libzstd goes into the blob
# (restart/loader/extent_decode.c).
$(LIBDIR)/ckpt_restart_loader.bin: $(LOADER_OBJS) $(LOADER_LDS)
	$(call link_blob,$@,$(LOADER_ELF),$(LOADER_OBJS) $(LIBZSTD_A))

# --- ckpt_restart and ckpt_inspect ----------------------------------------
RESTART_COMMON_SRCS := restart/image_check.c restart/image_links.c \
	restart/image_trust.c \
	restart/image_fields.c $(wildcard $(RESTART_ARCH)/*.c)
RESTART_COMMON_OBJS := $(patsubst %,$(OBJ)/app/%.o,$(RESTART_COMMON_SRCS))
# The coordinator client (protocol/client*.c); overridable for testing.
RESTART_CLIENT_OBJS ?= $(CLIENT_OBJS)

RESTART_OBJS := $(OBJ)/app/restart/ckpt_restart.c.o \
	$(OBJ)/app/restart/loader_exec.c.o \
	$(OBJ)/app/restart/emulator_exec.c.o \
	$(OBJ)/app/restart/memory_mode.c.o \
	$(OBJ)/app/restart/process_tree.c.o \
	$(OBJ)/app/restart/restart_pipes.c.o \
	$(OBJ)/app/restart/restart_files.c.o \
	$(OBJ)/app/restart/restart_deleted_files.c.o \
	$(OBJ)/app/restart/restart_tmpfiles.c.o \
	$(OBJ)/app/restart/restart_created.c.o \
	$(OBJ)/app/restart/restart_shm.c.o \
	$(OBJ)/app/restart/restart_fifos.c.o \
	$(OBJ)/app/restart/restart_listeners.c.o \
	$(OBJ)/app/restart/restart_tcp.c.o \
	$(OBJ)/app/restart/restart_tcp_rest.c.o \
	$(OBJ)/app/restart/restart_tcp_hosts.c.o \
	$(OBJ)/app/restart/meet_auth.c.o \
	$(OBJ)/app/restart/host_map.c.o \
	$(OBJ)/app/restart/image_set.c.o \
	$(OBJ)/app/restart/restart_udp.c.o \
	$(OBJ)/app/restart/restart_udp_hosts.c.o \
	$(OBJ)/app/restart/restart_sockets.c.o \
	$(OBJ)/app/restart/restart_unix_dgram.c.o \
	$(OBJ)/app/restart/restart_ptys.c.o $(RESTART_COMMON_OBJS)

$(BIN)/ckpt_restart: $(RESTART_OBJS) $(RESTART_CLIENT_OBJS)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ -lzstd

# ckpt_inspect's backtraces: libunwind (remote unwinding over the image),
# libelf (the mapped files' symbols and unwind tables), libdw (their
# source lines).
INSPECT_SRCS := $(wildcard restart/inspect_*.c)
INSPECT_LIBS := -lunwind-x86_64 -lunwind -ldw -lelf -lzstd
$(BIN)/ckpt_inspect: $(OBJ)/app/restart/ckpt_inspect.c.o \
		$(patsubst %,$(OBJ)/app/%.o,$(INSPECT_SRCS)) $(RESTART_COMMON_OBJS)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(INSPECT_LIBS)

# --- the self-test: a synthetic image of a tiny freestanding program ------
SELFTEST_DIR := $(BUILD)/selftest/restart
SELFTEST_SRCS := $(wildcard restart/selftest/restored*.c)
SELFTEST_OBJS := $(patsubst %,$(OBJ)/freestanding/%.o,$(SELFTEST_SRCS)) \
	$(OBJ)/freestanding/restart/loader/string.c.o

$(SELFTEST_DIR)/restored.bin: $(SELFTEST_OBJS) restart/loader/blob.lds
	$(call link_blob,$@,$(OBJ)/restart/selftest_restored.elf,$(SELFTEST_OBJS))

$(SELFTEST_DIR)/mkimage: $(OBJ)/app/restart/selftest/mkimage.c.o
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^

.PHONY: restart
restart: $(BIN)/ckpt_restart $(LIBDIR)/ckpt_restart_loader.bin
# The self-test's synthetic program is x86_64 code; so far ckpt_inspect
# unwinds x86_64 threads only (libunwind-x86_64; docs/porting.md).
ifeq ($(ARCH),x86_64)
restart: $(SELFTEST_DIR)/restored.bin $(SELFTEST_DIR)/mkimage \
	$(BIN)/ckpt_inspect
endif
all: restart
