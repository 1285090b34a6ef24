# SPDX-License-Identifier: LGPL-2.1-or-later
"""java with default options (the JIT and GC threads, a thread pool,
/tmp/hsperfdata_<user>/<pid> mapped shared): four tasks per step on a
fixed pool of two threads, each step's line written with java.nio.file
Files.write (NIO: the JDK signals threads blocked in I/O with its own
real-time signal) and printed. Two checkpoint -> kill -> restart cycles,
then the second checkpoint's images are restarted once more after the
JVM has exited normally (and removed its hsperfdata file)."""

import os

import pytest

from ckpt_harness import run as run_cmd
from realprogs.driver import Program, check_program, require

JAVA = "/usr/bin/java"
JAVAC = "/usr/bin/javac"
SOURCE = r"""
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

public class Work {
	static long task(int step, int part, int size) {
		Map<Long, Long> m = new HashMap<>();
		long x = step * 31L + part;
		for (int i = 0; i < size; i++) {
			x = x * 6364136223846793005L + 1442695040888963407L;
			m.merge((x >>> 40) % 4096, x >>> 50, Long::sum);
		}
		long s = 0;
		for (Map.Entry<Long, Long> e : m.entrySet())
			s += e.getKey() * e.getValue();
		return s;
	}

	public static void main(String[] args) throws Exception {
		int steps = Integer.parseInt(args[0]);
		int size = Integer.parseInt(args[1]);
		ExecutorService pool = Executors.newFixedThreadPool(2);
		Path last = Paths.get("last-step.txt");
		long acc = 17;
		for (int step = 1; step <= steps; step++) {
			List<Future<Long>> parts = new ArrayList<>();
			for (int p = 0; p < 4; p++) {
				final int st = step, pa = p;
				parts.add(pool.submit(() -> task(st, pa, size)));
			}
			for (Future<Long> f : parts)
				acc = acc * 31 + f.get();
			String line = "step " + step + " " + acc + "\n";
			Files.write(last, line.getBytes(StandardCharsets.UTF_8));
			System.out.print(line);
			System.out.flush();
		}
		pool.shutdown();
		Files.write(Paths.get("result.txt"),
			    List.of(Files.readString(last).trim(), "acc " + acc));
		System.out.println("final " + acc);
	}
}
"""


class Java(Program):
    name = "java"
    restart_again = True

    def setup(self, work):
        src = os.path.join(work, "Work.java")
        with open(src, "w") as f:
            f.write(SOURCE)
        r = run_cmd([JAVAC, "-d", work, src], 300)
        assert r.returncode == 0, "javac: %s" % r.stderr

    def argv(self, run):
        return [JAVA, "-cp", run.work, "Work", "100", "80000"]

    def finished(self, run):
        return os.path.exists(run.path("result.txt"))


@pytest.mark.time_limit(900)
def test_java(session):
    require(JAVA, "openjdk-17-jre-headless")
    require(JAVAC, "openjdk-17-jdk-headless")
    check_program(session, Java())
