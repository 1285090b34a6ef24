# SPDX-License-Identifier: LGPL-2.1-or-later
"""Netlink sockets come back bound to their port id and groups, with
their options and the groups joined by setsockopt: a program asks the
kernel for its links every 100 ms over NETLINK_ROUTE and checks that each
reply carries its request's sequence number and the socket's port id (as
libmnl does: a socket on another port after the restart is a FAIL); it
also holds a NETLINK_KOBJECT_UEVENT socket bound to group 1. A port taken
by another socket at restart is said."""

import os
import re
import socket

import pytest

from ckpt_harness import (app, checkpoint_and_kill, reference_output,
                          restart_to_end, tail_after_progress)

STEPS = 60
ARGV = [app("netlink_route"), str(STEPS), "100"]
STEP = r"^step (\d+) "


def assert_steps_like_native(lines, native):
    """Every step line the same as a native run's: same groups, both
    memberships and NETLINK_EXT_ACK on."""
    want = {int(l.split()[1]): l for l in native if l.startswith("step ")}
    for line in lines:
        assert not line.startswith("FAIL"), line
        if line.startswith("step "):
            assert line == want[int(line.split()[1])], (line, native[1])


@pytest.mark.time_limit(300)
def test_netlink_sockets_keep_port_groups_and_options(session):
    native = reference_output(ARGV)
    assert native[1] == "step 1 links ok groups 1 member 1,1 extack 1", (
        native[:2])
    p = session.launch(ARGV)
    images, seen, before = checkpoint_and_kill(session, p, STEP, 5)
    shown = session.inspect(images[0])
    ports = re.findall(r"bound-socket .*\(netlink port (\d+) groups 0x1[,)]",
                       shown)
    assert len(ports) == 2 and ports[0] != "0", shown
    # the route socket's two setsockopt joins, group 33 among them
    assert re.search(r"\(netlink port \d+ groups 0x1, 2 multicast groups\)",
                     shown), shown
    assert "cannot be restored" not in p.stderr_text(), p.stderr_text()
    r, first = restart_to_end(session, images, STEP, STEPS, seen, before)
    assert_steps_like_native(r.lines(), native)
    assert tail_after_progress(r.lines(), STEP) == \
        tail_after_progress(native, STEP)
    assert "netlink" not in r.stderr_text(), r.stderr_text()


@pytest.mark.time_limit(300)
def test_netlink_port_taken_at_restart_is_said(session):
    """Another socket holds the port at restart: the socket gets a new
    one, the restart says so, and the program sees replies on another
    port (its FAIL: it checks them as libmnl does)."""
    p = session.launch(ARGV)
    images, seen, before = checkpoint_and_kill(session, p, STEP, 5)
    port = int(re.findall(r"\(netlink port (\d+) groups",
                          session.inspect(images[0]))[0])
    holder = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW,
                           socket.NETLINK_ROUTE)
    try:
        holder.bind((port, 0))
        r = session.restart(images)
        rc = r.wait_exit()
    finally:
        holder.close()
    assert re.search(r"ckpt_restart: warning: .*fd \d+: netlink port %d is "
                     r"taken by another socket; the socket gets a new port"
                     % port, r.stderr_text()), r.stderr_text()
    assert rc != 0 and any(l.startswith("FAIL reply") for l in r.lines()), (
        rc, r.lines()[-3:])
