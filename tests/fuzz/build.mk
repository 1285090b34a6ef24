# Fuzzing targets: libFuzzer with clang (Debian: clang, libclang-rt-14-dev).
# Not part of `all`. `make fuzz` builds and runs every target of
# FUZZ_TARGETS for FUZZ_SECONDS each (tests/fuzz/run.sh); a target NAME is
# built from tests/fuzz/fuzz_NAME.c plus FUZZ_SRCS_NAME into
# build/fuzz/fuzz_NAME, its seeds are tests/fuzz/seeds/NAME/ and whatever
# its build/fuzz/seeds-NAME rule writes. Add a target by appending to
# FUZZ_TARGETS and defining FUZZ_SRCS_NAME (and a seeds rule if any).

FUZZ_CC ?= clang
FUZZ_SECONDS ?= 60
FUZZ_DIR := $(BUILD)/fuzz
FUZZ_CFLAGS := -g -O1 -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined -std=gnu11 -D_GNU_SOURCE -Iinclude \
	-DCKPT_VERSION=\"$(VERSION)\" \
	-DCKPT_ARCH_$(subst -,_,$(ARCH))=1

.PHONY: fuzz

# --- coord_msg: the coordinator's message parser --------------------------
FUZZ_TARGETS += coord_msg
FUZZ_SRCS_coord_msg := coordinator/conn.c coordinator/listener.c \
	coordinator/checkpoint_round.c coordinator/commands.c \
	coordinator/round_members.c coordinator/restart_groups.c \
	coordinator/conn_guard.c \
	coordinator/peer_pid.c protocol/sanitize.c \
	coordinator/round_timeouts.c coordinator/auth_handshake.c \
	coordinator/tracer.c coordinator/proc_files.c coordinator/conn_events.c \
	coordinator/snapshots.c \
	coordinator/json_replies.c coordinator/image_twins.c \
	$(CLIENT_SRCS)

$(FUZZ_DIR)/fuzz_coord_msg: tests/fuzz/fuzz_coord_msg.c \
		$(FUZZ_SRCS_coord_msg) coordinator/coordinator.c \
		$(wildcard coordinator/*.h protocol/*.h include/ckpt/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) tests/fuzz/fuzz_coord_msg.c \
		$(FUZZ_SRCS_coord_msg) -o $@

# Real messages, laid out by include/ckpt/protocol.h itself.
$(FUZZ_DIR)/seeds-coord_msg: tests/fuzz/coord_msg_seeds.c \
		include/ckpt/protocol.h
	@mkdir -p $(FUZZ_DIR)
	$(CC) $(CKPT_CFLAGS) $< -o $(FUZZ_DIR)/coord_msg_seeds
	rm -rf $@ && mkdir -p $@ && $(FUZZ_DIR)/coord_msg_seeds $@

# --- image: the image reader (restart/image_check.c, image_fields.c) -------
FUZZ_TARGETS += image
FUZZ_SRCS_image = $(RESTART_COMMON_SRCS) $(INSPECT_SRCS)

$(FUZZ_DIR)/fuzz_image: tests/fuzz/fuzz_image.c $(FUZZ_SRCS_image) \
		restart/ckpt_inspect.c restart/image_check.h \
		$(wildcard include/ckpt/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -Irestart tests/fuzz/fuzz_image.c \
		$(FUZZ_SRCS_image) -o $@ $(INSPECT_LIBS)

# Small real images (about 45 KiB each) of the loader self-test generator,
# in its variants; the files they map lie beside, in seed-files-image.
FUZZ_IMAGE_SEEDS := plain vdso-code no-vdso cover-top saved-content
$(FUZZ_DIR)/seeds-image: $(SELFTEST_DIR)/mkimage $(SELFTEST_DIR)/restored.bin
	rm -rf $@ $(FUZZ_DIR)/seed-files-image
	mkdir -p $@ $(FUZZ_DIR)/seed-files-image
	for v in $(FUZZ_IMAGE_SEEDS); do \
		$(SELFTEST_DIR)/mkimage --out $@/$$v.img \
			--restored $(SELFTEST_DIR)/restored.bin \
			--datafile $(abspath $(FUZZ_DIR))/seed-files-image/$$v.data \
			$$([ $$v = plain ] || echo --$$v) || exit 1; \
	done

# --- running them ----------------------------------------------------------
# The list is read when the recipe runs, so targets added after this line
# (or in another file) are run too.
fuzz:
	@for t in $(FUZZ_TARGETS); do \
		$(MAKE) --no-print-directory $(FUZZ_DIR)/fuzz_$$t || exit 1; \
		$(MAKE) --no-print-directory -q $(FUZZ_DIR)/seeds-$$t 2>/dev/null; \
		[ $$? = 2 ] || $(MAKE) --no-print-directory \
			$(FUZZ_DIR)/seeds-$$t || exit 1; \
		tests/fuzz/run.sh $$t $(FUZZ_SECONDS) $(FUZZ_DIR) || exit 1; \
	done
