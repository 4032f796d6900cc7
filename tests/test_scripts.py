"""test_scripts.py: the shipped analysis scripts and their options: slow_io.lua (only calls
over a threshold) and filetop.lua (bytes and calls per file); `run SCRIPT --help`."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import dctest  # noqa: E402
from dctest import check, equal  # noqa: E402

dctest.need_root()


def run(name, args, cmd):
    d = dctest.workdir("scripts-" + name)
    data = os.path.join(d, "f")
    r = dctest.run_dc(["run", "-o", d] + args + ["--"] + [c.replace("DATA", data) for c in cmd])
    t = [f for f in os.listdir(d) if f.endswith(".pfw.gz")]
    events = []
    if len(t) == 1:
        dctest.check_pfw(os.path.join(d, t[0]))
        events, _, _ = dctest.read_trace(os.path.join(d, t[0]))
    end = [e for e in events if e.get("name") == "end" and e.get("cat") == "datacrumbs"]
    return d, data, r, events, end[0]["args"] if end else {}


DD = ["dd", "if=/dev/zero", "of=DATA", "bs=4k", "count=10", "status=none"]


def own_script(name, file, text):
    """A work directory scripts-NAME with the script written in it as FILE (text: a string,
    or a function of the directory giving it): (dir, the script's path)."""
    d = dctest.workdir("scripts-" + name)
    sc = os.path.join(d, file)
    with open(sc, "w") as f:
        f.write(text(d) if callable(text) else text)
    return d, sc


def dd_3k(d, sc):
    """Runs script sc on dd writing 3 blocks of 1 KiB from /dev/zero to d/o: (the
    completed run, d/o, its trace's events, checked by check_pfw)."""
    data = os.path.join(d, "o")
    r = dctest.run_dc(["run", "-o", d, sc, "--", "dd", "if=/dev/zero", "of=" + data, "bs=1k",
                       "count=3", "status=none"])
    events = []
    if r.returncode == 0:
        t = dctest.find_trace(d)
        dctest.check_pfw(t)
        events, _, _ = dctest.read_trace(t)
    return r, data, events

# --help: the script's options, exit 0, nothing traced, no root needed
r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                    dctest.DATACRUMBS, "run", "slow_io.lua", "--help"], capture_output=True,
                   text=True, env=dict(os.environ))
equal(r.returncode, 0, "slow_io.lua --help as nobody: exit status (%s)" % r.stderr)
check(r.stdout.startswith("usage: datacrumbs run slow_io.lua [OPTIONS] -- CMD [ARGS...]")
      and "--threshold V" in r.stdout and "(default 10ms)" in r.stdout,
      "slow_io.lua --help lists its options: %r" % r.stdout)
r = dctest.run_dc(["run", "slow_io.lua", "--threshhold", "1ms", "--", "true"])
equal((r.returncode, r.stderr.strip()), (125, "datacrumbs: slow_io.lua: unknown option "
      "'--threshhold' (see: datacrumbs run slow_io.lua --help)"), "slow_io.lua: a misspelt option")
r = dctest.run_dc(["run", "slow_io.lua", "--threshold", "fast", "--", "true"])
equal((r.returncode, r.stderr.strip()), (125, "datacrumbs: 'fast' is not a duration (e.g. 500us, "
      "10ms, 2s)"), "slow_io.lua: a bad duration")

# slow_io.lua: nothing takes 1000 s; everything takes >= 0 us; a middle threshold splits
d, data, r, events, end = run("slow-none", ["slow_io.lua", "--threshold", "1000s"], DD)
equal(r.returncode, 0, "slow 1000s: exit status")
equal((len(dctest.calls(events)), end.get("num_events")), (0, 0), "slow 1000s: no call kept")
check(end.get("dropped", 0) >= 20, "slow 1000s: dd's calls were dropped: %r" % end)
d, data, r, events, end = run("slow-all", ["slow_io.lua", "--threshold", "0us"], DD)
equal(end.get("dropped"), 0, "slow 0us: nothing dropped")
equal([(e["args"]["count"], e["args"]["ret"]) for e in dctest.calls(events)
       if e["name"] == "write" and e["path"] == data], [(4096, 4096)] * 10, "slow 0us: dd's 10 writes kept")
d, data, r, events, end = run("slow-mid", ["slow_io.lua", "--threshold=20us"], DD)
kept = dctest.calls(events)
check(all(e["dur"] >= 20 for e in kept), "slow 20us: every kept call took >= 20 us")
equal(len(kept), end.get("num_events"), "slow 20us: num_events counts the kept calls")

# filetop.lua: the end table has exactly dd's traffic; events are dropped unless --keep
d, data, r, events, end = run("top", ["filetop.lua", "--every", "10s"], DD)
equal(r.returncode, 0, "filetop: exit status")
rows = {}
for line in r.stderr.splitlines():
    m = re.match(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(/\S+)$", line)
    if m:
        rows[m.group(5)] = tuple(int(x) for x in m.groups()[:4])
equal(rows.get("/dev/zero"), (10, 40960, 0, 0), "filetop: /dev/zero row")
equal(rows.get(data), (0, 0, 10, 40960), "filetop: the written file's row")
check(r.stderr.splitlines()[0] == "end", "filetop: the end table: %r" % r.stderr[:80])
equal(dctest.calls(events), [], "filetop: no event kept")
d, data, r, events, end = run("top-keep", ["filetop.lua", "--keep"], DD)
equal(len([e for e in dctest.calls(events) if e["name"] == "write" and e["path"] == data]), 10,
      "filetop --keep: the writes are in the trace too")
# phases.lua: a phase starts at the first call on a matching path, per process
d, data, r, events, end = run("phases", ["phases.lua", "--phase", "make=%.a$", "--phase",
                                         "copy=%.b$"],
                              ["sh", "-c", "dd if=/dev/zero of=DATA.a bs=1k count=2 status=none;"
                               " dd if=DATA.a of=DATA.b bs=1k count=2 status=none"])
equal(r.returncode, 0, "phases: exit status (%s)" % r.stderr)
io = [(e["name"], os.path.basename(e["path"]), e["args"].get("phase"))
      for e in dctest.calls(events) if e["name"] in ("read", "write") and e["path"]
      and e["path"].startswith(data + ".")]
equal(io, [("write", "f.a", "make")] * 2 + [("read", "f.a", "copy"), ("write", "f.b", "copy")] * 2,
      "phases: dd's data calls and their phases")
first = [e for e in dctest.calls(events) if e.get("args", {}).get("phase")][0]
equal(first["args"]["phase"], "init", "phases: events before any phase are 'init'")
r = dctest.run_dc(["run", "phases.lua", "--", "true"])
equal((r.returncode, r.stderr.strip()), (125, "datacrumbs: phases.lua: give at least one --phase "
      "NAME=PATTERN"), "phases: no phase given")

# small_io.lua: 50 writes of 100 bytes (small) kept in detail; 10 writes of 64 KiB
# (aligned) become one io_summary; /dev/zero read 50 small + 10 big times: detailed
d, data, r, events, end = run("small", ["small_io.lua"],
                              ["sh", "-c", "dd if=/dev/zero of=DATA.s bs=100 count=50 status=none;"
                               " dd if=/dev/zero of=DATA.b bs=64k count=10 status=none"])
equal(r.returncode, 0, "small_io: exit status (%s)" % r.stderr)
calls = dctest.calls(events)
equal([(e["name"], e["args"]["count"], e["args"]["ret"]) for e in calls if e["path"] == data + ".s"
       and e["name"] == "write"], [("write", 100, 100)] * 50, "small_io: the small file's writes, in detail")
equal([e for e in calls if e["path"] == data + ".b" and e["name"] == "write"], [],
      "small_io: no detailed write of the big file")
summ = [e for e in events if e.get("name") == "io_summary"]
# each dd's setlocale reads glibc's locale.alias in 4096-byte reads (an aligned file too):
# one read of the whole file, one at its end returning 0; named by the kernel's path (Debian
# 12: a symlink to /etc/locale.alias, the file the fd holds)
alias = "/usr/share/locale/locale.alias"
want = [(data + ".b", 10, 655360, 0)]
if os.path.exists(alias) and os.path.getsize(alias) < 4096:
    want.append((os.path.realpath(alias), 4, 2 * os.path.getsize(alias), 0))
equal(sorted((e["path"], e["args"]["calls"], e["args"]["bytes"], e["args"]["small_or_unaligned"])
             for e in summ), sorted(want), "small_io: the big files' summaries")
equal(sorted((e["args"]["count"]) for e in calls if e["path"] == "/dev/zero" and e["name"] == "read"),
      [100] * 50 + [65536] * 10, "small_io: /dev/zero, mostly small, in detail")

# dc.emit / dc.counter from a script: a phase marker and a counter, checked by check_pfw
d = dctest.workdir("scripts-emit")
sc = os.path.join(d, "emit.lua")
with open(sc, "w") as f:
    f.write('local dc = require "datacrumbs"\ndc.probe { layer = "posix", functions = { "write" } }\n'
            'local n = 0\ndc.on_event(function(ev) n = n + 1 end)\n'
            'dc.on_end(function()\n'
            '  dc.emit { name = "marker", cat = "phase", dur = 5, path = "/dev/zero",\n'
            '            path2 = "/dev/null", args = { writes = n, tag = "end", fhash2 = "x" } }\n'
            '  dc.counter { name = "writes", cat = "POSIX", args = { count = n } }\nend)\n')
r = dctest.run_dc(["run", "-o", d, sc, "--", "dd", "if=/dev/zero", "of=" + os.path.join(d, "o"),
                   "bs=1k", "count=4", "status=none"])
equal(r.returncode, 0, "emit: exit status (%s)" % r.stderr)
t = dctest.find_trace(d)
dctest.check_pfw(t)
events, files, _ = dctest.read_trace(t)
m = [e for e in events if e.get("name") == "marker"]
equal([(e["cat"], e["dur"], e["args"]["tag"], e["pid"] > 0, e["path"], files.get(e["args"].get("fhash2")))
       for e in m], [("phase", 5, "end", True, "/dev/zero", "/dev/null")],
      "emit: the marker event, its two files")
writes = len([e for e in dctest.calls(events) if e["name"] == "write"])
equal(m[0]["args"]["writes"] if m else None, writes, "emit: the marker's count equals the writes")
c = [e for e in events if e.get("ph") == "C" and e.get("name") == "writes"]
equal([e["args"]["count"] for e in c], [writes], "emit: the counter event")
end = [e for e in events if e.get("cat") == "datacrumbs" and e.get("name") == "end"]
equal(end[0]["args"]["num_events"] if end else None, writes + 2,
      "emit: num_events counts the writes, the emitted event and the counter")
with open(sc, "w") as f:
    f.write('local dc = require "datacrumbs"\ndc.probe "posix"\ndc.emit { name = "early" }\n')
r = dctest.run_dc(["run", "-o", d, sc, "--", "true"])
check(r.returncode == 125 and re.match(r"^datacrumbs: \S+emit\.lua:3: emit: tracing has not begun",
                                       r.stderr), "emit at load: error with file:line: %r" % r.stderr)

# dc.on_event with filters: callbacks stack, each sees only what it asked for
d, sc = own_script("filters", "f.lua",
    'local dc = require "datacrumbs"\n'
    'dc.probe { layer = "posix", functions = { "open", "write", "close" } }\n'
    'local seen = {}\n'
    'dc.on_event(function(ev) ev.args.tag = "w"; seen[#seen + 1] = ev.name end, { name = "write" })\n'
    'dc.on_event(function(ev) if ev.name == "close" then return false end end, { cat = "POSIX" })\n'
    'dc.on_end(function() for _, n in ipairs(seen) do assert(n == "write") end end)\n')
r, data, events = dd_3k(d, sc)
equal(r.returncode, 0, "filters: exit status (%s)" % r.stderr)
mine = [(e["name"], e["args"].get("tag")) for e in dctest.calls(events) if e["path"] == data]
equal(mine, [("openat", None)] + [("write", "w")] * 3,
      "filters: writes tagged by the name filter, closes dropped by the cat filter")
equal([e for e in events if e.get("name") == "end"][0]["args"]["script_errors"], 0,
      "filters: the first callback saw only writes")

# filters name what the script asked for: a function the system call tracepoints serve is
# traced under the name its layer gives the system call (glibc's open is openat, pwrite64
# pwrite), and a filter on the asked name sees those events; the layer as dc.probe takes it
# ("posix"); a name the script's probes never make is an error at the on_event line
d, sc = own_script("filter-names", "n.lua",
    'local dc = require "datacrumbs"\n'
    'dc.probe { layer = "posix", functions = { "open", "pwrite64", "write", "close" } }\n'
    'dc.on_event(function(ev) ev.args.tag = "o" end, { name = "open" })\n'
    'dc.on_event(function(ev) ev.args.tag = "p" end, { name = { "pwrite64" } })\n'
    'dc.on_event(function(ev) ev.args.tag = "w" end, { cat = "posix", name = "write" })\n')
r = dctest.run_dc(["run", "-o", d, sc, "--", os.environ["PROG_RAW"], d])
equal(r.returncode, 0, "filter names: exit status (%s)" % r.stderr)
events = []
if r.returncode == 0:
    t = dctest.find_trace(d)
    dctest.check_pfw(t)
    events, _, _ = dctest.read_trace(t)
equal([(e["name"], os.path.relpath(e["path"], d), e["args"].get("tag"), e["args"].get("count"),
        e["args"].get("offset")) for e in dctest.calls(events)
       if e["path"] and e["path"].startswith(d + "/")],
      [("openat", "raw.bin", "o", None, None), ("write", "raw.bin", "w", 100, None),
       ("pwrite", "raw.bin", "p", 200, 1000), ("close", "raw.bin", None, None, None),
       ("openat", "missing/none", "o", None, None)],
      "filter names: open's filter saw the openat calls, pwrite64's the pwrite, posix's writes")
# each is an error at its line, from run (before the command starts: no trace) and check
TYPOS = [
    ('dc.probe { layer = "posix", functions = { "write" } }\n'
     'dc.on_event(function(ev) end, { name = { "write", "wrte" } })\n',
     "3: on_event: filter.name 'wrte' is no function this script probes (layers POSIX), so the "
     "callback would never run; did you mean 'write'?"),
    ('dc.probe { layer = "posix", functions = { "write" } }\n'
     'dc.on_event(function(ev) end, { cat = "posx" })\n',
     "3: on_event: filter.cat 'posx' is no layer this script probes (layers POSIX), so the "
     "callback would never run"),
    ('dc.probe { layer = "posix", functions = { "write" } }\ndc.probe { layer = "stdio", '
     'functions = { "fwrite" } }\ndc.on_event(function(ev) end, { cat = "POSIX", name = "fwrite" })\n',
     "4: on_event: filter.name 'fwrite' is no function this script probes (layers POSIX), so "
     "the callback would never run; did you mean 'write'?"),
    # every layer listed, one whose name holds another's too (a substring test dropped POSIX)
    ('dc.uprobe { file = "libc.so.6", functions = { "fsync" }, layer = "POSIX_EXTRA" }\n'
     'dc.probe { layer = "posix", functions = { "write" } }\n'
     'dc.on_event(function(ev) end, { cat = "posx" })\n',
     "4: on_event: filter.cat 'posx' is no layer this script probes (layers POSIX_EXTRA, POSIX), "
     "so the callback would never run"),
    ('dc.probe "posix"\ndc.drop_paths { "/proc/", "out/" }\n',
     "3: drop_paths: prefix #2 'out/' is not absolute: event paths are (or a pseudo file's pipe:, "
     "socket:, anon_inode:), so it would drop nothing"),
    ('dc.probe "posix"\ndc.drop_paths { "/usr/*" }\n',
     "3: drop_paths: prefix #1 '/usr/*' is a glob; drop_paths takes byte prefixes of absolute "
     "paths ('/usr/' drops every file under /usr)"),
]
for k, (text, msg) in enumerate(TYPOS):
    d, sc = own_script("filter-typo%d" % k, "t.lua", 'local dc = require "datacrumbs"\n' + text)
    for verb in ("run", "check"):
        args = ["run", "-o", d, sc, "--", "true"] if verb == "run" else ["check", sc]
        r = dctest.run_dc(args)
        equal((r.returncode, r.stderr.strip().splitlines()[-1:]), (125, ["datacrumbs: %s:%s" % (sc, msg)]),
              "filter typo %d: %s's exit status and error line" % (k, verb))
    equal([f for f in os.listdir(d) if f.endswith(".pfw.gz")], [], "filter typo %d: no trace" % k)
# what is right passes: a bare string for drop_paths, pseudo files' prefixes, the layer in any case
d, sc = own_script("filter-ok", "ok.lua", 'local dc = require "datacrumbs"\ndc.probe "posix"\n'
                   'dc.drop_paths "/proc/"\ndc.drop_paths { "pipe:", "socket:[" }\n'
                   'dc.on_event(function(ev) end, { cat = "Posix", name = "stat" })\n')
r = dctest.run_dc(["check", sc])
equal((r.returncode, r.stderr), (0, ""), "filter ok: check passes")

# dc.on_event's reuse = true: one ev table for every event (each seen once, the last event's
# args and path gone); a callback without it keeps a new table per event for all
REUSE = ('local dc = require "datacrumbs"\n'
         'dc.probe { layer = "posix", functions = { "open", "write", "close" } }\n'
         'local last, same, calls = nil, 0, 0\n'
         'dc.on_event(function(ev)\n'
         '  calls = calls + 1\n'
         '  if rawequal(last, ev) then same = same + 1 end\n'
         '  last = ev\n'
         '  if ev.name == "write" then ev.args.tag = "w" end\n'
         '  if ev.name == "close" then return false end\n'
         'end, { reuse = true })\n'
         '%s'
         'dc.on_end(function() io.stderr:write(("reuse %%d %%d\\n"):format(calls, same)) end)\n')
for other, what in (("", "reuse"), ("dc.on_event(function(ev) end)\n", "reuse+new")):
    d = dctest.workdir("scripts-" + what.replace("+", "-"))
    sc = os.path.join(d, "r.lua")
    with open(sc, "w") as f:
        f.write(REUSE % other)
    data = os.path.join(d, "o")
    r = dctest.run_dc(["run", "-o", d, sc, "--", "dd", "if=/dev/zero", "of=" + data, "bs=1k",
                       "count=3", "status=none"])
    equal(r.returncode, 0, "%s: exit status (%s)" % (what, r.stderr))
    t = dctest.find_trace(d)
    dctest.check_pfw(t)
    events, _, _ = dctest.read_trace(t)
    calls = dctest.calls(events)
    mine = [(e["name"], e["args"].get("tag"), "count" in e["args"], "flags" in e["args"])
            for e in calls if e.get("path") == data]
    equal(mine, [("openat", None, False, True)] + [("write", "w", True, False)] * 3,
          "%s: the file's events: writes tagged, the open's flags not on them, closes dropped"
          % what)
    equal([e["name"] for e in calls if "tag" in e["args"] and e["name"] != "write"], [],
          "%s: no other event keeps a write's tag" % what)
    got = [ln.split()[1:] for ln in r.stderr.splitlines() if ln.startswith("reuse ")]
    end = [e for e in events if e.get("name") == "end"][0]["args"]
    # with reuse alone, every event but the first was the table of the one before
    equal(len(got), 1, "%s: the script's count line (%s)" % (what, r.stderr))
    if got:
        seen, same = int(got[0][0]), int(got[0][1])
        check(seen >= len(calls), "%s: the callback saw every written event (%d >= %d)"
              % (what, seen, len(calls)))
        equal(same, seen - 1 if what == "reuse" else 0,
              "%s: events sharing the previous event's table" % what)
    equal(end["script_errors"], 0, "%s: no script error" % what)
# profile mode: a callback of the interval's counters reads dc.aggregates() (which must not
# drain records into the table the flush walks: it crashed), and luv callbacks run at the
# tracer's exit call dc.totals() and dc.aggregates() after the tables are gone (a crash, an
# abort or a hang before): empty lists then
PROF = ('local dc = require "datacrumbs"\n'
        'local uv = require "luv"\n'
        'dc.probe "posix"\n'
        'dc.mode("profile", "10ms")\n'
        'local n = 0\n'
        'dc.on_event(function(ev) n = n + 1; local _ = #dc.aggregates() end)\n'
        'dc.on_end(function()\n'
        '  io.stderr:write(("prof-callbacks %d\\n"):format(n))\n'
        '  uv.new_timer():close(function()\n'
        '    io.stderr:write(("late %d %d\\n"):format(#dc.totals(), #dc.aggregates()))\n'
        '  end)\n'
        'end)\n')
d, sc = own_script("prof-cb", "prof.lua", PROF)
r = dctest.run_dc(["run", "-o", d, sc, "--", "sh", "-c",
                   "for i in 1 2 3 4 5 6 7 8 9 10; do cat /etc/hostname; done >/dev/null"])
equal(r.returncode, 0, "profile callbacks reading dc.aggregates: exit status (%s)" % r.stderr[-300:])
t = dctest.find_trace(d)
dctest.check_pfw(t)
events, _, _ = dctest.read_trace(t)
counters = [e for e in events if e.get("ph") == "C" and e.get("cat") != "datacrumbs"]
got = [ln.split() for ln in r.stderr.splitlines() if ln.startswith(("prof-callbacks ", "late "))]
equal(got, [["prof-callbacks", str(len(counters))], ["late", "0", "0"]],
      "profile callbacks: one per counter event written (%d); dc.totals and dc.aggregates "
      "empty after the tables are gone" % len(counters))
check(len(counters) > 0, "profile callbacks: counter events written (%d)" % len(counters))

d, sc = own_script("filter-typo", "typo.lua", 'local dc = require "datacrumbs"\n'
                   'dc.probe "posix"\ndc.on_event(function() end, { nme = "write" })\n')
r = dctest.run_dc(["run", sc, "--", "true"])
check(r.returncode == 125 and re.match(r"^datacrumbs: \S+typo\.lua:3: on_event: unknown field "
                                       r"'nme' in its spec \(fields: cat, name, reuse\)$",
                                       r.stderr.strip()),
      "on_event { nme = ... }: a one-line error with file:line: %r" % r.stderr)
d = dctest.workdir("scripts-reuse-bad")
sc = os.path.join(d, "bad.lua")
with open(sc, "w") as f:
    f.write('local dc = require "datacrumbs"\ndc.probe "posix"\n'
            'dc.on_event(function() end, { reuse = 1 })\n')
r = dctest.run_dc(["run", "-o", d, sc, "--", "true"])
check(r.returncode == 125 and re.match(r"^datacrumbs: \S+bad\.lua:3: on_event: filter\.reuse must "
                                       r"be true or false", r.stderr),
      "reuse = 1: a one-line error with file:line: %r" % r.stderr)

# dc.on_process and dc.stats: the lifecycle of prog_io's processes, the counters at the end
d = dctest.workdir("scripts-proc")
data = os.path.join(d, "data")
os.makedirs(data)
sc = os.path.join(d, "p.lua")
with open(sc, "w") as f:
    f.write('local dc = require "datacrumbs"\n'
            'dc.probe { layer = "posix", functions = { "write" } }\n'
            'local log = {}\n'
            'dc.on_process(function(p) log[#log + 1] = p end)\n'
            'dc.on_end(function()\n'
            '  for _, p in ipairs(log) do\n'
            '    io.stderr:write(("proc %s %d %s %s %s\\n"):format(p.event, p.pid, p.ppid or "-",\n'
            '      p.name or "-", p.status or "-"))\n'
            '  end\n'
            '  local st = dc.stats()\n'
            '  io.stderr:write(("stats %d %d %d\\n"):format(st.events, st.lost, st.dropped))\n'
            'end)\n')
r = dctest.run_dc(["run", "-o", d, sc, "--", os.environ["PROG_IO"], data])
equal(r.returncode, 7, "on_process: prog_io's exit status")
ids = dict(kv.split("=") for kv in r.stdout.split())
P, C, E = ids["main"], ids["child"], ids["exec"]
procs = [ln.split()[1:] for ln in r.stderr.splitlines() if ln.startswith("proc ")]
equal(procs, [["exec", P, "-", "prog_io", "-"], ["fork", C, P, "prog_io", "-"],
              ["exit", C, "-", "prog_io", "0"], ["fork", E, P, "prog_io", "-"],
              ["exec", E, "-", "prog_io", "-"], ["exit", E, "-", "prog_io", "0"],
              ["exit", P, "-", "prog_io", str(7 << 8)]], "on_process: forks, execs, exits in order")
t = dctest.find_trace(d)
dctest.check_pfw(t)
events, _, _ = dctest.read_trace(t)
end = [e for e in events if e.get("name") == "end"][0]["args"]
st = [ln.split()[1:] for ln in r.stderr.splitlines() if ln.startswith("stats ")]
equal(st, [[str(end["num_events"]), "0", "0"]], "stats: events, lost, dropped as the end record says")

# dc.uprobe: the program's own functions by glob, with their args, nesting the libc writes
d = dctest.workdir("scripts-uprobe")
sc = os.path.join(d, "app.lua")
with open(sc, "w") as f:
    f.write('local dc = require "datacrumbs"\n'
            'dc.probe { layer = "posix", functions = { "write" } }\n'
            'dc.uprobe { functions = "write_checkpoint*", args = { "int step", "path path" } }\n'
            'dc.uprobe { functions = { "no_such_fn*" }, layer = "X" }\n')
r = dctest.run_dc(["run", "-o", d, sc, "--", os.environ["PROG_APP"], d])
equal(r.returncode, 0, "uprobe: exit status (%s)" % r.stderr)
check(re.search(r"warning: \S+app\.lua:4: dc\.uprobe: no function of \S+prog_app matches "
                r"'no_such_fn\*': not traced", r.stderr), "uprobe: a glob matching nothing: %r" % r.stderr)
t = dctest.find_trace(d)
dctest.check_pfw(t)
events, _, _ = dctest.read_trace(t)
app = [e for e in dctest.calls(events, "APP")]
ck_a, ck_b = os.path.join(d, "ck_a"), os.path.join(d, "ck_b")
equal(sorted((e["name"], e["args"]["step"], e["path"], e["args"]["ret"], e["args"]["level"])
             for e in app),
      [("write_checkpoint_a", 1, ck_a, 7, 1), ("write_checkpoint_a", 2, ck_a, 7, 1),
       ("write_checkpoint_a", 3, ck_a, 7, 1), ("write_checkpoint_a", 40, ck_b, 8, 2),
       ("write_checkpoint_b", 4, ck_b, 8, 1)], "uprobe: the checkpoint functions, exact args")
byid = {e["id"]: e for e in app}
ws = [e for e in dctest.calls(events) if e["name"] == "write" and e["path"] in (ck_a, ck_b)]
equal(sorted((byid[e["args"]["p_idx"]]["name"], e["args"]["count"]) for e in ws
             if e["args"]["p_idx"] in byid),
      [("write_checkpoint_a", 7)] * 3 + [("write_checkpoint_a", 8)], "uprobe: each write under its checkpoint")

# dc.uprobe args per entry of functions: other_work(int x) gets its own, and with none
# given, no argument at all (no register recorded as an argument it may not have)
for other, want_x in (('other_work = { "int x" }', [1, 2, 3]), ("", None)):
    with open(sc, "w") as f:
        f.write('local dc = require "datacrumbs"\n'
                'dc.uprobe { functions = { "write_checkpoint*", "other_work" }, args = {\n'
                '  ["write_checkpoint*"] = { "int step", "path path" }, %s } }\n' % other)
    t = os.path.join(d, "by-entry.pfw.gz")
    r = dctest.run_dc(["run", "-o", t, "--force", sc, "--", os.environ["PROG_APP"], d])
    equal(r.returncode, 0, "uprobe args by entry: exit status (%s)" % r.stderr)
    dctest.check_pfw(t)
    events, _, _ = dctest.read_trace(t)
    app = dctest.calls(events, "APP")
    equal(sorted((e["name"], e["args"]["step"], e["path"]) for e in app if e["name"] != "other_work"),
          [("write_checkpoint_a", 1, ck_a), ("write_checkpoint_a", 2, ck_a), ("write_checkpoint_a", 3, ck_a),
           ("write_checkpoint_a", 40, ck_b), ("write_checkpoint_b", 4, ck_b)],
          "uprobe args by entry: the checkpoint functions' args")
    ow = [e for e in app if e["name"] == "other_work"]
    equal(sorted({k: v for k, v in e["args"].items() if k not in ("hhash", "level", "p_idx")}.get("x", None)
                 for e in ow) if want_x else sorted(sorted(k for k in e["args"] if k not in
                                                          ("hhash", "level", "p_idx")) for e in ow),
          want_x if want_x else [["ret"]] * 3,
          "uprobe args by entry: other_work's args (%s)" % (other or "none given"))
    equal(sorted(e["args"]["ret"] for e in ow), [2, 4, 6], "uprobe args by entry: other_work's ret")
with open(sc, "w") as f:
    f.write('local dc = require "datacrumbs"\n'
            'dc.uprobe { functions = { "write_checkpoint*" }, args = { other = { "int x" } } }\n')
r = dctest.run_dc(["run", sc, "--", "true"])
equal((r.returncode, r.stderr.strip()), (125, "datacrumbs: %s:2: uprobe: spec.args: key other is not an "
      "entry of spec.functions (give a list of \"KIND NAME\" for every function, or a table from "
      "entries of functions to such lists)" % sc), "uprobe args by entry: a key that is no entry")
with open(sc, "w") as f:
    f.write('local dc = require "datacrumbs"\ndc.uprobe { functions = "x*", args = { "bogus y" } }\n')
r = dctest.run_dc(["run", "-o", d, sc, "--", "true"])
check(r.returncode == 125 and "app.lua:2: uprobe: unknown argument kind 'bogus'" in r.stderr,
      "uprobe: a bad arg kind, with file:line: %r" % r.stderr)

# dc.drop_paths: io_posix.lua drops the calls on /proc and /sys in C (no Lua callback):
# exactly the ones an --all run of the same command has, counted as dropped
CAT = ["sh", "-c", "cat /proc/self/stat /sys/kernel/mm/transparent_hugepage/enabled "
       "/etc/hostname > /dev/null"]
d, data, r, events, end = run("drop-all", ["io_posix.lua", "--all"], CAT)
equal(r.returncode, 0, "drop_paths: --all run (%s)" % r.stderr)
pseudo = [e for e in dctest.calls(events) if e["path"] and
          (e["path"].startswith("/proc/") or e["path"].startswith("/sys/"))]
check(len(pseudo) >= 6, "drop_paths: --all keeps the calls on /proc and /sys (%d)" % len(pseudo))
d, data, r, events, end = run("drop", ["io_posix.lua"], CAT)
equal(r.returncode, 0, "drop_paths: run (%s)" % r.stderr)
equal([e for e in dctest.calls(events) if e["path"] and
       (e["path"].startswith("/proc/") or e["path"].startswith("/sys/"))], [],
      "drop_paths: no call on /proc or /sys written")
equal(end.get("dropped"), len(pseudo), "drop_paths: the end record's dropped = the --all "
      "run's calls on /proc and /sys")
check(re.search(r"\(%d dropped by the script" % len(pseudo), r.stderr),
      "drop_paths: the summary line says so: %r" % r.stderr)
lua = os.path.join(dctest.workdir("scripts-drop-bad"), "bad.lua")
with open(lua, "w") as f:
    f.write('local dc = require "datacrumbs"\ndc.probe "posix"\ndc.drop_paths { "/proc/", "" }\n')
r = dctest.run_dc(["run", lua, "--", "true"])
equal((r.returncode, r.stderr.strip()), (125, "datacrumbs: %s:3: drop_paths: prefix #2 is not "
      "a non-empty string" % lua), "drop_paths: a bad prefix, with file:line")

# ev is filled as the callbacks read it: dd's 3 writes of 1 KiB to its output and its two
# closes of it (the fd it opened, then stdout, its dup). pairs(ev) sees every field; a field set without being read (dur) or set to nil
# without being read (path) is written so; an arg added is written; dc.emit(ev) writes the
# whole event, as it does after the callbacks of an ev that pairs read whole; a field read
# during the callback stays readable after it, one never read is an error (counted in
# script_errors), as is dc.emit of that event
LAZY = ('local dc = require "datacrumbs"\n'
        'dc.probe { layer = "posix", functions = { "open", "write", "close" } }\n'
        'local n, keys, kept, first = 0, nil, nil, nil\n'
        'dc.on_event(function(ev)\n'
        '  n = n + 1\n'
        '  if n == 1 then\n'
        '    local ks = {}\n'
        '    for k in pairs(ev) do ks[#ks + 1] = k end\n'
        '    table.sort(ks); keys = table.concat(ks, ",")\n'
        '    ev.dur = 7; first = ev\n'
        '  elseif n == 2 then ev.path = nil; ev.dur = math.maxinteger\n'
        '  else ev.args.tag = "lazy"; ev.args.count = "str"; ev.args.errno = "x"\n'
        '    kept = ev; kept.name = kept.name end\n'
        'end, { name = "write" })\n'
        'dc.on_event(function(ev)\n'
        '  if ev.path ~= "%s" then return end\n'
        '  ev.name = "close_copy"; dc.emit(ev); ev.name = "close"\n'
        'end, { name = "close" })\n'
        'dc.on_end(function()\n'
        '  io.stderr:write(("lazy %%s %%d %%s %%s\\n"):format(keys, n, kept.name, kept.args.tag))\n'
        '  io.stderr:write(("stale-emit %%s\\n"):format(tostring(pcall(dc.emit, kept))))\n'
        '  first.name = "write_copy"; dc.emit(first)\n'
        '  local x = kept.ts\n'
        'end)\n')
d, sc = own_script("lazy", "lazy.lua", lambda d: LAZY % os.path.join(d, "o"))
r, data, events = dd_3k(d, sc)
equal(r.returncode, 0, "lazy ev: exit status (%s)" % r.stderr)
writes = [e for e in dctest.calls(events) if e["name"] == "write"]
equal([(e.get("path"), e["dur"], e["args"].get("count"), e["args"].get("ret"),
        e["args"].get("tag")) for e in writes],
      [(data, 7, 1024, 1024, None), (None, writes[1]["dur"], 1024, 1024, None),
       (data, writes[2]["dur"], 1024, 1024, "lazy")],
      "lazy ev: dur set unread, path removed unread, an arg added")
equal("errno" in writes[2]["args"], False, "lazy ev: a string added as an integer arg "
      "(errno) is dropped, one set on an own integer arg (count) keeps its value")
check(writes[1]["dur"] < 10 ** 7, "lazy ev: a dur that would overflow ts + dur is ignored (%d)"
      % writes[1]["dur"])
close = [e for e in dctest.calls(events) if e["name"] == "close" and e.get("path") == data]
copy = [e for e in events if e.get("name") == "close_copy"]
equal(len(close), 2, "lazy ev: dd's two closes of its output")
equal([(e.get("path"), e["pid"], e["tid"], e["ts"], e["dur"], e["args"].get("fd"),
        e["args"].get("ret")) for e in copy],
      [(data, c["pid"], c["tid"], c["ts"], c["dur"], c["args"]["fd"], 0) for c in close],
      "lazy ev: dc.emit(ev) writes the whole event")
wcopy = [e for e in events if e.get("name") == "write_copy"]
equal([(e.get("path"), e["ts"], e["dur"], e["args"].get("count"), e["args"].get("ret"))
       for e in wcopy], [(data, writes[0]["ts"], 7, 1024, 1024)],
      "lazy ev: dc.emit of an ev kept after pairs(ev) read it whole, in on_end")
lines = [ln for ln in r.stderr.splitlines() if ln.startswith(("lazy ", "stale-emit "))]
equal(lines, ["lazy args,cat,dur,id,level,name,p_idx,path,ph,pid,tid,ts 3 write lazy",
              "stale-emit false"],
      "lazy ev: pairs sees every field; fields read in the callback stay readable; "
      "dc.emit of a past event fails")
end = [e for e in events if e.get("name") == "end"][0]["args"]
equal(end["script_errors"], 1, "lazy ev: reading a field never read, after the callbacks")
check(re.search(r"lazy\.lua:\d+: ev\.ts read after that event's callbacks returned", r.stderr),
      "lazy ev: the error names the field and file:line: %r" % r.stderr)

equal(dctest.orphan_links(), [], "nothing left attached")
dctest.finish()
