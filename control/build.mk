# libckpt-control (include/ckpt/control.h): what ckpt_command does, as a
# static library a tool links; and ckpt_command, its thin user.

CONTROL_LIB := $(BUILD)/lib/libckpt-control.a
CONTROL_OBJS := $(OBJ)/app/control/control.c.o \
	$(OBJ)/app/control/template_orders.c.o $(TOOL_OBJS)

all: $(CONTROL_LIB) $(BIN)/ckpt_command

$(CONTROL_LIB): $(CONTROL_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@
	$(AR) rcs $@ $^

$(BIN)/ckpt_command: $(OBJ)/app/control/ckpt_command.c.o \
		$(OBJ)/app/control/checkpoint_progress.c.o \
		$(OBJ)/app/control/snapshot_files.c.o \
		$(OBJ)/app/control/snapshot_templates.c.o \
		$(OBJ)/app/protocol/sanitize.c.o $(CONTROL_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -pthread
