# Tools of libckpt-preload/launch/ besides ckpt_launch (which
# coordinator/build.mk links). ckpt_check, the machine probe
# (docs/ckpt_check.md), shares ckpt_launch's defaults (coordinator client), the restart side's CPU
# feature code and libckpt's ckpt_accel probe.

CHECK_SRCS := $(wildcard libckpt-preload/launch/check*.c) \
	libckpt-preload/launch/ckpt_check.c libckpt-preload/accel.c \
	$(wildcard restart/arch/$(ARCH)/*.c)
CHECK_OBJS := $(patsubst %,$(OBJ)/app/%.o,$(CHECK_SRCS)) \
	$(patsubst %,$(OBJ)/app/%.o,$(CLIENT_SRCS))

all: $(BIN)/ckpt_check

$(BIN)/ckpt_check: $(CHECK_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^
