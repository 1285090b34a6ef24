# ckpt_command, which sends one command to a coordinator.

all: $(BIN)/ckpt_command

$(BIN)/ckpt_command: $(OBJ)/app/control/ckpt_command.c.o \
		$(OBJ)/app/protocol/sanitize.c.o $(TOOL_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^
