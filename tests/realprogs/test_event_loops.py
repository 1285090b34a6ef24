# SPDX-License-Identifier: LGPL-2.1-or-later
"""Event loops (epoll, eventfd, timerfd, signalfd underneath): node with
setInterval and setTimeout timers (libuv: epoll, eventfd, worker
threads), and python3 asyncio with a producer and a consumer task and an
asyncio.Queue (epoll and a self-pipe socketpair). Each is checkpointed
twice mid-run, killed and restarted, and must end as an uninterrupted
run does (docs/resources.md, "Event fds")."""

import shutil

import pytest

from realprogs.driver import Program, check_program, require

# Each tick's setTimeout(0) is counted and hashed, not printed: when
# the loop runs late (a loaded machine, with or without ckpt) node may
# run it after the next interval tick, so printed it made the output's
# order depend on timing. The final line still proves every one ran.
NODE_SCRIPT = r"""
let n = 0, h = 0, after = 0, a = 0;
const t = setInterval(() => {
	n++;
	for (let i = 0; i < 1000; i++)
		h = (h * 31 + n + i) % 1000000007;
	console.log("tick " + n + " " + h);
	const m = n;
	setTimeout(() => { after++; a = (a * 31 + m) % 1000000007; }, 0);
	if (n === 120) {
		clearInterval(t);
		setTimeout(() => console.log("final " + h + " after " + after +
					     " " + a), 20);
	}
}, 40);
"""

ASYNCIO_SCRIPT = r"""
import asyncio

async def producer(q):
    for i in range(1, 121):
        await asyncio.sleep(0.04)
        await q.put(i)
    await q.put(None)

async def consumer(q):
    s = 0
    while True:
        x = await q.get()
        if x is None:
            break
        s = (s * 31 + x) % 1000003
        print("got", x, s, flush=True)
    print("final", s, flush=True)

async def main():
    q = asyncio.Queue()
    await asyncio.gather(producer(q), consumer(q))

asyncio.run(main())
"""


class Node(Program):
    name = "node"

    def argv(self, run):
        return ["node", "-e", NODE_SCRIPT]

    def finished(self, run):
        return any(l.startswith("final ") for l in run.stdout_lines())


class PythonAsyncio(Program):
    name = "python3-asyncio"

    def argv(self, run):
        return ["/usr/bin/python3", "-c", ASYNCIO_SCRIPT]

    def finished(self, run):
        return any(l.startswith("final ") for l in run.stdout_lines())


@pytest.mark.time_limit(600)
def test_node_timers(session):
    require(shutil.which("node") or "/usr/bin/node", "nodejs")
    check_program(session, Node())


@pytest.mark.time_limit(600)
def test_python_asyncio(session):
    require("/usr/bin/python3", "python3")
    check_program(session, PythonAsyncio())
