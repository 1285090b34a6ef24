# SPDX-License-Identifier: LGPL-2.1-or-later
"""Man pages and bash completion agree with the tools: every option a
tool's --help lists is in its man page and in its completion; the pages
render without groff warnings; the completion loads in bash and
completes options and image files; make install puts them in place."""

import os
import re
import shutil
import socket
import subprocess

import pytest

import ckpt_harness
from ckpt_harness import run

ROOT = ckpt_harness.ROOT
MAN = os.path.join(ROOT, "docs", "man")
COMPLETION = os.path.join(ROOT, "dist", "bash-completion", "ckpt")
TOOLS = ["ckpt_launch", "ckpt_command", "ckpt_coordinator", "ckpt_restart",
         "ckpt_inspect", "ckpt_check"]
OPTION = re.compile(r"(?:^|[\s,\[(])(--?[a-z][a-z0-9-]*)")


def help_options(tool):
    """The options a tool's --help lists in its option column (lines
    starting with an option), plus its usage line's."""
    r = run([ckpt_harness.tool(tool), "--help"], 30)
    assert r.returncode == 0, r.stderr
    found = set()
    for line in r.stdout.splitlines():
        if line.startswith("Usage:") or re.match(r"\s+-", line):
            head = line if line.startswith("Usage:") else \
                re.split(r"\s{2,}", line.strip())[0]
            found.update(OPTION.findall(" " + head))
    found.discard("--")
    return found


def man_text(page):
    with open(os.path.join(MAN, page)) as f:
        text = f.read()
    return re.sub(r"\\f[BIRP]|\\c", "", text).replace("\\-", "-")


def completion_options(tool):
    """The options of the tool's list and of the lines adding to it."""
    with open(COMPLETION) as f:
        text = f.read()
    found = re.findall(r'^_ckpt_options_%s\+?="([^"]*)"' % tool, text, re.M)
    assert found, "no _ckpt_options_%s in %s" % (tool, COMPLETION)
    return set(" ".join(found).split())


@pytest.mark.parametrize("tool", TOOLS)
def test_every_help_option_is_in_the_man_page(tool):
    options = help_options(tool)
    assert "--help" in options and len(options) >= 3, options
    text = man_text(tool + ".1")
    missing = [o for o in sorted(options)
               if not re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(o),
                                text)]
    assert not missing, "%s.1 lacks %s" % (tool, missing)
    assert completion_options(tool) == options


@pytest.mark.skipif(not shutil.which("groff"), reason="groff not installed")
def test_pages_render_without_warnings():
    for page in sorted(os.listdir(MAN)):
        r = subprocess.run(["groff", "-man", "-ww", "-z",
                            os.path.join(MAN, page)], capture_output=True,
                           text=True, timeout=30,
                           env=dict(os.environ, LC_ALL="C.UTF-8"))
        assert r.returncode == 0 and r.stderr == "", (page, r.stderr)
    assert sorted(os.listdir(MAN)) == sorted(
        [t + ".1" for t in TOOLS] + ["ckpt.7"])
    text = man_text("ckpt.7")
    for section in ("ENVIRONMENT", "FILES", "EXIT STATUS"):
        assert ".SH " + section in text
    for var in ("CKPT_COORD", "CKPT_DIR", "CKPT_SAVE_FILES",
                "CKPT_COMPRESS", "CKPT_TMP_FILE_MAX", "CKPT_SIGNAL"):
        assert var in text


def complete(words, cwd, env=None):
    """COMPREPLY for the command line words (the last is completed)."""
    line = " ".join(words)
    script = """
source %s
COMP_WORDS=(%s)
COMP_CWORD=%d
COMP_LINE=%s
_ckpt_complete %s
printf '%%s\\n' "${COMPREPLY[@]}"
""" % (COMPLETION, " ".join("'%s'" % w for w in words), len(words) - 1,
       "'%s'" % line, words[0])
    r = subprocess.run(["bash", "--norc", "-c", script], cwd=cwd, env=env,
                       capture_output=True, text=True, timeout=30)
    assert r.stderr == "", r.stderr
    return sorted(x for x in r.stdout.splitlines() if x)


def test_completion_loads_and_completes(tmp_path):
    r = subprocess.run(["bash", "--norc", "-c", "source %s && complete -p "
                        "%s" % (COMPLETION, " ".join(TOOLS))],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    for tool in TOOLS:
        assert "_ckpt_complete %s" % tool in r.stdout
    (tmp_path / "a.img").write_text("")
    (tmp_path / "b.txt").write_text("")
    (tmp_path / "sub").mkdir()
    assert complete(["ckpt_inspect", "--no-"], tmp_path) == [
        "--no-backtraces", "--no-verify"]
    assert complete(["ckpt_restart", ""], tmp_path) == ["a.img", "sub"]
    assert complete(["ckpt_check", "--ckptdir", ""], tmp_path) == ["sub"]
    assert complete(["ckpt_command", "--ch"], tmp_path) == ["--checkpoint"]
    # After PROGRAM, ckpt_launch's own options are not offered.
    assert "--coord" not in complete(
        ["ckpt_launch", "--compress", "ls", "--co"], tmp_path)
    # Coordinator addresses: $CKPT_COORD, the per-user default, sockets
    # and directories here (not the regular files).
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(tmp_path / "c.sock"))
        env = dict(os.environ, CKPT_COORD="/elsewhere/coord.sock",
                   XDG_RUNTIME_DIR=str(tmp_path / "run"))
        assert complete(["ckpt_command", "--coord", ""], tmp_path,
                        env) == sorted([
            "/elsewhere/coord.sock", "c.sock", "sub",
            "%s/run/ckpt-%d/coordinator.sock" % (tmp_path, os.geteuid())])


def test_make_install_puts_pages_and_completion(tmp_path):
    dest = str(tmp_path / "root")
    r = subprocess.run(["make", "-s", "-C", ROOT, "install",
                        "DESTDIR=" + dest, "PREFIX=/usr"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    share = os.path.join(dest, "usr", "share")
    for tool in TOOLS:
        assert os.path.isfile(os.path.join(share, "man", "man1",
                                           tool + ".1"))
        assert os.path.isfile(os.path.join(
            share, "bash-completion", "completions", tool))
        assert os.access(os.path.join(dest, "usr", "bin", tool), os.X_OK)
    assert os.path.isfile(os.path.join(share, "man", "man7", "ckpt.7"))
