# SPDX-License-Identifier: LGPL-2.1-or-later
"""Files on temporary storage mapped MAP_SHARED (a JVM's
/tmp/hsperfdata_<user>/<pid>): their content is saved, and a restart
recreates or puts back the file, shared by the processes that map it."""

import os
import re

import pytest

from ckpt_harness import app, numbers, reference_output

STEPS, PAUSE_MS = 90, 30
STEP = r"^step (\d+)"
DIGEST = r"^digest ([0-9a-f]{16})$"


def native_digest(path, unlink_at=None):
    argv = [app("tmp_mapping"), path, str(STEPS), "0"]
    if unlink_at:
        argv.append(str(unlink_at))
    out = reference_output(argv, cache=False)
    return [l for l in out if re.match(DIGEST, l)]


def checkpoint_kill(s, proc, at, nimages=2):
    """Checkpoint both processes once step `at` is reached, then kill."""
    proc.wait_line(STEP, minimum=at)
    seen = max(numbers(proc.lines(), STEP))
    images = s.checkpoint(expect_images=nimages)
    assert proc.alive(), "%s exited during the checkpoint: %s" % (
        proc.name, proc.stderr_text())
    s.kill_all()
    proc.wait_exit(30)
    assert proc.out.wait_closed(15), "%s: stdout stayed open" % proc.name
    return images, (seen, max(numbers(proc.lines(), STEP)))


def assert_continues(proc, seen):
    """The restart resumes after the step seen before the checkpoint was
    asked for, and at most one after the last one printed before the
    kill; then every step follows."""
    first_possible, last_printed = seen
    steps = numbers(proc.lines(), STEP)
    assert steps, "%s printed no step; stderr:\n%s" % (
        proc.name, proc.stderr_text())
    assert first_possible < steps[0] <= last_printed + 1, (
        "%s resumed at step %d; the checkpoint came after step %d, the "
        "kill after step %d" % (proc.name, steps[0], first_possible,
                                last_printed))
    assert steps == list(range(steps[0], steps[-1] + 1)), steps


def run_to_end(s, images, seen):
    r = s.restart(images)
    rc = r.wait_exit()
    assert rc == 0, "%s: exit %d; last lines %r; stderr:\n%s" % (
        r.name, rc, r.lines()[-5:], r.stderr_text())
    assert_continues(r, seen)
    return r, [l for l in r.lines() if re.match(DIGEST, l)]


def mapped_twice_cycle(s, path, unlink_at=None, unlink_between=True):
    """Two checkpoint -> kill -> restart cycles; returns the final
    digest lines and the restarts' stderr."""
    argv = [app("tmp_mapping"), path, str(STEPS), str(PAUSE_MS)]
    if unlink_at:
        argv.append(str(unlink_at))
    p = s.launch(argv)
    images, seen = checkpoint_kill(s, p, 20)
    if unlink_between and os.path.exists(path):
        os.unlink(path)      # gone, as after the JVM's exit or a reboot
    r1 = s.restart(images)
    r1.wait_line(STEP, minimum=seen[1] + 15)
    assert_continues(r1, seen)
    images, seen = checkpoint_kill(s, r1, seen[1] + 15)
    if unlink_between and os.path.exists(path):
        os.unlink(path)
    r2, digest = run_to_end(s, images, seen)
    return digest, r1.stderr_text() + r2.stderr_text()


@pytest.mark.time_limit(600)
def test_shared_tmp_mapping_file_gone_at_restart(session):
    """The mapped file is deleted after each checkpoint: the restart
    recreates it from the image, and the two processes share it again."""
    path = session.path("hsperfdata_42")
    ref = native_digest(session.path("ref_hsperf"))
    digest, err = mapped_twice_cycle(session, path)
    assert digest == ref, "digest %r, native %r; stderr:\n%s" % (
        digest, ref, err)
    assert re.search(r"ckpt_restart: %s was gone; recreated from" %
                     re.escape(path), err), err


@pytest.mark.time_limit(600)
def test_shared_tmp_mapping_unlinked_before_checkpoint(session):
    """The program unlinked the file itself while both processes map it:
    the one shared object comes back, still shared, twice."""
    path = session.path("hsperfdata_43")
    ref = native_digest(session.path("ref_hsperf"), unlink_at=5)
    digest, err = mapped_twice_cycle(session, path, unlink_at=5)
    assert digest == ref, "digest %r, native %r; stderr:\n%s" % (
        digest, ref, err)
    assert not os.path.exists(path), "the unlinked file came back"


@pytest.mark.time_limit(600)
def test_shared_tmp_mapping_same_image_restarted_twice(session):
    """The first restart runs to the end and leaves the file changed;
    restarting the same images again puts the content back as it was at
    the checkpoint."""
    path = session.path("hsperfdata_44")
    ref = native_digest(session.path("ref_hsperf"))
    p = session.launch([app("tmp_mapping"), path, str(STEPS),
                        str(PAUSE_MS)])
    images, seen = checkpoint_kill(session, p, 20)
    saved = {img: open(img, "rb").read() for img in images}
    _, digest = run_to_end(session, images, seen)
    assert digest == ref
    assert os.path.exists(path)
    for img, data in saved.items():
        with open(img, "wb") as f:
            f.write(data)
    r, digest = run_to_end(session, images, seen)
    assert digest == ref, "second restart: digest %r, native %r; " \
        "stderr:\n%s" % (digest, ref, r.stderr_text())
    assert re.search(r"%s changed since the checkpoint; put back" %
                     re.escape(path), r.stderr_text()), r.stderr_text()


def test_inspect_decodes_saved_mapping(session):
    path = session.path("hsperfdata_45")
    p = session.launch([app("tmp_mapping"), path, str(STEPS),
                        str(PAUSE_MS)])
    p.wait_line(STEP, minimum=10)
    images = session.checkpoint(expect_images=2)
    text = "".join(session.inspect(img) for img in images)
    p.sigkill()
    assert re.search(r"%s: written,mapped-shared,temporary, 65536 bytes.*"
                     r"content saved here" % re.escape(path), text), text
    assert "content saved in another image" in text, text


JAVA_COUNT = """
public class Count {
    public static void main(String[] a) throws Exception {
        long sum = 0;
        for (int i = 1; i <= 60; i++) {
            sum += (long) i * i;
            System.out.println("step " + i + " sum " + sum);
            Thread.sleep(50);
        }
    }
}
"""


@pytest.mark.time_limit(600)
def test_java_hsperfdata_gone_at_restart(session):
    """The reported case: a JVM maps /tmp/hsperfdata_<user>/<pid> and
    deletes it at exit (or a reboot does): the image still restarts."""
    import shutil
    import subprocess
    if not shutil.which("java") or not shutil.which("javac"):
        pytest.skip("java/javac not installed (Debian: default-jdk)")
    src = session.path("Count.java")
    with open(src, "w") as f:
        f.write(JAVA_COUNT)
    subprocess.run(["javac", "-d", session.dir, src], check=True,
                   timeout=120)
    p = session.launch(["java", "-cp", session.dir, "Count"])
    images, seen = checkpoint_kill(session, p, 10, nimages=1)
    m = re.search(r"^  (/\S*/hsperfdata_[^/]+/\d+): \S*mapped-shared\S*, "
                  r".*content saved here", session.inspect(images[0]), re.M)
    assert m, session.inspect(images[0])
    if os.path.exists(m.group(1)):
        os.unlink(m.group(1))
    r = session.restart(images)
    assert r.wait_exit() == 0, r.stderr_text()
    assert_continues(r, seen)
    assert r.lines()[-1] == "step 60 sum 73810"
    assert "was gone; recreated" in r.stderr_text()
