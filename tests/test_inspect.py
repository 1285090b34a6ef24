# SPDX-License-Identifier: LGPL-2.1-or-later
"""ckpt_inspect's backtraces and --json: a program whose named threads
block in known call chains (tests/apps/named_threads.c) is checkpointed
and killed; the backtrace of each thread in the image names its chain,
also after a restart and in a compressed image, and --json says what
the text says and is valid against docs/schemas/ckpt_inspect.schema.json."""

import json
import os
import re
import time

from ckpt_harness import ROOT, app, run
from test_command_json import load_schema, validate

# thread name -> the functions its backtrace holds, innermost first
CHAINS = {
    "worker-1": ["pthread_cond_wait", "queue_pop", "worker_main",
                 "start_thread"],
    "worker-2": ["pthread_cond_wait", "queue_pop", "worker_main",
                 "start_thread"],
    "reader": ["read", "read_command", "reader_main", "start_thread"],
    "sleeper": ["nanosleep", "nap", "sleeper_main", "start_thread"],
    "named_threads": ["wait_for_threads", "main", "_start"],
}
SCHEMA = load_schema("ckpt_inspect.schema.json")
THREAD_LINE = re.compile(r"^    thread (\d+) \(([^)]*)\): (.*)$")
# named_threads' frames with their source line (it is built with -g): the
# line of the call each is in, found in its source by that call's text
CALLS = {"queue_pop": "pthread_cond_wait(&never, &lock);",
         "worker_main": "queue_pop());",
         "read_command": "read(fd, &c, 1);",
         "nap": "nanosleep(&left, &left)"}
NAMED_THREADS_C = os.path.join(ROOT, "tests", "apps", "named_threads.c")


def source_line(text):
    with open(NAMED_THREADS_C) as f:
        [n] = [i for i, line in enumerate(f, 1) if text in line]
    return n


def function_of(frame):
    """"queue_pop (named_threads.c:35)" -> "queue_pop"."""
    return frame.split(" (")[0]


def start_program(s):
    p = s.launch([app("named_threads")])
    p.wait_line(r"^ready$")
    tids = {}
    for line in p.lines():
        m = re.match(r"tid (\S+) (\d+)$", line)
        if m:
            tids[m.group(1)] = int(m.group(2))
    return p, tids


def checkpoint_and_kill(s):
    """The image of named_threads, all threads blocked; and their tids."""
    p, tids = start_program(s)
    [img] = s.checkpoint()
    s.kill_all()
    p.wait_exit(30)
    return img, tids


def inspect(s, *args):
    r = run([s.tool("ckpt_inspect")] + list(args), 60)
    assert r.returncode == 0, "ckpt_inspect %s: exit %d: %s" % (
        " ".join(args), r.returncode, r.stderr)
    return r.stdout


def text_backtraces(out):
    """{vtid: (labels, [function, ...])} of the text's thread lines."""
    found = {}
    for line in out.splitlines():
        m = THREAD_LINE.match(line)
        if m:
            frames = m.group(3).split(" (unwinding stopped")[0]
            found[int(m.group(1))] = (m.group(2), frames.split(" <- "))
    return found


def is_subsequence(want, frames):
    it = iter(function_of(f) for f in frames)
    return all(any(f == w for f in it) for w in want)


def assert_chains(found, tids=None):
    names = {}
    for vtid, (labels, frames) in found.items():
        name = labels.split(", ")[-1] if "manager" not in labels else None
        if name in CHAINS:
            names[name] = vtid
            assert is_subsequence(CHAINS[name], frames), (
                "thread %d (%s): backtrace %s lacks %s" % (
                    vtid, labels, " <- ".join(frames), CHAINS[name]))
    assert sorted(names) == sorted(CHAINS), found
    managers = [l for l, _ in found.values() if l.startswith("ckpt manager")]
    assert len(managers) == 1, found
    if tids:
        for name, tid in tids.items():
            assert names[name] == tid, (name, names, tids)


def test_backtraces_name_each_threads_calls(session):
    img, tids = checkpoint_and_kill(session)
    out = inspect(session, img)
    assert "all checksums verified" in out
    found = text_backtraces(out)
    assert len(found) == 6, out   # 5 of the program, libckpt's manager
    assert_chains(found, tids)
    # the program's frames with the source line of their call (libdw)
    frames = [f for _, fs in found.values() for f in fs]
    for function, call in CALLS.items():
        want = "%s (named_threads.c:%d)" % (function, source_line(call))
        assert want in frames, (want, out)
    # Each application thread's registers came from its signal frame.
    assert not any("pc and sp only" in labels
                   for labels, _ in found.values()
                   if not labels.startswith("ckpt manager"))


def test_json_says_what_the_text_says(session):
    img, _ = checkpoint_and_kill(session)
    out = inspect(session, img)
    doc = json.loads(inspect(session, "--json", img))
    validate(doc, SCHEMA)
    assert doc["tool"] == "ckpt_inspect" and doc["schema"] == 1
    assert doc["image"] == img and doc["verified"] is True
    assert doc["header"]["program"] == "named_threads"
    assert doc["header"]["cmdline"] == [app("named_threads")]
    assert "%d regions:" % len(doc["regions"]) in out
    assert "%d threads:" % len(doc["threads"]) in out
    assert "%d fds:" % len(doc["fds"]) in out
    text = text_backtraces(out)
    for t in doc["threads"]:
        labels, frames = text[t["vtid"]]
        assert t["backtrace_text"] == " <- ".join(frames)
        assert [f["function"].split("@")[0] if f["function"] else None
                for f in t["backtrace"]][:2] == [
            None if re.search(r"\+0x|^0x", f) else function_of(f)
            for f in frames[:2]]
        for f in t["backtrace"]:
            if f["function"] in CALLS:
                assert (f["source_file"], f["source_line"]) == (
                    "named_threads.c", source_line(CALLS[f["function"]]))
        assert t["name"] in labels
        assert t["manager"] == labels.startswith("ckpt manager")
        assert t["pc"] == t["backtrace"][0]["pc"]
    assert doc["restart_here"]["possible"] is True
    for r in doc["regions"]:
        assert int(r["start"], 16) < int(r["end"], 16)


def test_after_restart_and_compressed(session):
    img, _ = checkpoint_and_kill(session)
    r = session.restart([img])
    # The restarted threads are parked where they were: a compressed
    # checkpoint of the restarted process shows the same chains.
    deadline = time.monotonic() + 60
    while True:     # until the restarted process has joined
        images = session.command("--checkpoint", "--compress")
        if images.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert images.returncode == 0, images.stderr
    [img2] = [l for l in images.stdout.split() if l.endswith(".img")]
    session.kill_all()
    r.wait_exit(30)
    doc = json.loads(inspect(session, "--json", img2))
    validate(doc, SCHEMA)
    assert any(reg["encoding"] == "zstd" for reg in doc["regions"])
    assert_chains(text_backtraces(inspect(session, img2)))


def test_no_verify_and_several_images(session):
    img, _ = checkpoint_and_kill(session)
    out = inspect(session, "--no-verify", img)
    assert "not verified (--no-verify)" in out
    assert_chains(text_backtraces(out))
    lines = inspect(session, "--json", "--no-verify", "--no-backtraces",
                    img, img).splitlines()
    assert len(lines) == 2
    doc = json.loads(lines[1])
    validate(doc, SCHEMA)
    assert doc["verified"] is None and "backtrace" not in doc["threads"][0]
    r = run([session.tool("ckpt_inspect"), img, session.path("nope.img")],
            60)
    assert r.returncode == 1 and "nope.img" in r.stderr
    assert len(text_backtraces(r.stdout)) == 6
    r = run([session.tool("ckpt_inspect")], 60)
    assert r.returncode == 1 and "no image given" in r.stderr


TREE_LINE = re.compile(r"^( +)(\S+) \(vpid (\d+)(, session leader)?\)$")


def process_tree(out):
    """{vpid: parent vpid or None} of the text's process tree."""
    lines = out.split("\nprocess tree of these ")[1].splitlines()[1:]
    parents, stack = {}, []
    for line in lines:
        m = TREE_LINE.match(line)
        if not m:
            continue
        depth = len(m.group(1)) // 2 - 2
        del stack[depth:]
        parents[int(m.group(3))] = stack[-1] if stack else None
        stack.append(int(m.group(3)))
    return parents


def test_several_images_show_their_process_tree(session):
    """proc_tree's four processes: each under its parent, by vpid."""
    s = session
    p = s.launch([app("proc_tree"), "400", "20"])
    start = p.wait_line(r"^start parent (\d+) child1 (\d+) child2 (\d+)$")
    g = p.wait_line(r"^child1 has grandchild (\d+)$")
    parent, child1, child2 = (int(start.group(i)) for i in (1, 2, 3))
    images = s.checkpoint(expect_images=4)
    s.kill_all()
    p.wait_exit(30)
    out = inspect(s, "--no-verify", "--no-backtraces", *sorted(images))
    assert "\nprocess tree of these 4 images:\n" in out, out
    assert process_tree(out) == {parent: None, child1: parent,
                                 child2: parent,
                                 int(g.group(1)): child1}, out
    # one image, or --json: no tree
    assert "process tree" not in inspect(s, "--no-verify", images[0])
    assert "process tree" not in inspect(s, "--json", "--no-verify",
                                         *images)
