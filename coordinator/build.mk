# ckpt_coordinator, the daemon. It speaks the protocol through protocol/.

COORD_DAEMON_SRCS := coordinator/coordinator.c coordinator/conn.c \
	coordinator/listener.c coordinator/checkpoint_round.c \
	coordinator/commands.c coordinator/json_replies.c \
	coordinator/restart_script.c \
	coordinator/round_members.c coordinator/restart_groups.c \
	coordinator/orphan_images.c coordinator/snapshots.c \
	coordinator/round_timeouts.c coordinator/auth_handshake.c \
	coordinator/conn_guard.c coordinator/coord_log.c \
	coordinator/peer_pid.c coordinator/tracer.c coordinator/proc_files.c \
	coordinator/conn_events.c coordinator/image_twins.c \
	protocol/sanitize.c
COORD_DAEMON_OBJS := $(patsubst %,$(OBJ)/app/%.o,$(COORD_DAEMON_SRCS)) \
	$(CLIENT_OBJS)

all: $(BIN)/ckpt_coordinator

$(BIN)/ckpt_coordinator: $(COORD_DAEMON_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^
