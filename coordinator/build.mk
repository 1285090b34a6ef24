# ckpt_coordinator, ckpt_command and ckpt_launch. The client library
# (coordinator/client*.c) also goes into libckpt.so via the top Makefile.

COORD_CLIENT_OBJS := $(patsubst %,$(OBJ)/app/%.o,$(CLIENT_SRCS))
COORD_TOOL_OBJS := $(OBJ)/app/coordinator/tool_common.c.o $(COORD_CLIENT_OBJS)

COORD_DAEMON_SRCS := coordinator/coordinator.c coordinator/conn.c \
	coordinator/listener.c coordinator/checkpoint_round.c \
	coordinator/commands.c coordinator/restart_script.c \
	coordinator/round_members.c coordinator/restart_groups.c \
	coordinator/orphan_images.c \
	coordinator/round_timeouts.c coordinator/auth_handshake.c \
	coordinator/conn_guard.c coordinator/coord_log.c \
	coordinator/peer_pid.c coordinator/sanitize.c
COORD_DAEMON_OBJS := $(patsubst %,$(OBJ)/app/%.o,$(COORD_DAEMON_SRCS)) \
	$(COORD_CLIENT_OBJS)

all: $(BIN)/ckpt_coordinator $(BIN)/ckpt_command $(BIN)/ckpt_launch

$(BIN)/ckpt_coordinator: $(COORD_DAEMON_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^

$(BIN)/ckpt_command: $(OBJ)/app/coordinator/ckpt_command.c.o \
		$(OBJ)/app/coordinator/sanitize.c.o $(COORD_TOOL_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^

$(BIN)/ckpt_launch: $(OBJ)/app/libckpt-preload/launch/ckpt_launch.c.o \
		$(OBJ)/app/libckpt-preload/launch/setid_exec.c.o \
		$(COORD_TOOL_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^
