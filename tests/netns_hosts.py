# SPDX-License-Identifier: LGPL-2.1-or-later
"""Several "hosts" on this machine, for the multi-host tests
(docs/multi-host.md): each host is a network namespace with its own veth
address and its own host name (a UTS namespace per command), all on one
bridge in a hub namespace where the coordinator runs. The addresses
(10.77.0.0/24) exist only inside the namespaces made here; nothing is
routed to or from the machine's own network namespace, and every command
that talks to the coordinator runs inside one of them.

Needs root and iproute2's `ip netns`; Hosts.skip_reason() says why not.
"""

import os
import shlex
import shutil
import signal
import subprocess
import tempfile

import pytest

import ckpt_harness
from ckpt_harness import Proc, run

SUBNET = "10.77.0"
# Runs "$@" with the host name $0 in a new UTS namespace.
WITH_HOSTNAME = 'hostname "$0" && exec "$@"'


def ip(*args, check=True):
    r = run(["ip"] + list(args), 30)
    if check and r.returncode != 0:
        raise AssertionError("ip %s: exit %d: %s" % (
            " ".join(args), r.returncode, r.stderr.strip()))
    return r


class Hosts:
    """A hub namespace (bridge, the coordinator at SUBNET.1) and hosts
    named NAME-a, NAME-b, ... at SUBNET.2, .3, ...; close() undoes it."""

    @staticmethod
    def skip_reason():
        if os.geteuid() != 0:
            return "needs root to create network namespaces"
        for prog in ("ip", "unshare", "hostname"):
            if not shutil.which(prog):
                return "%s is not installed (iproute2, util-linux)" % prog
        if ckpt_harness.missing_core():
            return "ckpt core not built (run make)"
        r = run(["ip", "netns", "list"], 30)
        if r.returncode != 0:
            return "ip netns is unavailable: %s" % r.stderr.strip()
        return None

    def __init__(self, count=2, port=7717):
        tag = "ck%d" % (os.getpid() % 100000)
        self.hub = tag + "-hub"
        self.names = ["%s-%c" % (tag, ord("a") + i) for i in range(count)]
        self.addrs = ["%s.%d" % (SUBNET, i + 2) for i in range(count)]
        self.coord = "%s.1:%d" % (SUBNET, port)
        self.made = []
        self.procs = []
        self.dir = tempfile.mkdtemp(prefix="ckmh-", dir="/tmp")
        self.env = dict(os.environ)
        for var in list(self.env):
            if var.startswith("CKPT_") or var == "LD_PRELOAD":
                del self.env[var]
        self.env["HOME"] = self.dir    # its own secret, made on first use
        self.env["CKPT_COORD"] = self.coord
        try:
            self._build()
        except BaseException:
            self.close()
            raise

    def _build(self):
        ip("netns", "add", self.hub)
        self.made.append(self.hub)
        ip("-n", self.hub, "link", "set", "lo", "up")
        ip("-n", self.hub, "link", "add", "br0", "type", "bridge")
        ip("-n", self.hub, "addr", "add", SUBNET + ".1/24", "dev", "br0")
        ip("-n", self.hub, "link", "set", "br0", "up")
        for i, (name, addr) in enumerate(zip(self.names, self.addrs)):
            ip("netns", "add", name)
            self.made.append(name)
            port = "p%d" % i
            ip("link", "add", port, "netns", self.hub, "type", "veth",
               "peer", "name", "eth0", "netns", name)
            ip("-n", self.hub, "link", "set", port, "master", "br0", "up")
            ip("-n", name, "link", "set", "lo", "up")
            ip("-n", name, "addr", "add", addr + "/24", "dev", "eth0")
            ip("-n", name, "link", "set", "eth0", "up")

    def on(self, host, argv):
        """argv run on host (its network namespace and host name)."""
        return ["ip", "netns", "exec", host, "unshare", "--uts", "sh",
                "-c", WITH_HOSTNAME, host] + list(argv)

    def host_cmd(self):
        """The CKPT_HOST_CMD template that runs a command on {host}."""
        return shlex.join(self.on("{host}", [])).replace("'{host}'",
                                                         "{host}")

    def dir_of(self, host):
        d = os.path.join(self.dir, host)
        os.makedirs(d, 0o700, exist_ok=True)
        return d

    def start(self, host, argv, name, env=None, **kw):
        p = Proc(self.on(host, argv), env or self.env, name,
                 preexec_fn=os.setsid, **kw)
        self.procs.append(p)
        return p

    def start_coordinator(self):
        p = self.start(self.hub, [ckpt_harness.tool("ckpt_coordinator"),
                                  "--coord", self.coord], "coordinator")
        self.coordinator = p
        # listening once a command gets an answer
        for _ in range(100):
            r = self.command("--list", check=False, timeout=30)
            if r.returncode == 0:
                return p
            assert p.alive(), "coordinator exited: %s" % p.stderr_text()
        raise AssertionError("coordinator at %s never answered: %s" % (
            self.coord, r.stderr))

    def fresh_coordinator(self):
        """The coordinator started again for a restart after the
        computation was killed, as a user does: the one that saw the
        processes exits 2 s after the last one left (sooner than a
        loaded machine gets through a test's restarts), and a ckpt_restart
        on another host cannot start it at the hub's address. A new one
        that never had a process stays 60 s."""
        old = getattr(self, "coordinator", None)
        if old is not None and old.alive():
            self.command("--quit", check=False, timeout=20)
            old.wait_exit(20)
        return self.start_coordinator()

    def command(self, *args, check=True, timeout=ckpt_harness.COMMAND_TIMEOUT):
        """ckpt_command run in the hub namespace."""
        r = run(self.on(self.hub, [ckpt_harness.tool("ckpt_command"),
                                   "--coord", self.coord] + list(args)),
                timeout, env=self.env)
        assert not check or r.returncode == 0, (
            "ckpt_command %s: exit %d: %s" % (" ".join(args), r.returncode,
                                              r.stderr))
        return r

    def launch(self, host, argv, **kw):
        env = dict(self.env, CKPT_DIR=self.dir_of(host))
        return self.start(host, [ckpt_harness.tool("ckpt_launch"),
                                 "--coord", self.coord, "--"] + list(argv),
                          "%s on %s" % (os.path.basename(argv[0]), host),
                          env=env, **kw)

    def close(self):
        if self.procs and self.made:
            try:
                self.command("--kill", check=False, timeout=20)
                self.command("--quit", check=False, timeout=20)
            except AssertionError:
                pass
        for p in self.procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass
            try:
                p.sigkill()
            except AssertionError:
                pass
        for ns in reversed(self.made):
            ip("netns", "del", ns, check=False)
        self.made = []
        shutil.rmtree(self.dir, ignore_errors=True)


def hosts_fixture(count):
    """The body of a pytest fixture: Hosts(count), skipped when they
    cannot be made, closed after the test."""
    why = Hosts.skip_reason()
    if why:
        pytest.skip(why)
    h = Hosts(count)
    try:
        yield h
    finally:
        h.close()
