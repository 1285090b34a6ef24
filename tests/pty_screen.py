# SPDX-License-Identifier: LGPL-2.1-or-later
"""A pseudo-terminal for the tests and a tiny VT100 screen behind it.

Terminal(rows, cols) opens a pty of that size; its slave is given to a
process (spawn_args() makes the process a session leader with the pty as
its controlling terminal, as a terminal emulator does). A thread reads the
master and feeds a Screen, which understands the VT100 subset that less,
vi and bash emit with TERM=vt100: cursor motion, erase, scroll regions,
insert/delete line, save/restore cursor; attributes are ignored. Every
wait is bounded.
"""

import fcntl
import os
import re
import struct
import termios
import threading
import time

class Screen:
    def __init__(self, rows, cols):
        self.resize(rows, cols)
        self._state = "text"
        self._params = ""

    def resize(self, rows, cols):
        self.rows, self.cols = rows, cols
        self.lines = [[" "] * cols for _ in range(rows)]
        self.y = self.x = 0
        self.top, self.bottom = 0, rows - 1
        self.saved = (0, 0)
        self.wrap_pending = False

    def text(self):
        return ["".join(l).rstrip() for l in self.lines]

    def _clamp(self):
        self.y = max(0, min(self.rows - 1, self.y))
        self.x = max(0, min(self.cols - 1, self.x))

    def _scroll_up(self, top, bottom, n=1):
        for _ in range(n):
            del self.lines[top]
            self.lines.insert(bottom, [" "] * self.cols)

    def _scroll_down(self, top, bottom, n=1):
        for _ in range(n):
            del self.lines[bottom]
            self.lines.insert(top, [" "] * self.cols)

    def _linefeed(self):
        if self.y == self.bottom:
            self._scroll_up(self.top, self.bottom)
        elif self.y < self.rows - 1:
            self.y += 1

    def _put(self, ch):
        if self.wrap_pending:
            self.x = 0
            self._linefeed()
            self.wrap_pending = False
        self.lines[self.y][self.x] = ch
        if self.x == self.cols - 1:
            self.wrap_pending = True
        else:
            self.x += 1

    def _erase_line(self, y, start, end):
        for x in range(start, end):
            self.lines[y][x] = " "

    def _csi(self, final, params):
        private = params.startswith("?")
        nums = [int(p) if p.isdigit() else 0
                for p in params.lstrip("?>").split(";")] if params else []
        n = nums[0] if nums and nums[0] else 1
        self.wrap_pending = False
        if private or final in "mhlnqcgt":
            return
        if final in "Hf":
            self.y = (nums[0] if nums and nums[0] else 1) - 1
            self.x = (nums[1] if len(nums) > 1 and nums[1] else 1) - 1
        elif final == "A":
            self.y -= n
        elif final == "B":
            self.y += n
        elif final == "C":
            self.x += n
        elif final == "D":
            self.x -= n
        elif final == "G":
            self.x = n - 1
        elif final == "d":
            self.y = n - 1
        elif final == "J":
            mode = nums[0] if nums else 0
            if mode in (0, 2):
                start = self.y + 1 if mode == 0 else 0
                for y in range(start, self.rows):
                    self._erase_line(y, 0, self.cols)
            if mode == 0:
                self._erase_line(self.y, self.x, self.cols)
            if mode == 1:
                for y in range(0, self.y):
                    self._erase_line(y, 0, self.cols)
                self._erase_line(self.y, 0, self.x + 1)
        elif final == "K":
            mode = nums[0] if nums else 0
            self._erase_line(self.y, *{0: (self.x, self.cols),
                                      1: (0, self.x + 1),
                                      2: (0, self.cols)}[mode % 3])
        elif final == "r":
            self.top = (nums[0] if nums and nums[0] else 1) - 1
            self.bottom = (nums[1] if len(nums) > 1 and nums[1]
                           else self.rows) - 1
            self.y = self.x = 0
        elif final == "L" and self.top <= self.y <= self.bottom:
            self._scroll_down(self.y, self.bottom, n)
        elif final == "M" and self.top <= self.y <= self.bottom:
            self._scroll_up(self.y, self.bottom, n)
        elif final == "P":
            row = self.lines[self.y]
            del row[self.x:self.x + n]
            row.extend([" "] * (self.cols - len(row)))
        elif final == "@":
            row = self.lines[self.y]
            row[self.x:self.x] = [" "] * n
            del row[self.cols:]
        elif final == "X":
            self._erase_line(self.y, self.x, min(self.cols, self.x + n))
        self._clamp()

    def _esc(self, ch):
        if ch == "7":
            self.saved = (self.y, self.x)
        elif ch == "8":
            self.y, self.x = self.saved
        elif ch == "M":
            if self.y == self.top:
                self._scroll_down(self.top, self.bottom)
            elif self.y > 0:
                self.y -= 1
        elif ch == "D":
            self._linefeed()
        elif ch == "E":
            self.x = 0
            self._linefeed()
        elif ch == "c":
            self.resize(self.rows, self.cols)

    def feed(self, data):
        for ch in data:
            st = self._state
            if st == "esc":
                if ch == "[":
                    self._state, self._params = "csi", ""
                elif ch in "()#":
                    self._state = "charset"
                else:
                    self._esc(ch)
                    self._state = "text"
            elif st == "charset":
                self._state = "text"
            elif st == "csi":
                if ch.isdigit() or ch in ";?>=":
                    self._params += ch
                else:
                    self._csi(ch, self._params)
                    self._state = "text"
            elif ch == "\x1b":
                self._state = "esc"
            elif ch == "\r":
                self.x = 0
                self.wrap_pending = False
            elif ch in "\n\x0b\x0c":
                self.wrap_pending = False
                self._linefeed()
            elif ch == "\b":
                self.wrap_pending = False
                self.x = max(0, self.x - 1)
            elif ch == "\t":
                self.x = min(self.cols - 1, (self.x // 8 + 1) * 8)
            elif ch >= " " and ch != "\x7f":
                self._put(ch)


def set_size(fd, rows, cols):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


class Terminal:
    """A pty of rows x cols whose output is shown on a Screen."""

    def __init__(self, name, rows=24, cols=80):
        self.name = name
        self.master, self.slave = os.openpty()
        set_size(self.slave, rows, cols)
        self.rdev = os.fstat(self.slave).st_rdev
        self.screen = Screen(rows, cols)
        self.raw = bytearray()
        self.closed = False
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self):
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                data = b""
            with self._cond:
                if not data:
                    self.closed = True
                    self._cond.notify_all()
                    return
                self.raw += data
                self.screen.feed(data.decode("utf-8", "replace"))
                self._cond.notify_all()

    def spawn_args(self, session=True, group=False, stderr=False):
        """Popen keywords: the slave on stdin and stdout (and stderr, which
        the harness otherwise collects); session: the process leads a new
        session with the pty as its controlling terminal, as under a
        terminal emulator; else it stays in its parent's session (group:
        in a process group of its own)."""
        def setup():
            if stderr:
                os.dup2(0, 2)
            if session:
                os.setsid()
                fcntl.ioctl(0, termios.TIOCSCTTY, 0)
            elif group:
                os.setpgid(0, 0)
        return {"stdin": self.slave, "stdout": self.slave,
                "preexec_fn": setup}

    def close_slave(self):
        """After the process got the slave: EOF on the master once every
        process holding it is gone."""
        if self.slave >= 0:
            os.close(self.slave)
            self.slave = -1

    def send(self, text):
        os.write(self.master, text.encode())

    def text(self):
        with self._cond:
            return self.screen.text()

    def wait_for(self, pred, what, timeout=60):
        """Wait until pred(screen lines) is true; returns its value."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                value = pred(self.screen.text())
                if value:
                    return value
                left = deadline - time.monotonic()
                if left <= 0 or self.closed:
                    break
                self._cond.wait(min(left, 0.5))
            lines = self.screen.text()
        raise AssertionError("%s: %s %s; screen:\n%s" % (
            self.name, "closed before" if self.closed else
            "timed out after %ds waiting for" % timeout, what,
            "\n".join("|" + l for l in lines)))

    def wait_text(self, regex, timeout=60):
        rx = re.compile(regex)
        return self.wait_for(
            lambda lines: next((m for m in map(rx.search, lines) if m),
                               None), "/%s/" % regex, timeout)

    def wait_quiet(self, quiet=0.5, timeout=30):
        """Wait until nothing was written for `quiet` seconds."""
        deadline = time.monotonic() + timeout
        with self._cond:
            seen = len(self.raw)
            last = time.monotonic()
            while time.monotonic() < deadline:
                self._cond.wait(0.1)
                if len(self.raw) != seen:
                    seen, last = len(self.raw), time.monotonic()
                elif time.monotonic() - last >= quiet:
                    return
        raise AssertionError("%s: output did not stop within %ds" % (
            self.name, timeout))

    def close(self):
        self.close_slave()
        try:
            os.close(self.master)
        except OSError:
            pass


def session_ids(pid):
    """(pgid, sid, tty_nr, tpgid) of a process, from /proc/PID/stat."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return tuple(int(x) for x in fields[2:6])


def children(pid):
    with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
        return [int(x) for x in f.read().split()]
