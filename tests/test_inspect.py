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
from ckpt_image import V6_HEADER_SIZE, Image
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


# --- signal state (image format version 7) ----------------------------------

SIGNAL_TICKS = 25
SIGNAL_RESULT = "result masks 1 pending 1 actions 1 handler 1"
GLIBC_SIGNALS = ("SIG32", "SIG33")
# signal_inspect's threads: what each blocks and has pending (SIGWINCH,
# blocked by all, is pending for the process; SIGRTMAX, ckpt's signal,
# blocked as the program sees it)
THREAD_SIGNALS = {"signal_inspect": (["SIGWINCH"], []),
                  "usr2-blocker": (["SIGUSR2", "SIGWINCH", "SIGRTMAX"],
                                   ["SIGUSR2"]),
                  "int-blocker": (["SIGINT", "SIGWINCH"], [])}


def signal_state_image(s):
    p = s.launch([app("signal_inspect"), str(SIGNAL_TICKS)])
    p.wait_line(r"^ready$")
    [img] = s.checkpoint()
    s.kill_all()
    p.wait_exit(30)
    return img


def text_section(out, title):
    """The lines of the text's section that starts with title."""
    lines = out.split("\n" + title)[1].split("\n\n")[0].splitlines()
    return [l.strip() for l in lines[1:]]


def assert_text_signal_state(out, ckpt_signal):
    [head] = [l for l in out.splitlines() if l.startswith("signals (")]
    assert head.endswith("ckpt's checkpoint signal: %s):" % ckpt_signal)
    # glibc's own (SIG32, SIG33: __nptl_setxid_sighandler...) may be there
    actions = [l for l in text_section(out, "signals (")
               if not l.startswith(GLIBC_SIGNALS)]
    usr1 = re.match(r"^SIGUSR1 +handler 0x[0-9a-f]+ on_usr1 "
                    r"\(signal_inspect\.c:\d+\), flags SA_SIGINFO "
                    r"SA_RESTART, mask SIGTERM$", actions[0])
    assert usr1, actions
    assert actions[1:] == [
        "SIGPIPE     ignored",
        "%-12sckpt's checkpoint signal (the program's disposition: "
        "default)" % ckpt_signal,
        "pending for the process: SIGWINCH"], actions
    # each application thread's line, after its backtrace
    found = {}
    lines = out.splitlines()
    for k, line in enumerate(lines):
        m = THREAD_LINE.match(line)
        if m and "manager" not in m.group(2):
            name = m.group(2).split(", ")[-1]
            found[name] = lines[k + 1].strip()
    assert found == {
        name: "signals: blocked %s; pending %s" % (
            " ".join(blocked), " ".join(pending) or "none")
        for name, (blocked, pending) in THREAD_SIGNALS.items()}, found


def assert_json_signal_state(doc, ckpt_signal):
    sig = doc["signals"]
    assert sig["ckpt_signal_name"] == ckpt_signal
    assert sig["process_pending"] == ["SIGWINCH"]
    usr1, pipe, own = [a for a in sig["actions"]
                       if not a["name"].startswith(GLIBC_SIGNALS)]
    assert (usr1["name"], usr1["signal"], usr1["disposition"]) == (
        "SIGUSR1", 10, "handler")
    assert usr1["handler_text"].startswith("on_usr1 (signal_inspect.c:")
    assert usr1["flag_names"] == ["SA_SIGINFO", "SA_RESTART"]
    assert usr1["mask"] == ["SIGTERM"] and usr1["ckpt_signal"] is False
    assert pipe == {"signal": 13, "name": "SIGPIPE", "ckpt_signal": False,
                    "disposition": "ignored"}
    assert (own["name"], own["ckpt_signal"], own["disposition"]) == (
        ckpt_signal, True, "default")
    threads = {t["name"]: t["signals"] for t in doc["threads"]
               if not t["manager"]}
    assert threads == {name: {"blocked": b, "pending": p}
                       for name, (b, p) in THREAD_SIGNALS.items()}


def test_signal_state(session):
    """signal_inspect's dispositions, masks and pending signals, as the
    text and --json show them; the restarted program finds them all
    (restored from libckpt's memory, as before version 7). A copy made a
    version 6 image reads "not recorded" and restarts the same."""
    s = session
    img = signal_state_image(s)
    out = inspect(s, "--no-verify", img)
    [own] = re.findall(r"ckpt's checkpoint signal: (\S+)\):", out) or [None]
    assert own and own.startswith("SIGRTM"), out
    assert_text_signal_state(out, own)
    doc = json.loads(inspect(s, "--json", "--no-verify", img))
    validate(doc, SCHEMA)
    assert_json_signal_state(doc, own)
    # an older image: the same without the signal state
    old = Image(img)
    old.set_header(version=6, header_size=V6_HEADER_SIZE, signals_offset=0,
                   nthread_signals=0, ckpt_signal=0)
    old.rehash()
    v6 = old.write(s.path("v6.img"))
    assert "\nsignals: not recorded (image format version 6)\n" in inspect(
        s, "--no-verify", "--no-backtraces", v6)
    doc = json.loads(inspect(s, "--json", "--no-verify", v6))
    validate(doc, SCHEMA)
    assert doc["signals"] is None
    assert all(t["signals"] is None for t in doc["threads"])
    for image in (img, v6):
        r = s.restart([image])
        assert r.wait_exit() == 0, r.stderr_text()
        assert SIGNAL_RESULT in r.lines(), r.lines()[-3:]
        assert "tick %d" % SIGNAL_TICKS in r.lines()
