# SPDX-License-Identifier: LGPL-2.1-or-later
"""A pure-Python program for tests/test_gdb_python.py: each step descends
three calls deep and sleeps for no time there (a breakpoint on the
interpreter's time_sleep stops at a known Python depth), then prints a
sum that depends on every step."""

import time


def descend(depth, step):
    if depth == 0:
        time.sleep(0)                       # line: the sleep
        return step * step
    return descend(depth - 1, step) + depth


def main():
    total = 0
    for step in range(6):
        total += descend(3, step)           # line: the loop's call
    print("total %d" % total)


main()
