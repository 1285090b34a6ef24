# SPDX-License-Identifier: LGPL-2.1-or-later
"""ckpt_command for people and for scripts: --json on --status, --list and
--checkpoint, each reply validated against its schema in docs/schemas/
(by the small validator below: no PyPI); the images a JSON checkpoint
names restart and continue exactly; a failed checkpoint's JSON says why;
the progress line of a long checkpoint is drawn on a terminal (a pty)
and never into a pipe; --status says what it means without jargon."""

import json
import os
import pty
import re
import select
import time

import pytest

from ckpt_harness import (ROOT, app, assert_resumed, numbers,
                          reference_output)

SCHEMAS = os.path.join(ROOT, "docs", "schemas")
PROGRESS = r"^count (\d+) "


# --- a JSON Schema validator for the subset docs/schemas/ uses --------

def load_schema(name):
    with open(os.path.join(SCHEMAS, name)) as f:
        return json.load(f)


def resolve(ref, root):
    doc, _, pointer = ref.partition("#")
    target = load_schema(doc) if doc else root
    for part in pointer.strip("/").split("/"):
        if part:
            target = target[part]
    return target, (load_schema(doc) if doc else root)


TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def validate(value, schema, root=None, where="$"):
    """Raise AssertionError naming the first place value breaks schema."""
    root = root or schema
    if "$ref" in schema:
        target, doc = resolve(schema["$ref"], root)
        validate(value, target, doc, where)
    if "const" in schema:
        assert value == schema["const"], "%s: %r != %r" % (
            where, value, schema["const"])
    if "enum" in schema:
        assert value in schema["enum"], "%s: %r not in %r" % (
            where, value, schema["enum"])
    if "type" in schema:
        types = schema["type"]
        types = types if isinstance(types, list) else [types]
        assert any(TYPES[t](value) for t in types), "%s: %r is not %s" % (
            where, value, types)
    if isinstance(value, int) and not isinstance(value, bool) and \
            "minimum" in schema:
        assert value >= schema["minimum"], "%s: %r < %r" % (
            where, value, schema["minimum"])
    if isinstance(value, str) and "pattern" in schema:
        assert re.search(schema["pattern"], value), "%s: %r !~ %s" % (
            where, value, schema["pattern"])
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for key in schema.get("required", []):
            assert key in value, "%s: no %r" % (where, key)
        for key, v in value.items():
            if key in props:
                validate(v, props[key], root, "%s.%s" % (where, key))
            else:
                assert schema.get("additionalProperties", True), (
                    "%s: unexpected member %r" % (where, key))
    if isinstance(value, list) and "items" in schema:
        for i, v in enumerate(value):
            validate(v, schema["items"], root, "%s[%d]" % (where, i))


def command_json(s, *args, expect_rc=0):
    r = s.command(*args, "--json")
    assert r.returncode == expect_rc, (args, r.returncode, r.stderr)
    assert r.stdout.count("\n") == 1, r.stdout
    reply = json.loads(r.stdout)
    what = [a for a in args if a.startswith("--")][0][2:]
    validate(reply, load_schema("ckpt_command-%s.schema.json" % what))
    return reply, r


def test_validator_rejects_what_breaks_a_schema():
    """The validator above can fail (else every test here passes)."""
    schema = load_schema("ckpt_command-list.schema.json")
    good = {"schema_version": 1, "processes": [
        {"vpid": 1, "pid": 2, "host": "h", "program": "p", "id": "x",
         "restarted": False, "state": "idle"}]}
    validate(good, schema)
    for bad in ({"schema_version": 1},
                dict(good, extra=1),
                {"schema_version": 1, "processes": [
                    dict(good["processes"][0], state="sleeping")]},
                {"schema_version": 1, "processes": [
                    dict(good["processes"][0], vpid=True)]}):
        with pytest.raises(AssertionError):
            validate(bad, schema)


# --- the replies ------------------------------------------------------

@pytest.mark.time_limit(300)
def test_json_status_list_checkpoint_then_restart(session):
    s = session
    argv = [app("counter"), "150", "20"]
    ref = reference_output(argv)
    p = s.launch(argv)
    p.wait_line(PROGRESS, minimum=10)

    status, _ = command_json(s, "--status")
    assert status["coordinator"] == s.coord
    assert status["process_count"] == 1 and status["round"] is None
    assert status["last_checkpoint"] is None
    (proc,) = status["processes"]
    assert (proc["vpid"], proc["program"], proc["state"]) == (
        p.pid, "counter", "idle")
    assert proc["kernel_module"] is os.path.exists("/dev/ckpt_accel")

    listing, _ = command_json(s, "--list")
    (entry,) = listing["processes"]
    assert entry["vpid"] == p.pid and entry["pid"] == p.pid
    assert entry["host"] == os.uname().nodename and not entry["restarted"]

    seen = max(numbers(p.lines(), PROGRESS))
    reply, r = command_json(s, "--checkpoint")
    assert reply["ok"] and reply["errors"] == [], reply
    (img,) = reply["images"]
    assert os.path.dirname(img["path"]) == s.ckptdir
    assert img["size_bytes"] == os.path.getsize(img["path"])
    assert (img["vpid"], img["pid"], img["program"]) == (p.pid, p.pid,
                                                         "counter")
    assert 0 <= img["written_ms"] <= img["durable_ms"] <= \
        reply["duration_ms"]
    assert reply["suspend_ms"] <= reply["duration_ms"]
    # what a restart will not restore: in the JSON and on stderr alike
    assert ["warning: " + w for w in reply["not_restored"]] == \
        r.stderr.splitlines()

    status, _ = command_json(s, "--status")
    assert status["last_checkpoint"]["generation"] == reply["generation"]
    assert status["last_checkpoint"]["ok"]

    p.sigkill()
    rs = s.restart([img["path"]])
    assert rs.wait_exit() == 0, rs.stderr_text()
    assert_resumed(numbers(p.lines(), PROGRESS), numbers(rs.lines(),
                                                         PROGRESS),
                   PROGRESS, 150, seen)
    assert rs.lines()[-1] == ref[-1]


@pytest.mark.time_limit(300)
def test_failed_checkpoint_json_says_why(session):
    """The checkpoint directory replaced by a file: ok false, errors
    naming it, exit 1, the program runs on."""
    s = session
    p = s.launch([app("counter"), "300", "20"])
    p.wait_line(PROGRESS, minimum=10)
    os.rename(s.ckptdir, s.ckptdir + ".moved")
    with open(s.ckptdir, "w") as f:
        f.write("x")
    try:
        reply, r = command_json(s, "--checkpoint", expect_rc=1)
        assert not reply["ok"] and reply["images"] == []
        assert any(os.path.basename(s.ckptdir) in e
                   for e in reply["errors"]), reply["errors"]
        assert "ckpt_command: the coordinator reports failure" in r.stderr
        seen = max(numbers(p.lines(), PROGRESS))
        p.wait_line(PROGRESS, minimum=seen + 5)
    finally:
        os.unlink(s.ckptdir)
        os.rename(s.ckptdir + ".moved", s.ckptdir)


def test_json_goes_with_status_list_checkpoint_only(session):
    r = session.command("--kill", "--json")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == ("ckpt_command: --json goes with --status, --list "
                        "or --checkpoint only\n")


@pytest.mark.time_limit(120)
def test_status_text_says_what_it_means(session):
    s = session
    p = s.launch([app("counter"), "300", "20"])
    p.wait_line(PROGRESS, minimum=5)
    r = s.command("--status")
    assert r.returncode == 0, r.stderr
    line = [l for l in r.stdout.splitlines() if l.startswith("process ")]
    assert line == ["process counter (vpid %d, pid %d, host %s): running; "
                    "finds its memory through /proc (no ckpt_accel kernel "
                    "module)" % (p.pid, p.pid, os.uname().nodename)], line
    assert "accel=" not in r.stdout and "state=" not in r.stdout


# --- the progress line ------------------------------------------------

def run_on_pty(s, argv, timeout=120, until=None, then=None):
    """argv with stdout and stderr on a terminal; once its output
    matches `until`, call then() (and read on to the end)."""
    pid, fd = pty.fork()
    if pid == 0:
        os.environ.clear()
        os.environ.update(s.env)
        os.execv(argv[0], argv)
    out, deadline = b"", time.monotonic() + timeout
    while time.monotonic() < deadline:
        if until and re.search(until, out.decode(errors="replace")):
            then()
            until = None
        ready, _, _ = select.select([fd], [], [], 1)
        if not ready:
            continue
        try:
            data = os.read(fd, 4096)
        except OSError:     # EIO: the child closed the terminal
            break
        if not data:
            break
        out += data
    os.close(fd)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), out.decode()


def checkpoint_on_pty(s):
    return run_on_pty(s, [s.tool("ckpt_command"), "--checkpoint"])


LINE_RX = re.compile(r"\r\x1b\[Kcheckpoint (\d+): ([0-9.]+ [KMG]?i?B) "
                     r"(of ~[0-9.]+ [KMG]?i?B )?written, [0-9.]+ [KMG]?i?B/s")


@pytest.mark.time_limit(300)
def test_progress_line_on_a_terminal_and_not_in_a_pipe(session):
    """memory_mix 64: 192 MiB resident, a checkpoint and a restart (--copy:
    128 MiB read and checked), each longer than the first redraw at
    CKPT_PROGRESS_MS=10 (a fast machine did both within the default
    250 ms: no line)."""
    s = session
    s.env["CKPT_PROGRESS_MS"] = "10"
    p = s.launch([app("memory_mix"), "64", "100000"])
    p.wait_line(r"^round 1/")
    rc, out = checkpoint_on_pty(s)
    assert rc == 0, out
    drawn = LINE_RX.findall(out)
    assert drawn, "no progress line on the terminal:\n%r" % out
    assert "of ~" in out and " left" in out, out
    # the line is cleared before the image path is printed
    tail = out.rsplit("\r\x1b[K", 1)[1]
    assert re.match(r"^%s/ckpt_memory_mix_\S+\.img\r\n" %
                    re.escape(s.ckptdir), tail), repr(tail)

    r = s.command("--checkpoint")      # stderr is a pipe: nothing drawn
    assert r.returncode == 0, r.stderr
    assert "\r" not in r.stderr and "written" not in r.stderr, r.stderr
    assert "\x1b" not in r.stdout + r.stderr
    assert len(r.stdout.split()) == 1

    # the restart: on a terminal, then into a pipe
    images = r.stdout.split()
    s.kill_all()
    p.wait_exit()
    restart = [s.tool("ckpt_restart"), "--copy"] + images
    rc, out = run_on_pty(s, restart, until=r"round \d+/",
                         then=lambda: s.kill_all())
    drawn = RESTART_RX.findall(out)
    assert drawn, "no restart progress line on the terminal:\n%r" % out
    # cleared before the program prints again
    tail = out.rsplit("\r\x1b[K", 1)[1]
    assert "restored" not in tail and re.search(r"round \d+/", tail), \
        repr(out[-500:])
    rs = s.start(restart, "restart into a pipe")
    rs.wait_line(r"^round \d+/")
    s.kill_all()
    rs.wait_exit()
    assert "\r" not in rs.stderr_text() and \
        "restored" not in rs.stderr_text(), rs.stderr_text()


RESTART_RX = re.compile(r"\r\x1b\[Kckpt_restart: \S+\.img: \d+ of \d+ MiB "
                        r"restored, \d+ MiB/s, ~\d+ s left")
