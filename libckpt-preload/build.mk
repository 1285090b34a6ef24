# ckpt_launch, which starts a program with libckpt.so preloaded (the
# library itself is built by the top-level Makefile).

all: $(BIN)/ckpt_launch

$(BIN)/ckpt_launch: $(OBJ)/app/libckpt-preload/launch/ckpt_launch.c.o \
		$(OBJ)/app/libckpt-preload/launch/setid_exec.c.o $(TOOL_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^
