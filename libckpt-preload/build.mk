# The tools of libckpt-preload/launch/ (the library itself is built by
# the top-level Makefile): ckpt_launch, which starts a program with
# libckpt.so preloaded, and ckpt_check, the machine probe
# (docs/ckpt_check.md), which shares ckpt_launch's defaults (protocol
# client), the restart side's CPU feature code and libckpt's ckpt_accel
# probe.

all: $(BIN)/ckpt_launch

$(BIN)/ckpt_launch: $(OBJ)/app/libckpt-preload/launch/ckpt_launch.c.o \
		$(OBJ)/app/libckpt-preload/launch/setid_exec.c.o $(TOOL_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^

CHECK_SRCS := $(wildcard libckpt-preload/launch/check*.c) \
	libckpt-preload/launch/ckpt_check.c libckpt-preload/accel.c \
	$(wildcard restart/arch/$(ARCH)/*.c)
CHECK_OBJS := $(patsubst %,$(OBJ)/app/%.o,$(CHECK_SRCS)) \
	$(patsubst %,$(OBJ)/app/%.o,$(CLIENT_SRCS))

all: $(BIN)/ckpt_check

$(BIN)/ckpt_check: $(CHECK_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^
