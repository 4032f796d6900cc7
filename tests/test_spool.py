"""test_spool.py: trace mode's spool (docs/design.md, "The spool"). While the command runs the
drain threads only copy records into TRACE.spool/; they are decoded after it.
1. A spooled trace equals, event for event, one decoded live (--no-spool), on prog_io
   (threads, a fork, an exec), and the spool existed during the run and is gone after.
2. kill -9 of the tracer mid-run, then `datacrumbs recover`: a valid trace marked
   incomplete, holding a gapless prefix of prog_flood's writes, and the spool removed.
3. A bound (--spool-size) and a full tmpfs: the spool stops, the rest is decoded live;
   written + not written + lost account exactly for prog_flood's N writes.
4. A script that requires luv is live: its timer sees the command's events while it runs.
5. recover refuses what is wrong, in one line: no SPOOL, another user's spool (as root),
   a symlink, a directory that is no spool, a FIFO for a shard; a journal cut short is
   used up to the cut. A run over a killed run's spool stops before replacing its trace."""
import os
import shutil
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import dctest  # noqa: E402
from dctest import check, equal  # noqa: E402

dctest.need_root()
PROG_IO = os.environ["PROG_IO"]
FLOOD = os.environ["PROG_FLOOD"]
DC = dctest.DATACRUMBS
WRITES = os.path.join(dctest.HERE, "data", "writes.lua")


def key(e, pids):
    """An event as the reader sees it, without what differs between two runs (times, the
    pids and tids the kernel gave, mmap's addresses, the parent's id, whose value depends on
    which thread took its block of ids first, the fd numbers): pids by their order of
    appearance."""
    path = e.get("path") or ""
    anon = path.startswith("pipe:[")  # a new pipe's inode each run
    # (and the fds the two threads' opens got: which one opens first is a race)
    a = {k: v for k, v in e.get("args", {}).items() if k not in ("hhash", "p_idx", "fd") and
         (k != "ret" or e["name"] not in ("mmap", "munmap", "mprotect", "brk", "openat")) and
         (k != "fhash" or not anon)}
    return (e["name"], e["cat"], pids.setdefault(e["pid"], len(pids)), "pipe" if anon else path,
            sorted((k, str(v)) for k, v in a.items()))


def events_of(trace):
    events, _, _ = dctest.read_trace(trace)
    pids = {}
    return sorted(key(e, pids) for e in events if e.get("ph") == "X" and
                  e["cat"] != "datacrumbs"), events


# 1. spooled = live ------------------------------------------------------------------------
runs = {}
for name, opts in (("spool", []), ("live", ["--no-spool"])):
    d = dctest.workdir("spool-equal")  # the same paths in both runs
    data = os.path.join(d, "data")
    os.mkdir(data)
    trace = os.path.join(d, "t.pfw.gz")
    r = dctest.run_dc(["run", "-o", trace] + opts + ["io_posix.lua", "--", PROG_IO, data])
    equal(r.returncode, 7, "%s: prog_io's exit status (%s)" % (name, r.stderr.strip()))
    dctest.check_pfw(trace)
    runs[name] = events_of(trace)
# the command says whether the spool is there while it runs
for name, opts in (("spool", []), ("live", ["--no-spool"])):
    d = dctest.workdir("spool-there")
    trace = os.path.join(d, "t.pfw.gz")
    r = dctest.run_dc(["run", "-o", trace] + opts + ["io_posix.lua", "--", "sh", "-c",
                      'test -d "$1.spool" && echo spooled', "sh", trace])
    equal(("spooled" in r.stdout, os.listdir(d)), (name == "spool", ["t.pfw.gz"]),
          "%s: (a spool during the run, what is left after it)" % name)
sp, live = runs["spool"][0], runs["live"][0]
equal(len(sp), len(live), "spooled and live: as many events")
diff = [e for e in sp if e not in live][:5] + [e for e in live if e not in sp][:5]
equal(diff, [], "spooled and live: the same events (first differences shown)")
for name in runs:
    end = [e for e in runs[name][1] if e.get("name") == "end"][0]["args"]
    equal((end["lost"], end["num_events"] > 50), (0, True), "%s: end record" % name)

# 2. kill -9, then recover -------------------------------------------------------------------
d = dctest.workdir("spool-kill")
trace = os.path.join(d, "t.pfw.gz")
N = 200000
# the command kills its tracer (its parent) once it wrote N times, then writes 5 more times,
# untraced
p = subprocess.Popen([DC, "run", "-o", trace, WRITES, "--", "sh", "-c",
                      '"$1" %d; kill -9 $PPID; "$1" 5' % N, "sh", FLOOD],
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
out, err = p.communicate(timeout=300)
equal(p.returncode, -signal.SIGKILL, "kill: the tracer died of SIGKILL (%s)" % err.strip())
spool = trace + ".spool"
check(os.path.isdir(spool), "kill: the spool is left")
# copies to damage below (section 5)
kept = dctest.workdir("spool-kept")
for name in ("cut", "fifo"):
    shutil.copytree(spool, os.path.join(kept, name + ".pfw.gz.spool"))
# a second run of the same name stops before its trace replaces the cut one
r = dctest.run_dc(["run", "--force", "-o", trace, WRITES, "--", "true"])
check(r.returncode == 125 and "a killed run's spool is there (`datacrumbs recover" in
      r.stderr and os.path.getsize(trace) < 4096 and os.path.isdir(spool),
      "a run over a killed run's spool: refused, nothing replaced (%d: %s)" %
      (r.returncode, r.stderr.strip()))
r = dctest.run_dc(["recover", spool])
equal(r.returncode, 0, "recover: exit status (%s)" % r.stderr.strip())
check("INCOMPLETE: recovered from" in r.stderr, "recover: says the trace is incomplete: %r"
      % r.stderr)
check(not os.path.exists(spool), "recover: the spool is removed")
if os.path.exists(trace):
    dctest.check_pfw(trace, partial=True)
    events, _, _ = dctest.read_trace(trace)
    w = [e for e in events if e.get("name") == "write" and e.get("path") == "/dev/null"]
    ids = [e["id"] for e in w]
    check(0 < len(w) <= N, "recover: %d of the %d writes" % (len(w), N))
    equal(ids, list(range(ids[0], ids[0] + len(ids))) if ids else [],
          "recover: the writes are a gapless run of call ids")
    check(len({e["pid"] for e in w}) == 1, "recover: no write of the untraced second run")
    check(not [e for e in events if e.get("name") == "end"], "recover: no end record")
    start = [e for e in events if e.get("name") == "start"]
    equal(len(start), 1, "recover: one start record")

# 3. a bound, and a full tmpfs ---------------------------------------------------------------
N3 = 100000


def summary(stderr):
    """(written, not written, lost) from the summary line."""
    import re
    m = re.search(r"datacrumbs: (\d+) events written(?:, (\d+) not written)?, (\d+) lost",
                  stderr)
    return (int(m.group(1)), int(m.group(2) or 0), int(m.group(3))) if m else None


d = dctest.workdir("spool-bound")
trace = os.path.join(d, "t.pfw.gz")
r = dctest.run_dc(["run", "-o", trace, "--spool-size", "64K", "--buffer-size", "64K", WRITES,
                   "--", FLOOD, str(N3)])
equal(r.returncode, 0, "bound: exit status (%s)" % r.stderr.strip())
check("its bound is reached (--spool-size; default half the free disk): from here on the "
      "events are decoded while the command runs" in r.stderr, "bound: said: %r" % r.stderr)
s = summary(r.stderr)
check(s is not None, "bound: a summary line: %r" % r.stderr)
if s:
    dctest.check_pfw(trace)
    events, _, _ = dctest.read_trace(trace)
    w = [e for e in events if e.get("name") == "write" and e.get("path") == "/dev/null"]
    end = [e for e in events if e.get("name") == "end"][0]["args"]
    equal((len(w), s[1], end["lost"]), (s[0], 0, s[2]), "bound: events in the file = written; "
          "lost as the end record says")
    # lost counts every record the ring buffer had no room for: the writes', and maybe
    # prog_flood's exit record (sent as it exits, the ring full of its last writes)
    check(N3 <= s[0] + s[2] <= N3 + 1, "bound: written + lost = the %d writes (+ its exit "
          "record, when lost too): %d + %d" % (N3, s[0], s[2]))
equal(os.listdir(d), ["t.pfw.gz"], "bound: only the trace is left")

d = dctest.workdir("spool-full")
small = os.path.join(d, "small")
os.mkdir(small)
subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", small], check=True)
try:
    r = dctest.run_dc(["run", "-o", small, WRITES, "--", FLOOD, str(N3)])
    equal(r.returncode, 125, "full: exit status 125 (%s)" % r.stderr.strip())
    # (its bound, half the free room, comes first: the disk keeps room for the trace)
    check(".spool: its bound is reached (--spool-size; default half the free disk): from "
          "here on the events are decoded" in r.stderr, "full: the spool's end said: %r" %
          r.stderr)
    s = summary(r.stderr)
    check(s is not None and s[0] + s[1] + s[2] == N3,
          "full: written + not written + lost = the %d writes: %r" % (N3, s))
    t = [f for f in os.listdir(small) if f.endswith(".pfw.gz")]
    equal(len(t), 1, "full: one trace, no spool left: %r" % os.listdir(small))
    if s and t:
        dctest.check_pfw(os.path.join(small, t[0]), partial=True)
        events, _, _ = dctest.read_trace(os.path.join(small, t[0]))
        equal(len([e for e in events if e.get("name") == "write"]), s[0],
              "full: the writes in the file = events written")
finally:
    subprocess.run(["umount", small], check=True)

# 4. a script that requires luv is live -----------------------------------------------------
d = dctest.workdir("spool-luv")
tick = os.path.join(d, "tick")
script = os.path.join(d, "tick.lua")
with open(script, "w") as f:
    f.write('''local dc = require "datacrumbs"
local uv = require "luv"
dc.probe { layer = "posix", functions = { "write" } }
local n = 0
dc.on_event(function(ev) if ev.path == "/dev/null" then n = n + 1 end end)
local t = uv.new_timer()
t:start(10, 10, function()
  if n > 0 then
    local f = io.open(TICK, "w"); f:write(n, "\\n"); f:close(); t:stop()
  end
end)
'''.replace("TICK", '"%s"' % tick))
# the command writes once, then waits until the script's timer saw that write
r = dctest.run_dc(["run", "-o", d, script, "--", "sh", "-c",
                   'echo x > /dev/null; while [ ! -s "$1" ]; do :; done; cat "$1"', "sh", tick],
                  timeout=120)
equal((r.returncode, r.stdout.strip()), (0, "1"),
      "luv: the timer saw the command's write while it ran (%s)" % r.stderr.strip())
equal([f for f in os.listdir(d) if f.endswith(".spool")], [], "luv: no spool")

# 5. recover's usage errors ------------------------------------------------------------------
d = dctest.workdir("spool-usage")
other = os.path.join(d, "x.pfw.gz.spool")  # another user's: its records are not read
os.mkdir(other)
os.chown(other, 65534, 65534)
os.symlink(other, os.path.join(d, "link.pfw.gz.spool"))
for args, want in ((["recover"], "no SPOOL given"),
                   (["recover", other], "is owned by uid 65534, not by you (uid 0)"),
                   (["recover", os.path.join(d, "link.pfw.gz.spool")],
                    "not a directory (a symbolic link is not followed)"),
                   (["recover", os.path.join(d, "none")], "none: No such file or directory"),
                   (["recover", d], "journal: No such file or directory")):
    r = dctest.run_dc(args)
    check(r.returncode != 0 and want in r.stderr.splitlines()[0],
          "%s: exit %d, first line %r" % (" ".join(args), r.returncode,
                                          r.stderr.splitlines()[:1]))
# a FIFO in place of a shard file: refused at once, never opened for reading (it would block)
fifo = os.path.join(kept, "fifo.pfw.gz.spool")
os.unlink(os.path.join(fifo, "shard-0"))
os.mkfifo(os.path.join(fifo, "shard-0"))
r = dctest.run_dc(["recover", fifo], timeout=60)
check(r.returncode == 1 and "shard-0: not a regular file" in r.stderr,
      "a FIFO shard: one line (%d: %s)" % (r.returncode, r.stderr.strip()))
# a journal cut by the kill: the entries before the cut are used
cut = os.path.join(kept, "cut.pfw.gz.spool")
with open(os.path.join(cut, "journal"), "r+b") as f:
    f.truncate(os.path.getsize(os.path.join(cut, "journal")) - 5)
r = dctest.run_dc(["recover", cut])
equal(r.returncode, 0, "a cut journal: recovered (%s)" % r.stderr.strip())
check("cut short after byte" in r.stderr, "a cut journal: said: %r" % r.stderr)
if r.returncode == 0:
    dctest.check_pfw(os.path.join(kept, "cut.pfw.gz"), partial=True)
dctest.finish()
