# SPDX-License-Identifier: LGPL-2.1-or-later
"""Open files that change after the checkpoint: a restart warns about each
file open for writing whose size or mtime changed, and
`ckpt_launch --save-files GLOB` saves such files with the checkpoint and
puts them back at restart (an append-only log is rolled back: no line
doubled)."""

import os
import subprocess
import re
import shutil
import tempfile
import time

import pytest

from ckpt_harness import ROOT, app, numbers, reference_output, run

LINES, PAUSE_MS = 160, 25
LINE = r"^line (\d+)$"


def on_temporary_storage(path):
    """As libckpt decides it: under /tmp or /var/tmp, or on tmpfs."""
    real = os.path.realpath(path) + "/"
    if real.startswith(("/tmp/", "/var/tmp/")):
        return True
    r = subprocess.run(["stat", "-f", "-c", "%T", path], capture_output=True,
                       text=True, timeout=30)
    return r.stdout.strip() in ("tmpfs", "ramfs")


@pytest.fixture
def datadir():
    """A directory on ordinary storage: files under /tmp have their
    content saved anyway (temporary storage)."""
    d = tempfile.mkdtemp(prefix="save-files-", dir=os.path.join(ROOT,
                                                                 "build"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def read(path):
    with open(path) as f:
        return f.read()


def native_log(datadir, writers=1):
    ref = os.path.join(datadir, "ref.log")
    out = reference_output([app("log_appender"), ref, str(LINES), "0",
                            str(writers)], cache=False)
    assert out[-1] == "done"
    return read(ref)


def checkpoint_then_more_then_kill(s, proc, at, more=15, images=1):
    """Checkpoint after line `at`, let the program append `more` lines,
    kill the computation."""
    proc.wait_line(LINE, minimum=at)
    imgs = s.checkpoint(expect_images=images)
    seen = max(numbers(proc.lines(), LINE))
    assert seen < LINES, "the program ended during the checkpoint"
    # a loaded machine can make the checkpoint last most of the run
    proc.wait_line(LINE, minimum=min(seen + more, LINES))
    s.kill_all()
    proc.wait_exit(30)
    return imgs, seen


def restart_to_done(s, images):
    r = s.restart(images)
    rc = r.wait_exit()
    assert rc == 0, "%s: exit %d; last lines %r; stderr:\n%s" % (
        r.name, rc, r.lines()[-5:], r.stderr_text())
    assert r.lines()[-1] == "done", r.lines()[-5:]
    return r


@pytest.mark.time_limit(600)
def test_log_rolled_back_with_save_files(session, datadir):
    ref = native_log(datadir)
    log = os.path.join(datadir, "app.log")
    p = session.launch([app("log_appender"), log, str(LINES),
                        str(PAUSE_MS)],
                       extra=["--save-files", os.path.join(datadir,
                                                           "*.log")])
    images, seen = checkpoint_then_more_then_kill(session, p, 20)
    r = restart_to_done(session, images)
    assert read(log) == ref, "the log differs from a native run's " \
        "(lines doubled?):\n%s" % read(log)
    assert re.search(r"ckpt_restart: %s changed since the checkpoint; put "
                     r"back as it was then" % re.escape(log),
                     r.stderr_text()), r.stderr_text()
    assert "warning" not in r.stderr_text(), r.stderr_text()


@pytest.mark.time_limit(600)
def test_changed_log_warns_without_save_files(session, datadir):
    log = os.path.join(datadir, "app.log")
    p = session.launch([app("log_appender"), log, str(LINES),
                        str(PAUSE_MS)])
    images, seen = checkpoint_then_more_then_kill(session, p, 20)
    r = restart_to_done(session, images)
    assert re.search(r"ckpt_restart: warning: %s, open for writing by "
                     r"log_appender \(pid \d+\), changed since the "
                     r"checkpoint \(\d+ bytes then, \d+ now, modified "
                     r"since\)" % re.escape(log), r.stderr_text()), \
        r.stderr_text()


@pytest.mark.time_limit(600)
def test_shared_log_of_two_processes_restored_once(session, datadir):
    """Parent and child append through one open file description: the
    file is saved once (in one image) and rolled back once."""
    ref = native_log(datadir, writers=2)
    log = os.path.join(datadir, "shared.log")
    p = session.launch([app("log_appender"), log, str(LINES),
                        str(PAUSE_MS), "2"],
                       extra=["--save-files", log])
    p.wait_line(LINE, minimum=10)
    text = ""
    images, seen = checkpoint_then_more_then_kill(session, p, 20, images=2)
    for img in images:
        text += session.inspect(img)
    assert len(re.findall(r"%s: written,(temporary,)?save-files, \d+ bytes.*content "
                          r"saved here" % re.escape(log), text)) == 1, text
    assert "content saved in another image" in text, text
    restart_to_done(session, images)
    got = read(log).splitlines()
    assert len(got) == len(set(got)), "lines doubled: %r" % got
    assert sorted(got) == sorted(ref.splitlines())


@pytest.mark.time_limit(600)
def test_mapped_file_put_back_with_save_files(session, datadir):
    """A file written only through a MAP_SHARED mapping (not on temporary
    storage): restarting the same images a second time, after the first
    restart changed the file, finds it as it was at the checkpoint."""
    path = os.path.join(datadir, "shared.map")
    ref = [l for l in reference_output(
        [app("tmp_mapping"), os.path.join(datadir, "ref.map"), "90", "0"],
        cache=False) if l.startswith("digest")]
    p = session.launch([app("tmp_mapping"), path, "90", "30"],
                       extra=["--save-files", path])
    p.wait_line(r"^step (\d+)$", minimum=20)
    images = session.checkpoint(expect_images=2)
    session.kill_all()
    p.wait_exit(30)
    saved = {img: open(img, "rb").read() for img in images}
    for attempt in (1, 2):
        for img, data in saved.items():
            with open(img, "wb") as f:
                f.write(data)
        r = session.restart(images)
        rc = r.wait_exit()
        digest = [l for l in r.lines() if l.startswith("digest")]
        assert rc == 0 and digest == ref, (
            "restart %d: exit %d, digest %r, native %r; stderr:\n%s" % (
                attempt, rc, digest, ref, r.stderr_text()))


def test_corrupt_saved_content_refused(session, datadir):
    """The saved content is checksummed: a flipped byte makes ckpt_inspect
    and ckpt_restart refuse the image, and the file is left alone."""
    log = os.path.join(datadir, "app.log")
    p = session.launch([app("log_appender"), log, str(LINES),
                        str(PAUSE_MS)], extra=["--save-files", log])
    images, seen = checkpoint_then_more_then_kill(session, p, 10)
    m = re.search(r"content saved here \(offset (\d+),",
                  session.inspect(images[0]))
    assert m, session.inspect(images[0])
    with open(images[0], "r+b") as f:
        f.seek(int(m.group(1)) + 3)
        b = f.read(1)
        f.seek(int(m.group(1)) + 3)
        f.write(bytes([b[0] ^ 0x20]))
    before = read(log)
    r = run([session.tool("ckpt_inspect"), images[0]], 30)
    assert r.returncode == 1
    assert re.search(r"file %s: checksum mismatch" % re.escape(log),
                     r.stderr), r.stderr
    rs = session.restart(images)
    assert rs.wait_exit() == 1
    assert re.search(r"putting back %s from the image failed: checksum "
                     r"mismatch" % re.escape(log), rs.stderr_text()), \
        rs.stderr_text()
    assert read(log) == before


@pytest.mark.time_limit(600)
def test_save_files_survives_exec_with_empty_environment(session, datadir):
    """`env -i PROGRAM` drops the environment: the exec'd program still
    gets --save-files (and the rollback works)."""
    ref = native_log(datadir)
    log = os.path.join(datadir, "app.log")
    p = session.launch(["/usr/bin/env", "-i", app("log_appender"), log,
                        str(LINES), str(PAUSE_MS)],
                       extra=["--save-files", os.path.join(datadir, "*")])
    images, seen = checkpoint_then_more_then_kill(session, p, 20)
    restart_to_done(session, images)
    assert read(log) == ref, "lines doubled:\n%s" % read(log)


@pytest.mark.time_limit(600)
def test_changed_shared_mapping_warns_without_save_files(session, datadir):
    """A file written through a writable MAP_SHARED mapping and changed
    after the checkpoint is named at restart."""
    if on_temporary_storage(datadir):
        pytest.skip("the checkout is on temporary storage (%s): a shared "
                    "mapping there has its content saved, no warning"
                    % datadir)
    path = os.path.join(datadir, "shared.map")
    p = session.launch([app("tmp_mapping"), path, "90", "30"])
    p.wait_line(r"^step (\d+)$", minimum=20)
    images = session.checkpoint(expect_images=2)
    session.kill_all()
    p.wait_exit(30)
    with open(path, "r+b") as f:     # an unused slot at the end
        f.seek(65536 - 8)
        f.write(b"changed!")
    r = session.restart(images)
    rx = re.compile(r"ckpt_restart: warning: %s, mapped for writing by "
                    r"tmp_mapping \(pid \d+\), changed since the checkpoint"
                    % re.escape(path))
    r.err.wait_for(lambda lines: any(rx.search(l) for l in lines), 60,
                   "the warning")
    # The restored pair runs against the changed file (and stops after
    # 60 s: its turns are out of step); kill it once both joined.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and session.command(
            "--list").stdout.count("tmp_mapping") < 2:
        time.sleep(0.1)
    session.kill_all()
    r.wait_exit(90)
