# SPDX-License-Identifier: LGPL-2.1-or-later
"""Restart latency of a two-host computation (tests/apps/udp_backlog.c:
sender on netns host a, receiver on b, dozens of datagrams queued at b):
the time from starting both hosts' ckpt_restart (--peer-hosts) to the
sender's first line after the restart, a baseline ckpt_restart (argv[1],
e.g. a build of an older commit) against this tree's, alternated in one
run on the same images. Needs root (network namespaces).

    sudo python3 bench/bench_udp_hosts.py OTHER/build/bin/ckpt_restart
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(
    __file__)), "..", "tests"))
import test_udp_hosts as T  # noqa: E402
from ckpt_harness import tool  # noqa: E402
from netns_hosts import Hosts  # noqa: E402

builds = {"baseline": sys.argv[1], "this": tool("ckpt_restart")}
h = Hosts(2)
try:
    a, b = h.names
    progs = T.programs(h)
    runs, queued, _ = T.checkpoint_and_kill(h, progs)
    imgs = {}
    for host in (a, b):
        d = h.dir_of(host)
        imgs[host] = [os.path.join(d, f) for f in os.listdir(d)
                      if f.startswith("ckpt_") and not f.endswith(".sh")
                      and os.path.isfile(os.path.join(d, f))]
    print("queued", queued, "images", imgs, flush=True)
    res = {k: [] for k in builds}
    for trial in range(4):
        for name, exe in builds.items():
            h.fresh_coordinator()
            for tag in ("send", "recv"):
                os.truncate(runs[tag][0], 0)
            t0 = time.monotonic()
            ps = [h.start(host, [exe, "--coord", h.coord, "--peer-hosts",
                                 h.addrs[1 - i]] + imgs[host], name + host)
                  for i, host in enumerate((a, b))]
            while os.path.getsize(runs["send"][0]) == 0:
                assert time.monotonic() - t0 < 60, ps[0].stderr_text()
                time.sleep(0.005)
            res[name].append(time.monotonic() - t0)
            h.command("--kill", check=False, timeout=20)
            for p in ps:
                p.sigkill()
            print(name, "%.3f" % res[name][-1], os.getloadavg(), flush=True)
    for k, v in res.items():
        v.sort()
        print(k, "median %.3f" % v[len(v) // 2], v)
    print("ratio this/baseline (medians) %.2f" % (
        sorted(res["this"])[2] / sorted(res["baseline"])[2]))
finally:
    h.close()
