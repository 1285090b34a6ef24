# aarch64 loader build (included by restart/build.mk).
# GCC's default outline atomics call libgcc helpers the freestanding
# blob does not link: inline sequences instead.
LOADER_ARCH_CFLAGS := -mno-outline-atomics
# blob.lds puts the whole blob in one segment; ckpt_restart maps it with
# the right permissions per part (restart/loader_exec.c).
LOADER_ARCH_LDFLAGS := -Wl,--no-warn-rwx-segments
# GNU ld does not relax the static libzstd's GOT loads of its stack
# canary (__stack_chk_guard): the GOT slot needs R_AARCH64_RELATIVE. This
# script keeps .rela.dyn inside the blob, and start.S applies it (those
# relocations only) before anything else runs.
LOADER_LDS := restart/arch/aarch64/blob.lds
BLOB_SECTIONS += -j .rela.dyn
BLOB_SELF_RELOCS := R_AARCH64_RELATIVE
