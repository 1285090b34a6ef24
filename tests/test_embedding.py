# SPDX-License-Identifier: LGPL-2.1-or-later
"""The in-process API (include/ckpt.h, docs/embedding.md): a program built
with nothing but the header, run plainly and under ckpt_launch; it
checkpoints itself, is killed and restarted; hooks and delay sections."""

import errno
import json
import os
import subprocess
import tempfile

import pytest

from ckpt_harness import ROOT, run

SRC = os.path.join(ROOT, "tests", "embedding", "api_user.c")
ENOTSUP = errno.ENOTSUP
# sum of i*i for i in 1..2000: the work api_user self does
DONE = "done sum=%d worker_ran=1" % sum(i * i for i in range(1, 2001))


def build(src, out, extra=(), libs=()):
    r = run(["cc", "-O2", "-Wall", "-Wextra", "-Werror", "-pthread",
             *extra, src, *libs, "-o", out], 120)
    assert r.returncode == 0, "cc %s: %s" % (src, r.stderr)
    return out


@pytest.fixture(scope="module")
def api_user():
    d = tempfile.mkdtemp(prefix="ckpt-embed-")
    # the header alone: no ckpt library on the command line
    yield build(SRC, os.path.join(d, "api_user"),
                ["-I" + os.path.join(ROOT, "include")])
    subprocess.run(["rm", "-rf", d])


def fields(line):
    """'a=1 b=x' -> {'a': '1', 'b': 'x'} (order=... up to '|' kept)."""
    head, _, tail = line.partition("| ")
    out = {}
    if "order=" in head:
        head, order = head.split("order=", 1)
        out["order"] = order
    for word in (head + " " + tail).split():
        k, _, v = word.partition("=")
        out[k] = v
    return out


def test_plain_run_is_not_under_ckpt(api_user):
    r = run([api_user, "plain"], 30, env={"PATH": os.environ["PATH"]})
    assert r.returncode == 0, r.stderr
    assert r.stdout == (
        "enabled=0 generation=-%d restarts=-%d dir=-%d image=-%d "
        "checkpoint=-%d delay_begin=-%d delay_end=-%d hook=-%d\n"
        % ((ENOTSUP,) * 8))


def test_plain_run_does_the_work(api_user, tmp_path):
    go = tmp_path / "go"
    go.touch()
    r = run([api_user, "self", str(go)], 60,
            env={"PATH": os.environ["PATH"]})
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == DONE


@pytest.mark.time_limit(120)
def test_checkpoint_from_inside_then_restart(session, api_user):
    go = session.path("go")
    p = session.launch([api_user, "self", go])
    bad = fields(p.wait_line(r"^bad: ").string)
    assert bad == {"bad:": "", "end_without_begin": "-%d" % errno.EINVAL,
                   "hook_event": "-%d" % errno.EINVAL,
                   "hook_fn": "-%d" % errno.EINVAL,
                   "checkpoint_in_section": "-%d" % errno.EDEADLK}
    before = fields(p.wait_line(r"^before: ").string)
    assert before["enabled"] == "1" and before["generation"] == "0"
    f = fields(p.wait_line(r"^checkpoint=").string)
    images = sorted(os.path.join(session.ckptdir, n)
                    for n in os.listdir(session.ckptdir)
                    if n.endswith(".img"))
    assert len(images) == 1, images
    assert f == {"checkpoint": "0", "generation": "1", "restarts": "0",
                 "before": "2", "resume": "2", "restart": "0",
                 "order": "B1 B2 U2 U1 ", "hook_thread": "own",
                 "unlock": "0", "dir": session.ckptdir,
                 "image": images[0]}, f
    p.sigkill()

    r = session.restart(images)
    f = fields(r.wait_line(r"^checkpoint=").string)
    # memory as it was when the image was written: the before hooks had
    # run, the resume hooks not yet; then the restart hooks ran
    assert f == {"checkpoint": "1", "generation": "1", "restarts": "1",
                 "before": "2", "resume": "0", "restart": "2",
                 "order": "B1 B2 S2 S1 ", "hook_thread": "own",
                 "unlock": "0", "dir": session.ckptdir,
                 "image": images[0]}, f
    open(go, "w").close()
    rc = r.wait_exit(60)
    assert rc == 0, r.stderr_text()
    assert r.lines()[-1] == DONE


@pytest.mark.time_limit(120)
def test_delay_section_holds_off_a_checkpoint(session, api_user):
    """Requested 0-1.5 s into a 1.5 s section, the checkpoint is taken
    after it: the restarted process finds the section done."""
    go = session.path("go")
    p = session.launch([api_user, "delay", "1.5", go])
    p.wait_line(r"^section begin$")
    images = session.checkpoint()
    assert "section end" in p.out.wait_for(
        lambda lines: "section end" in lines and lines, 30, "section end")
    p.sigkill()
    r = session.restart(images)
    r.wait_line(r"^restarted: sections_done=1$", timeout=60)
    open(go, "w").close()
    assert r.wait_exit(60) == 0, r.stderr_text()
    assert r.lines()[-1] == "finished sections_done=1 restart_hooks=1"


@pytest.mark.time_limit(120)
def test_section_of_an_ended_thread_ends_with_it(session, api_user):
    """A thread that exits inside ckpt_delay_begin does not hold off every
    later checkpoint: its sections end with it (said in the log)."""
    session.env["CKPT_PHASE_TIMEOUT"] = "2"
    go = session.path("go")
    p = session.launch([api_user, "exit-in-section", go])
    p.wait_line(r"^thread gone$")
    images = session.checkpoint()
    assert "ckpt_delay_begin section(s); they end with it" in \
        p.stderr_text(), p.stderr_text()
    p.sigkill()
    r = session.restart(images)
    open(go, "w").close()
    assert r.wait_exit(60) == 0, r.stderr_text()
    assert r.lines()[-1].startswith("finished generation="), r.lines()


@pytest.mark.time_limit(120)
def test_delay_section_too_long_fails_the_checkpoint(session, api_user):
    """A section longer than half the suspend phase (here 0.5 s of 1 s)
    fails that checkpoint with the reason; the program runs on and the
    next checkpoint, after the section, succeeds."""
    session.env["CKPT_PHASE_TIMEOUT"] = "1"
    go = session.path("go")
    p = session.launch([api_user, "delay", "3", go])
    p.wait_line(r"^section begin$")
    r = session.command("--checkpoint")
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "critical section(s) (ckpt_delay_begin) did not end within " \
        "500 ms" in r.stderr, r.stderr
    assert not [n for n in os.listdir(session.ckptdir)
                if n.endswith(".img")]
    p.wait_line(r"^section end$", timeout=30)
    images = session.checkpoint()
    p.sigkill()
    r = session.restart(images)
    r.wait_line(r"^restarted: sections_done=1$", timeout=60)
    open(go, "w").close()
    assert r.wait_exit(60) == 0, r.stderr_text()


@pytest.mark.time_limit(300)
def test_installed_header_and_pkg_config(tmp_path):
    prefix = tmp_path / "prefix"
    r = run(["make", "-s", "install", "PREFIX=" + str(prefix)], 240,
            cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert (prefix / "include" / "ckpt.h").is_file()
    env = dict(os.environ, PKG_CONFIG_PATH=str(prefix / "lib" / "pkgconfig"))
    r = run(["pkg-config", "--cflags", "--libs", "ckpt"], 30, env=env)
    assert r.returncode == 0, r.stderr
    flags = r.stdout.split()
    assert "-I%s" % (prefix / "include") in flags
    exe = build(SRC, str(tmp_path / "api_user"), flags)
    r = run([exe, "plain"], 30)
    assert r.returncode == 0 and r.stdout.startswith("enabled=0 "), r


CONTROL_SRC = os.path.join(ROOT, "tests", "embedding", "control_tool.c")


@pytest.fixture(scope="module")
def control_tool():
    d = tempfile.mkdtemp(prefix="ckpt-control-")
    yield build(CONTROL_SRC, os.path.join(d, "control_tool"),
                ["-I" + os.path.join(ROOT, "include")],
                [os.path.join(ROOT, "build", "lib", "libckpt-control.a")])
    subprocess.run(["rm", "-rf", d])


@pytest.mark.time_limit(120)
def test_control_library_lists_and_checkpoints(session, control_tool,
                                               api_user):
    go = session.path("go")
    p = session.launch([api_user, "delay", "0", go])
    p.wait_line(r"^section end$")
    r = run([control_tool, "list"], 30, env=session.env)
    assert r.returncode == 0, (r.stdout, r.stderr)
    head, _, text = r.stdout.partition("\n")
    assert head == "== list status=0 r=0"
    assert text == session.command("--list").stdout
    assert "api_user" in text
    r = run([control_tool, "checkpoint"], 60, env=session.env)
    assert r.returncode == 0, (r.stdout, r.stderr)
    head, _, text = r.stdout.partition("\n")
    assert head == "== checkpoint status=0 r=0"
    images = text.split()
    assert len(images) == 1 and os.path.isfile(images[0]), text
    assert r.stderr == ""           # the library prints nothing
    p.sigkill()
    rs = session.restart(images)
    rs.wait_line(r"^restarted: sections_done=1$", timeout=60)
    open(go, "w").close()
    assert rs.wait_exit(60) == 0, rs.stderr_text()


@pytest.mark.time_limit(120)
def test_control_library_replies_in_json(session, control_tool, api_user):
    """c.json = 1: the same JSON objects as ckpt_command --json."""
    go = session.path("go")
    p = session.launch([api_user, "delay", "0", go])
    p.wait_line(r"^section end$")
    for what in ("list", "status"):
        r = run([control_tool, "--json", what], 30, env=session.env)
        assert r.returncode == 0, (r.stdout, r.stderr)
        head, _, text = r.stdout.partition("\n")
        assert head == "== %s status=0 r=0" % what
        reply = json.loads(text)
        assert reply["schema_version"] == 1
        assert [q["program"] for q in reply["processes"]] == ["api_user"]
        assert [q["vpid"] for q in reply["processes"]] == [p.pid]
    r = run([control_tool, "--json", "checkpoint"], 60, env=session.env)
    assert r.returncode == 0, (r.stdout, r.stderr)
    reply = json.loads(r.stdout.partition("\n")[2])
    assert reply["ok"] and len(reply["images"]) == 1, reply
    img = reply["images"][0]
    assert os.path.getsize(img["path"]) == img["size_bytes"]
    assert r.stderr == ""
    open(go, "w").close()
    assert p.wait_exit(60) == 0, p.stderr_text()


def test_control_library_reports_no_coordinator(session, control_tool):
    r = run([control_tool, "status"], 30, env=session.env)
    assert r.returncode == 1 and r.stderr == "", (r.stdout, r.stderr)
    assert r.stdout == "error code=%d message=no coordinator at %s: %s\n" % (
        errno.ENOENT, session.coord, os.strerror(errno.ENOENT)), r.stdout
