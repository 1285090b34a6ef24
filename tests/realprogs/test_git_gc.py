# SPDX-License-Identifier: LGPL-2.1-or-later
"""git gc --aggressive on a generated repository (200 commits of 40
files that change a little each time, imported as one pack): git runs
pack-refs, reflog, repack (pack-objects searching deltas on two threads),
prune and commit-graph as child processes. Compared: the objects, refs
and working files, fsck's verdict, the number of packs (the pack's bytes
may differ with the delta search's threads)."""

import hashlib
import os
import subprocess

import pytest

from realprogs.driver import Program, check_program, hash_tree, require

GIT = "/usr/bin/git"
GIT_ENV = {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@example.org",
           "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@example.org",
           "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent"}


def fast_import_stream(commits, files):
    out, contents, x = [], {}, 1
    for c in range(1, commits + 1):
        out.append(b"commit refs/heads/master\nmark :%d\n"
                   b"committer a <a@example.org> %d +0000\n"
                   b"data <<EOT\ncommit %d\nEOT\n" % (c, 1700000000 + c, c))
        if c > 1:
            out.append(b"from :%d\n" % (c - 1))
        for f in range(files):
            x = (x * 1103515245 + 12345) % 2147483648
            if x % 3 and c > 1:
                continue
            lines = contents.get(f) or [
                b"file %d line %d value %d\n" % (f, k, k * 7919 % 10007)
                for k in range(200)]
            lines[x % len(lines)] = b"changed in %d: %d\n" % (c, x)
            lines.insert((x >> 8) % len(lines), b"inserted %d %d\n" % (
                c, x % 1000))
            contents[f] = lines
            data = b"".join(lines)
            out.append(b"M 100644 inline dir%d/file%d.txt\ndata %d\n%s\n"
                       % (f % 10, f, len(data), data))
        out.append(b"\n")
    return b"".join(out)


def git(work, *args, **kw):
    env = dict(os.environ, LC_ALL="C", **GIT_ENV)
    return subprocess.run([GIT, "-C", work] + list(args), env=env,
                          capture_output=True, timeout=300, **kw)


class GitGc(Program):
    name = "git-gc"
    progress_kind = "time"
    marks = (0.2, 0.2)

    def setup(self, work):
        r = git(work, "init", "-q", "-b", "master", ".")
        assert r.returncode == 0, r.stderr
        r = git(work, "fast-import", "--quiet",
                input=fast_import_stream(200, 40))
        assert r.returncode == 0, r.stderr
        r = git(work, "reset", "-q", "--hard")
        assert r.returncode == 0, r.stderr

    def argv(self, run):
        return [GIT, "gc", "--aggressive"]

    def env(self, run):
        return GIT_ENV

    def finished(self, run):
        return os.path.exists(run.path(".git", "objects", "info",
                                       "commit-graph"))

    def files(self, work):
        out = hash_tree(work, skip=(r"^\.git/objects/pack/",))
        objects = git(work, "cat-file", "--batch-all-objects",
                      "--batch-check")
        out["objects"] = hashlib.sha256(objects.stdout).hexdigest()
        out["refs"] = git(work, "for-each-ref").stdout.decode()
        fsck = git(work, "fsck", "--full", "--no-progress")
        out["fsck"] = (fsck.returncode, fsck.stdout, fsck.stderr)
        out["packs"] = sorted(
            os.path.splitext(n)[1] for n in
            os.listdir(os.path.join(work, ".git", "objects", "pack")))
        out["loose"] = git(work, "count-objects").stdout.split(b",")[0]
        return out


@pytest.mark.time_limit(900)
def test_git_gc(session):
    require(GIT, "git")
    check_program(session, GitGc())
