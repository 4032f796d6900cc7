"""test_profile.py: profile mode (--mode profile, dc.mode): counters per interval, process,
function and file whose totals equal trace mode's for the same deterministic command
(count and bytes per function and file), each call in exactly one interval, interval
starts on the interval grid; and the Lua map-read API (dc.aggregates, dc.totals)."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
import dctest  # noqa: E402
from dctest import check, equal  # noqa: E402

dctest.need_root()
ROUNDS = 5


def command(data):
    # 5 rounds of dd (100 x 64 KiB reads and writes), 150 ms apart: the calls span
    # several 100 ms intervals (the pause is the program's pacing, not a test's wait)
    loop = ("for i in 1 2 3 4 5; do dd if=/dev/zero of=%s/dd.$i bs=64k count=100 "
            "status=none; sleep 0.15; done" % data)
    return ["/bin/sh", "-c", loop]


def run(name, opts, script="io_posix.lua"):
    d = dctest.workdir("profile-" + name)
    data = os.path.join(d, "data")
    os.makedirs(data)
    r = dctest.run_dc(["run", "-o", d] + opts + [script, "--"] + command(data))
    equal(r.returncode, 0, "%s: exit status (stderr: %s)" % (name, r.stderr.strip()))
    trace = dctest.find_trace(d)
    dctest.check_pfw(trace)
    events, _, _ = dctest.read_trace(trace)
    return data, r, events


def where(e, data):
    """The event's file relative to data; pipes by kind (their inode differs per run)."""
    if not e["path"]:
        return None
    return "pipe" if "pipe:[" in e["path"] else os.path.relpath(e["path"], data)


def totals_trace(events, data):
    t = {}
    for e in events:
        if e.get("ph") == "X" and e["cat"] == "POSIX":
            k = (e["name"], where(e, data))
            c = t.setdefault(k, [0, 0])
            c[0] += 1
            c[1] += e["args"].get("count", 0)
    return t


def totals_profile(events, data):
    t = {}
    for e in events:
        if e.get("ph") == "C" and e["cat"] == "POSIX":
            k = (e["name"], where(e, data))
            c = t.setdefault(k, [0, 0])
            c[0] += e["args"]["count"]
            c[1] += e["args"].get("size_sum", 0)
    return t


# 1. the same command in trace and profile mode: equal totals per function and file
data_t, _, ev_t = run("trace", [])
data_p, r, ev_p = run("profile", ["--mode", "profile", "--interval", "100ms"])
tt, tp = totals_trace(ev_t, data_t), totals_profile(ev_p, data_p)
for i in range(1, ROUNDS + 1):
    equal(tp.get(("write", "dd.%d" % i)), [100, 100 * 65536], "profile: dd.%d's writes and bytes" % i)
equal(tp.get(("read", "../../../../../dev/zero".replace("../../../../../", os.path.relpath("/", data_p) + "/"))),
      [100 * ROUNDS, 100 * ROUNDS * 65536], "profile: /dev/zero's reads and bytes")
diff = {k: (tp.get(k), tt.get(k)) for k in set(tp) | set(tt) if tp.get(k) != tt.get(k)}
equal(diff, {}, "profile totals (count, bytes per function and file) == trace mode's "
      "(differences as (profile, trace))")
check(len(tt) > 50, "many (function, file) pairs compared: %d" % len(tt))
equal([e for e in ev_p if e.get("ph") == "X" and e["cat"] == "POSIX"], [],
      "profile mode writes no complete events for the calls")
end = [e for e in ev_p if e.get("name") == "end"][0]
counters = [e for e in ev_p if e.get("ph") == "C"]
equal(end["args"]["num_events"], len(counters), "end record counts the counter events")
equal(end["args"]["lost"], 0, "nothing lost")

# 2. intervals: starts on the 100 ms grid, several of them, each key once per interval
starts = sorted(set(e["ts"] for e in counters))
check(len(starts) >= 4, "the calls span several intervals: %r" % starts)
equal([(t - starts[0]) % 100000 for t in starts], [0] * len(starts), "interval starts are 100 ms apart")
keys = [(e["pid"], e["name"], e.get("args", {}).get("fhash"), e["ts"]) for e in counters]
equal(len(keys), len(set(keys)), "one counter per process, function, file and interval")
writes = sorted((e["ts"], e["path"]) for e in counters if e["name"] == "write" and e["path"]
                and e["path"].startswith(data_p))
equal(sorted(set(p for _, p in writes)), ["%s/dd.%d" % (data_p, i) for i in range(1, ROUNDS + 1)],
      "each dd's writes")
check(len(set(t for t, _ in writes)) >= 3, "the writes land in several intervals: %r" % writes)

# 3. the script sets the mode; dc.aggregates (the BPF map now) + dc.totals (written)
d = dctest.workdir("profile-lua")
script = os.path.join(d, "prof.lua")
with open(script, "w") as f:
    f.write('''local dc = require "datacrumbs"
dc.probe "posix"
assert(dc.mode("profile", "100ms") == "profile")
local function writes(rows)
  local n, bytes = 0, 0
  for _, r in ipairs(rows) do
    if r.name == "write" and r.path and r.path:find("/dd%.%d$") then
      n, bytes = n + r.count, bytes + (r.size_sum or 0)
    end
  end
  return n, bytes
end
local uv = require "luv"
local seen = 0                            -- aggregates read from the BPF map mid-run
local t = uv.new_timer()
t:start(50, 50, function() seen = seen + writes(dc.aggregates()) end)
dc.on_end(function()
  t:close()
  io.stderr:write("mid-run aggregates read: ", seen, "\\n")
  local an = writes(dc.aggregates())      -- nothing left: the last interval is written
  local tn, tb = writes(dc.totals())      -- every interval
  print(string.format("pending %d writes %d bytes %d", an, tn, tb))
end)
''')
data = os.path.join(d, "data")
os.makedirs(data)
r = dctest.run_dc(["run", "-o", d, script, "--"] + command(data))
equal(r.returncode, 0, "dc.mode script: exit status (stderr: %s)" % r.stderr.strip())
check("pending 0 writes %d bytes %d" % (100 * ROUNDS, 100 * ROUNDS * 65536) in r.stdout,
      "in on_end, dc.totals holds every write and dc.aggregates nothing: %r" % r.stdout)
m = re.search(r"mid-run aggregates read: (\d+)", r.stderr)
check(m and int(m.group(1)) > 0, "a luv timer read writes from dc.aggregates() while they were "
      "still in the BPF map: %r" % r.stderr)
trace = dctest.find_trace(d)
dctest.check_pfw(trace)
ev, _, _ = dctest.read_trace(trace)
check(any(e.get("ph") == "C" for e in ev) and not any(e.get("ph") == "X" and e["cat"] == "POSIX" for e in ev),
      "dc.mode(\"profile\") made a profile")
for bad in ("5ms", "2d", "fast"):
    r = dctest.run_dc(["run", "--interval", bad, "io_posix.lua", "--", "true"])
    equal((r.returncode, r.stderr.strip()), (2, "datacrumbs: --interval needs a duration from 10ms to 1 "
                                                "day (e.g. 1s, 250ms), got '%s' (see 'datacrumbs run "
                                                "--help')" % bad),
          "--interval %s is a usage error" % bad)
bad_lua = os.path.join(d, "bad.lua")
for call, msg in (('dc.mode("profile", "5ms")', 'mode: interval \'5ms\' is not a duration from 10ms to 1 day (e.g. "1s", "250ms")'),
                  ('dc.mode("trace", "1s")', 'mode: an interval is for "profile" mode only'),
                  ('dc.mode("fast")', "mode: 'fast' is not a mode (trace or profile)")):
    with open(bad_lua, "w") as f:
        f.write('local dc = require "datacrumbs"\ndc.probe "posix"\n%s\n' % call)
    r = dctest.run_dc(["run", bad_lua, "--", "true"])
    equal((r.returncode, r.stderr.strip()), (125, "datacrumbs: %s:3: %s" % (bad_lua, msg)),
          "%s: one line with file:line" % call)
# 4. trace mode's dc.totals with two processes (adjacent pids) each alternating between two
# files, every write on a fresh open: exact per (process, file) totals, whatever the order
d = dctest.workdir("profile-totals")
data = os.path.join(d, "data")
os.makedirs(data)
script = os.path.join(d, "tot.lua")
with open(script, "w") as f:
    f.write('''local dc = require "datacrumbs"
dc.probe "posix"
dc.on_end(function()
  for _, r in ipairs(dc.totals()) do
    if r.name == "write" and r.path and r.path:find("/[ab][12]$") then
      print(string.format("total %s %d %d", r.path:match("[ab][12]$"), r.count, r.size_sum or -1))
    end
  end
end)
''')
N = 40
loop = ("w() { i=0; while [ $i -lt %d ]; do echo x >> %s/a$1; echo yy >> %s/b$1; i=$((i+1)); "
        "done; }; w 1 & w 2 & wait" % (N, data, data))
r = dctest.run_dc(["run", "-o", d, script, "--", "/bin/sh", "-c", loop])
equal(r.returncode, 0, "totals script: exit status (stderr: %s)" % r.stderr.strip())
got = sorted(l for l in r.stdout.splitlines() if l.startswith("total "))
equal(got, sorted(["total a1 %d %d" % (N, 2 * N), "total a2 %d %d" % (N, 2 * N),
                   "total b1 %d %d" % (N, 3 * N), "total b2 %d %d" % (N, 3 * N)]),
      "dc.totals: each process's writes and bytes per file (echo x: 2 bytes, echo yy: 3)")
trace = dctest.find_trace(d)
dctest.check_pfw(trace)
ev, _, _ = dctest.read_trace(trace)
tw = {}
for e in ev:
    if e.get("ph") == "X" and e["name"] == "write" and (e.get("path") or "").startswith(data):
        c = tw.setdefault(os.path.basename(e["path"]), [0, 0])
        c[0] += 1
        c[1] += e["args"]["count"]
equal(tw, {"a1": [N, 2 * N], "a2": [N, 2 * N], "b1": [N, 3 * N], "b2": [N, 3 * N]},
      "the trace's write events per file agree")

# 5. per-thread aggregates (bpf/datacrumbs.h struct dc_agg_ways): 4 threads each pwrite 6
# files (more than a thread's 4 ways: sums move to the shared map as ways are reused) in two
# halves; between them the threads wait, holding sums, while the main thread opens and writes
# a marker file 0.5 s into a 1 s pause. Every call counted once: per file f exact counts and bytes,
# half of them in counters of intervals before the marker's; and those counters are in the
# trace before the marker's (the consumer took the idle threads' sums at their interval's
# end, not when the threads came back)
d = dctest.workdir("profile-ways")
data = os.path.join(d, "data")
os.makedirs(data)
r = dctest.run_dc(["run", "-o", d, "--mode", "profile", "--interval", "100ms", "io_posix.lua",
                   "--", os.environ["PROG_WAYS"], data])
equal(r.returncode, 0, "prog_ways under profile mode: exit status (stderr: %s)" % r.stderr.strip())
trace = dctest.find_trace(d)
dctest.check_pfw(trace)
ev, _, _ = dctest.read_trace(trace)
counters = [e for e in ev if e.get("ph") == "C"]
# the marker's open: a call naming a path, counted by the consumer as its record comes (no
# way holds it), so its counter is written at its interval's end whatever the ways do
marker = [i for i, e in enumerate(counters) if e["name"] == "openat" and e["path"] == data + "/marker"]
equal(len(marker), 1, "one counter of the marker's open")
mi, mts = marker[0], counters[marker[0]]["ts"]
equal(counters[mi]["args"]["count"], 1, "the marker: one open")
got = {}
for i, e in enumerate(counters):
    if e["name"] == "pwrite" and (e["path"] or "").startswith(data + "/f"):
        half = "before" if e["ts"] < mts else "after"
        c = got.setdefault((os.path.basename(e["path"]), half), [0, 0, 0])
        c[0] += e["args"]["count"]
        c[1] += e["args"]["size_sum"]
        if half == "before" and i > mi:
            c[2] += 1
want = {}
for f in range(6):
    for half in ("before", "after"):
        # 4 threads x 30 rounds; thread t writes (t + 1) * (f + 1) bytes: 30 * 10 * (f + 1)
        want[("f%d" % f, half)] = [120, 300 * (f + 1), 0]
equal(got, want, "per file and half: [pwrites, bytes, counters of the first half written after "
      "the marker's]")
keys = [(e["pid"], e["name"], e.get("args", {}).get("fhash"), e["ts"]) for e in counters]
equal(len(keys), len(set(keys)), "one counter per process, function, file and interval")
equal([e for e in ev if e.get("name") == "end"][0]["args"]["lost"], 0, "nothing lost")

# 6. the same with 20,000 rounds a half and 10 ms intervals: the consumer takes the ways
# (about every 10 ms) while the threads add to them; each call counted exactly once
HALF = 20000
d = dctest.workdir("profile-ways-race")
data = os.path.join(d, "data")
os.makedirs(data)
r = dctest.run_dc(["run", "-o", d, "--mode", "profile", "--interval", "10ms", "io_posix.lua",
                   "--", os.environ["PROG_WAYS"], data, str(HALF)])
equal(r.returncode, 0, "prog_ways %d under profile mode: exit status (stderr: %s)"
      % (HALF, r.stderr.strip()))
trace = dctest.find_trace(d)
dctest.check_pfw(trace)
ev, _, _ = dctest.read_trace(trace)
got = {}
for e in ev:
    if e.get("ph") == "C" and e["name"] == "pwrite" and (e["path"] or "").startswith(data + "/f"):
        c = got.setdefault(os.path.basename(e["path"]), [0, 0])
        c[0] += e["args"]["count"]
        c[1] += e["args"]["size_sum"]
equal(got, {"f%d" % f: [8 * HALF, 20 * HALF * (f + 1)] for f in range(6)},
      "per file: [pwrites, bytes] (4 threads x 2 halves; 10 * (f + 1) bytes a round)")
equal([e for e in ev if e.get("name") == "end"][0]["args"]["lost"], 0, "nothing lost")

dctest.finish()
