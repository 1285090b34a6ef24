# The benchmark: `make bench` (not part of `make test`).

BENCH_APPS := $(BUILD)/bench/fill_idle $(BUILD)/bench/lock_cost \
	      $(BUILD)/bench/tcp_conns $(BUILD)/bench/zero_scan \
	      $(BUILD)/bench/wrapped_calls $(BUILD)/bench/lock_order_cost \
	      $(BUILD)/bench/snapshot_api

.PHONY: bench-apps
all: bench-apps
bench-apps: $(BENCH_APPS)

$(BUILD)/bench/fill_idle: bench/fill_idle.c
	@mkdir -p $(dir $@)
	$(CC) $(CKPT_CFLAGS) $< -o $@

$(BUILD)/bench/lock_cost: bench/lock_cost.c
	@mkdir -p $(dir $@)
	$(CC) $(CKPT_CFLAGS) -pthread $< -o $@

$(BUILD)/bench/tcp_conns: bench/tcp_conns.c
	@mkdir -p $(dir $@)
	$(CC) $(CKPT_CFLAGS) $< -o $@

$(BUILD)/bench/zero_scan: bench/zero_scan.c include/ckpt/hash.h
	@mkdir -p $(dir $@)
	$(CC) $(CKPT_CFLAGS) $< -o $@

$(BUILD)/bench/wrapped_calls: bench/wrapped_calls.c
	@mkdir -p $(dir $@)
	$(CC) $(CKPT_CFLAGS) -pthread $< -o $@

$(BUILD)/bench/lock_order_cost: bench/lock_order_cost.c
	@mkdir -p $(dir $@)
	$(CC) $(CKPT_CFLAGS) -pthread $< -o $@

$(BUILD)/bench/snapshot_api: bench/snapshot_api.c $(BUILD)/lib/libckpt-control.a
	@mkdir -p $(dir $@)
	$(CC) $(CKPT_CFLAGS) $^ -o $@ -pthread

bench: all
	/usr/bin/python3 bench/bench.py
