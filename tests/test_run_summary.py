"""test_run_summary.py: `datacrumbs run -c` prints pfw_summary's tables of the trace on
stderr after the summary line (exactly `datacrumbs summary TRACE`'s output); the live
status line appears only when stderr is a terminal (a pty here: the test reads it until it
sees a status line, then lets prog_wait end by closing its stdin), and gives way to the
summary line; with stderr a pipe, or --no-status, there is none."""
import os
import pty
import re
import select
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dctest as t  # noqa: E402

PROG_WAIT = os.environ.get("PROG_WAIT", "build/tests/prog_wait")
# the status line: events/s and the loss over the last flush interval, then the totals
STATUS = re.compile(rb"\r\x1b\[Kdatacrumbs: (\d+) events/s, (\d+\.\d)% lost; (\d+) events, "
                    rb"(\d+) lost\r")


def main():
    t.need_root()
    wd = t.workdir("run_summary")
    out = os.path.join(wd, "f")
    # -c with stderr a pipe: the summary line, then the tables; no status line
    trace = os.path.join(wd, "c.pfw.gz")
    r = t.run_dc(["run", "-c", "-o", trace, "io_posix.lua", "--", PROG_WAIT, "after", out, "100"],
                 input="x")
    t.equal(r.returncode, 0, "run -c: exit status (%s)" % r.stderr)
    t.check_pfw(trace)
    s = t.run_dc(["summary", trace])
    t.equal(s.returncode, 0, "datacrumbs summary: exit status")
    lines = r.stderr.split("\n", 1)
    t.check(re.match(r"datacrumbs: \d+ events written, 0 lost, trace %s$" % re.escape(trace),
                     lines[0]), "run -c: the summary line first: %r" % lines[0])
    t.equal(lines[1] if len(lines) > 1 else "", s.stdout, "run -c: then the summary's tables")
    t.check("\r" not in r.stderr, "no status line when stderr is not a terminal")
    t.check(("  %s " % (out if len(out) <= 40 else "..." + out[-37:])) in s.stdout,
            "the summary has the written file's row")

    # stderr a terminal: status lines while the command runs
    for opts, want_status in (([], True), (["--no-status"], False)):
        trace = os.path.join(wd, "tty%s.pfw.gz" % "".join(opts))
        master, slave = os.openpty()
        p = subprocess.Popen([t.DATACRUMBS, "run", "--flush-interval", "300", "-o", trace] + opts +
                             ["io_posix.lua", "--", PROG_WAIT, "after", out, "100"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=slave)
        os.close(slave)
        seen = b""
        ready = p.stdout.readline()  # prog_wait: "ready PID", then it waits for stdin
        t.check(ready.startswith(b"ready"), "prog_wait started: %r" % ready)
        if want_status:
            while not STATUS.search(seen):
                rl, _, _ = select.select([master], [], [], 60)
                if not rl:
                    break
                seen += os.read(master, 4096)
            t.check(STATUS.search(seen), "status line on the terminal: %r" % seen[-200:])
            m = STATUS.search(seen)
            t.equal(m and (m.group(2), m.group(4)), (b"0.0", b"0"),
                    "status line: nothing lost (0.0 %, 0 lost)")
            # the first line's rate counts from the start (it read 0 events/s)
            t.check(m and (int(m.group(3)) == 0) == (int(m.group(1)) == 0),
                    "the first status line: events/s > 0 once events are written: %r" %
                    (m and m.group(0)))
        p.stdin.close()  # prog_wait reads EOF, writes, exits
        p.wait(timeout=120)
        while True:
            try:
                rl, _, _ = select.select([master], [], [], 5)
                chunk = os.read(master, 4096) if rl else b""
            except OSError:  # EIO: the pty's other end is closed
                chunk = b""
            if not chunk:
                break
            seen += chunk
        os.close(master)
        what = "tty %s" % (" ".join(opts) or "(status)")
        t.equal(p.returncode, 0, "%s: exit status" % what)
        t.check_pfw(trace)
        final = re.search(rb"(\r\x1b\[K)?datacrumbs: \d+ events written, 0 lost, trace ", seen)
        t.check(final, "%s: the summary line: %r" % (what, seen[-300:]))
        if want_status:
            t.check(final and final.group(1), "%s: the status line gives way to it" % what)
        else:
            t.check(b"\r" not in seen.replace(b"\r\n", b"\n"), "%s: no status line: %r" % (what, seen))
    t.finish()


if __name__ == "__main__":
    main()
