# SPDX-License-Identifier: LGPL-2.1-or-later
"""A typical heap for bench.py --only compress: python3 holding many small
objects (dicts of ints and short strings, as a program's records) and a
text buffer, about MIB MiB in all. Prints "ready", then answers each
"ping" line on stdin with "pong"."""

import sys

mib = int(sys.argv[1]) if len(sys.argv) > 1 else 256
words = ("checkpoint restart memory extent process image thread signal "
         "pipe socket file region page header table record").split()
records = []
n = mib * 1024 * 1024 // 2 // 400      # half in records (~400 B each)
for i in range(n):
    records.append({"id": i, "name": "%s-%d" % (words[i % len(words)], i),
                    "tags": [words[(i * 7) % len(words)],
                             words[(i * 3) % len(words)]],
                    "score": (i * 2654435761) % 1000003 / 7.0})
lines = []
size, i = 0, 0
while size < mib * 1024 * 1024 // 2:  # half in text
    line = "%d %s %s %s\n" % (i, words[i % 16], words[(i * 5) % 16],
                              words[(i * 11) % 16])
    lines.append(line)
    size += len(line)
    i += 1
text = "".join(lines)
del lines
print("ready", flush=True)
for cmd in sys.stdin:
    if cmd.strip() == "ping":
        print("pong", flush=True)
