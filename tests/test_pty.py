# SPDX-License-Identifier: LGPL-2.1-or-later
"""Full-screen programs under a pseudo-terminal: less, vi and an
interactive bash running less are checkpointed in one pty at a position
that is not their start, killed, and restarted in a new pty of another
size. The screen (tests/pty_screen.py) must show the same position, drawn
for the new size (SIGWINCH), the program must answer keys, and the
session, the controlling terminal and the foreground process group must
be the restored ones."""

import os
import shutil

import pytest

from pty_screen import Terminal, children, session_ids

LINES = 500
ROWS, COLS = 24, 80
NEW_ROWS, NEW_COLS = 30, 100


def vi_binary():
    """vim.tiny when there (what CI installs), else vi."""
    for name in ("vim.tiny", "vi"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.fixture
def text_file(session):
    session.env["TERM"] = "vt100"
    path = session.path("lines.txt")
    with open(path, "w") as f:
        for i in range(1, LINES + 1):
            f.write("line number %d\n" % i)
    return path


def top_is(n):
    return lambda lines: lines[0] == "line number %d" % n


def shows_lines(first, rows):
    """The screen shows lines first.. down to the last row but one."""
    want = ["line number %d" % i for i in range(first, first + rows - 1)]
    return lambda lines: lines[:rows - 1] == want


def assert_owns_terminal(pid, term, what, foreground=None):
    """pid leads its session, has term as its controlling terminal and
    its group (or the group foreground) in the foreground."""
    pgid, sid, tty_nr, tpgid = session_ids(pid)
    pgid = foreground or pgid
    assert (sid, tty_nr, tpgid) == (pid, term.rdev, pgid), (
        "%s (pid %d): session %d, terminal %#x, foreground group %d; "
        "expected session %d, terminal %#x, foreground group %d" % (
            what, pid, sid, tty_nr, tpgid, pid, term.rdev, pgid))


def start_program(session, argv, stderr=False):
    term = Terminal("first terminal", ROWS, COLS)
    p = session.launch(argv, **term.spawn_args(stderr=stderr))
    term.close_slave()
    return p, term


def restart_in_new_terminal(session, images, how):
    """how: 'session' (ckpt_restart leads the pty's session, as under a
    terminal emulator), 'outside' (it stays in the test's session with
    the pty on its stdio), 'group' (the same, as a process group leader:
    it must fork the root to make a session)."""
    term = Terminal("new terminal", NEW_ROWS, NEW_COLS)
    r = session.restart(images, **term.spawn_args(
        session=how == "session", group=how == "group"))
    term.close_slave()
    return r, term


def restored_root(r, how):
    """The real pid of the restored root process."""
    if how != "group":
        return r.pid
    kids = children(r.pid)
    assert len(kids) == 1, "ckpt_restart forked %r, expected one root" % kids
    return kids[0]


def finish(r, term, what):
    rc = r.wait_exit(60)
    assert rc == 0, "%s after restart: exit %d; stderr:\n%s\nscreen:\n%s" % (
        what, rc, r.stderr_text(), "\n".join(term.text()))


@pytest.mark.time_limit(300)
def test_less_redraws_in_new_terminal(session, text_file):
    p, first = start_program(session, ["less", text_file])
    first.wait_for(top_is(1), "less showing the file")
    first.send("150g")
    first.wait_for(shows_lines(150, ROWS), "less at line 150")
    images = session.checkpoint()
    p.sigkill()
    first.close()

    r, term = restart_in_new_terminal(session, images, "session")
    term.wait_for(shows_lines(150, NEW_ROWS),
                  "less redrawn at line 150 for %d rows" % NEW_ROWS)
    assert_owns_terminal(r.pid, term, "restored less")
    term.send("j")
    term.wait_for(shows_lines(151, NEW_ROWS), "less scrolled to 151")
    term.send("q")
    finish(r, term, "less")
    assert "ckpt" not in r.stderr_text(), r.stderr_text()


@pytest.mark.time_limit(300)
@pytest.mark.parametrize("how", ["session", "outside", "group"])
def test_vi_redraws_in_new_terminal(session, text_file, how):
    vi = vi_binary()
    if not vi:
        pytest.skip("no vi installed (apt-get install vim-tiny)")
    argv = [vi, "-u", "NONE", "-i", "NONE", "-n", text_file]
    p, first = start_program(session, argv)
    first.wait_for(top_is(1), "vi showing the file")
    first.send("200Gz\r")
    first.wait_for(top_is(200), "vi scrolled to line 200")
    first.wait_quiet()
    images = session.checkpoint()
    p.sigkill()
    first.close()

    r, term = restart_in_new_terminal(session, images, how)
    term.wait_for(shows_lines(200, NEW_ROWS),
                  "vi redrawn at line 200 for %d rows" % NEW_ROWS)
    assert_owns_terminal(restored_root(r, how), term, "restored vi")
    term.send("\x05")  # ^E: scroll one line
    term.wait_for(shows_lines(201, NEW_ROWS), "vi scrolled to 201")
    term.send(":q!\r")
    finish(r, term, "vi")


def only_child(pid, what, term):
    """The one child of pid; a clear failure with the screen (where
    ckpt_restart and the restored processes write their errors) when it
    has none, e.g. because the restored process died."""
    kids = children(pid)
    assert len(kids) == 1, "%s (pid %d) has children %r, expected one; " \
        "screen:\n%s" % (what, pid, kids, "\n".join(term.text()))
    return kids[0]


def bash_argv():
    return ["bash", "--norc", "--noprofile", "-i"]


@pytest.mark.time_limit(300)
@pytest.mark.parametrize("how", ["session", "outside", "from_shell"])
def test_bash_job_in_foreground(session, text_file, how):
    """bash -i runs less as a foreground job; both come back, less in the
    foreground, and bash gets the terminal back when less quits. how: see
    restart_in_new_terminal; from_shell: ckpt_restart is typed into
    another interactive bash, it is one job of that shell's session."""
    session.env["PS1"] = "inner$ "
    p, first = start_program(session, bash_argv(), stderr=True)
    first.wait_text(r"^inner\$$")
    first.send("less %s\r" % text_file)
    first.wait_for(top_is(1), "less showing the file")
    first.send("100g")
    first.wait_for(shows_lines(100, ROWS), "less at line 100")
    images = session.checkpoint(expect_images=2)
    session.kill_all()
    p.wait_exit(30)
    first.close()

    term = Terminal("new terminal", NEW_ROWS, NEW_COLS)
    restart = [session.tool("ckpt_restart")] + images
    if how != "from_shell":
        r = session.restart(images, **term.spawn_args(
            session=how == "session", stderr=True))
        bash_pid = r.pid
    else:
        session.env["PS1"] = "outer$ "
        r = session.start(bash_argv(), "outer bash",
                          **term.spawn_args(stderr=True))
    term.close_slave()
    if how == "from_shell":
        term.wait_text(r"^outer\$$")
        term.send("%s; echo restart-status=$?\r" % " ".join(restart))
    term.wait_for(shows_lines(100, NEW_ROWS),
                  "less redrawn at line 100 for %d rows" % NEW_ROWS)
    if how == "from_shell":
        bash_pid = only_child(r.pid, "the outer bash", term)
    less_pid = only_child(bash_pid, "the restored bash", term)
    pgid, sid, tty_nr, tpgid = session_ids(less_pid)
    assert (tty_nr, tpgid) == (term.rdev, pgid) and pgid == less_pid, (
        "restored less (pid %d): group %d, terminal %#x, foreground %d; "
        "expected its own group in the foreground of %#x" % (
            less_pid, pgid, tty_nr, tpgid, term.rdev))
    assert sid == session_ids(bash_pid)[1], "less left bash's session"
    if how != "from_shell":
        assert_owns_terminal(bash_pid, term, "restored bash", less_pid)
    term.send("j")
    term.wait_for(shows_lines(101, NEW_ROWS), "less scrolled to 101")
    term.send("q")
    term.wait_text(r"^inner\$$")
    term.send("echo job-status=$?\r")
    term.wait_text(r"^job-status=0$")
    term.send("exit\r")
    if how == "from_shell":
        term.wait_text(r"^restart-status=0$")
        term.send("exit\r")
    finish(r, term, "bash")
