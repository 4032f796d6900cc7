"""test_returns.py: returns seen without a return-address hijack (issue 11 item 2).
Traced programs whose calls are left other than by a return, each run traced and
untraced, must print and exit exactly alike, and every call must be an event:
  1. C++: dc.uprobe on dc_thrower of prog_throw (returns auto: C++, so probes on its
     return instructions): `mix 200` (even calls throw): 100 events with ret, 100
     "unwound" (no ret); `1000` (every call throws): 1000 unwound, the last one too (the
     C++ runtime's __cxa_begin_catch is the catch point); `deep 3 20` (recursion deeper
     than the 16 frames kept, thrown from the bottom): 48 unwound, the thread's count of
     too-deep calls back down after the catch; the same without session
     uprobes (DATACRUMBS_NO_UPROBE_SESSION=1), where the held process's links run
     dc_entry only: no uretprobe; with __cxa_begin_catch probed by the script too (its
     calls are events, not dead frames); returns = "none": entry-only events; a member
     function whose mangled name is 106 bytes (datacrumbs kept 63 before issue 12): `long
     30`, 30 events under the whole name, each with ret i + 1;
  2. setjmp/longjmp: dc.uprobe on dc_maybe_jump of prog_setjmp (plain C: the kernel's
     return, which longjmp skips; and returns = "instructions"): `mix 100`: 50 events
     with ret, 50 unwound;
  3. Go: dc.uprobe on main.* of prog_go: by default entry-only (goroutines share
     threads: returns cannot be paired), one event per call; with returns =
     "instructions" its output exact, main.writeFile and main.readFile 20 calls each
     with ret, main.run once (SKIP, loudly, without golang-go);
  4. a bad `returns` value is a one-line error naming the script's line;
  5. dmesg has no new "failed to handle uretprobe", "leaking uprobe" or "SIGILL" line."""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import dctest  # noqa: E402
from dctest import check, equal  # noqa: E402

dctest.need_root()
THROW = os.environ["PROG_THROW"]
SETJMP = os.environ["PROG_SETJMP"]
GO = os.environ.get("PROG_GO", "")
BAD = re.compile(r"failed to handle uretprobe|leaking uprobe|SIGILL")


def dmesg_bad():
    r = subprocess.run(["dmesg"], capture_output=True, text=True)
    equal(r.returncode, 0, "dmesg readable")
    return [l for l in r.stdout.splitlines() if BAD.search(l)]


def script(d, name, text):
    p = os.path.join(d, name)
    with open(p, "w") as f:
        f.write('local dc = require "datacrumbs"\n' + text + "\n")
    return p


def run_both(label, lua, cmd, env=None):
    """Runs cmd untraced, then under datacrumbs with lua; checks output and exit status
    alike, validates the trace; returns its complete events of cat APP/GO."""
    want = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    d = dctest.workdir("returns_" + label)
    r = dctest.run_dc(["run", lua, "-o", d, "--"] + cmd, env=env)
    equal((r.returncode, r.stdout), (want.returncode, want.stdout),
          "%s: traced exit status and output as untraced (stderr %r)" % (label, r.stderr))
    trace = dctest.find_trace(d)
    dctest.check_pfw(trace)
    events, _, _ = dctest.read_trace(trace)
    return [e for e in events if e.get("ph") == "X" and e["cat"] in ("APP", "GO")], r.stderr


def shape(e, key):
    """(argument key's value, ret or "unwound" / "entry_only" / "unfinished")."""
    a = e["args"]
    for k in ("unwound", "entry_only", "unfinished"):
        if k in a:
            return (a[key], k)
    return (a[key], a.get("ret"))


before = dmesg_bad()
d = dctest.workdir("returns")

# --- 1. C++ ---------------------------------------------------------------------------------
thrower = script(d, "thrower.lua", 'dc.uprobe { functions = "dc_thrower", args = { "int i", '
                 '"int do_throw" }, ret = "int", layer = "APP" }')
N = 200
calls, _ = run_both("cxx_mix", thrower, [THROW, "mix", str(N)])
want = [(i, "unwound" if i % 2 == 0 else i + 1) for i in range(N)]
equal(sorted(shape(e, "i") for e in calls), want,
      "C++ mix: every call an event, the thrown ones unwound, the others with ret")
check(all(e["dur"] >= 0 and e["args"]["level"] == 1 for e in calls), "C++ mix: level 1")
calls, _ = run_both("cxx_all", thrower, [THROW, "1000"])
equal(sorted(shape(e, "i") for e in calls), [(i, "unwound") for i in range(1000)],
      "C++ 1000 throws: 1000 events, all unwound (the last one too: caught)")

# deeper than the 16 frames kept: the uncounted calls an exception left are over when
# the catch point is above the last kept frame (else the thread would stay too deep)
deep = script(d, "deep.lua", 'dc.uprobe { functions = { "dc_recurse", "dc_thrower" }, '
              'args = { "int d" }, ret = "int", layer = "APP" }')
calls, err = run_both("cxx_deep", deep, [THROW, "deep", "3", "20"])
equal(sorted(shape(e, "d") for e in calls if e["name"] == "dc_recurse"),
      sorted([(dd, "unwound") for dd in range(20, 4, -1)] * 3),
      "C++ deep: each round's 16 kept calls unwound (d 20..5)")
equal([shape(e, "d") for e in calls if e["name"] == "dc_thrower"], [(0, 1)],
      "C++ deep: the call after the rounds is recorded, with ret (not too deep)")
check("15 calls nested deeper than 16" in err, "C++ deep: 15 calls too deep: %r" % err)

# the same without session uprobes: the pair's fallback, which must not use a uretprobe
nosess = dict(os.environ, DATACRUMBS_NO_UPROBE_SESSION="1")
calls, err = run_both("cxx_nosession", thrower, [THROW, "mix", "20"], env=nosess)
equal(sorted(shape(e, "i") for e in calls),
      [(i, "unwound" if i % 2 == 0 else i + 1) for i in range(20)],
      "C++ mix without session uprobes: the same events")


def prog_names(pid):
    """Names of the BPF programs of the links process pid holds (/proc/PID/fdinfo)."""
    names = set()
    for fd in os.listdir("/proc/%d/fdinfo" % pid):
        try:
            with open("/proc/%d/fdinfo/%s" % (pid, fd)) as f:
                t = f.read()
        except OSError:
            continue
        if re.search(r"^link_type:", t, re.M):
            pid_ = int(re.search(r"^prog_id:\s*(\d+)", t, re.M).group(1))
            r = subprocess.run(["bpftool", "-j", "prog", "show", "id", str(pid_)],
                               capture_output=True, text=True)
            if r.returncode == 0:
                names.add(json.loads(r.stdout).get("name"))
    return names


dw = dctest.workdir("returns_held")
p = subprocess.Popen([dctest.DATACRUMBS, "run", thrower, "-o", dw, "--", THROW, "wait"],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                     text=True, env=nosess)
line = p.stdout.readline()
check(line.startswith("ready "), "held C++ program started: %r" % line)
equal(prog_names(p.pid) - {"dc_fork", "dc_exec", "dc_exit"}, {"dc_entry"},
      "no session uprobes: dc_thrower's links run dc_entry only (no uretprobe)")
out, err = p.communicate("", timeout=300)
equal(p.returncode, 0, "held C++ program: exit status (stderr %r)" % err)
dctest.check_pfw(dctest.find_trace(dw))
ev, _, _ = dctest.read_trace(dctest.find_trace(dw))
equal([shape(e, "i") for e in ev if e.get("cat") == "APP"], [(1, 2)],
      "held C++ program: its one call, with ret")

# a script that probes the catch point itself: its calls are events of their own (with
# ret), not taken for dead frames; the thrown calls are still unwound (found later)
catch = script(d, "catch.lua", 'dc.uprobe { file = "libstdc++.so.6", functions = '
               '"__cxa_begin_catch", layer = "APP" }\n' 'dc.uprobe { functions = "dc_thrower", '
               'args = { "int i" }, ret = "int", layer = "APP" }')
calls, _ = run_both("cxx_catch", catch, [THROW, "mix", "10"])
equal(sorted(shape(e, "i") for e in calls if e["name"] == "dc_thrower"),
      [(i, "unwound" if i % 2 == 0 else i + 1) for i in range(10)],
      "C++ with __cxa_begin_catch probed too: dc_thrower's events")
equal(sorted("ret" in e["args"] for e in calls if e["name"] == "__cxa_begin_catch"),
      [True] * 5, "C++ with __cxa_begin_catch probed too: its 5 calls, with ret")

none = script(d, "none.lua", 'dc.uprobe { functions = "dc_thrower", args = { "int i" }, '
              'layer = "APP", returns = "none" }')
calls, _ = run_both("cxx_none", none, [THROW, "mix", "10"])
equal(sorted(shape(e, "i") for e in calls), [(i, "entry_only") for i in range(10)],
      "returns = \"none\": entry-only events")

# a C++ name of 106 bytes: its events carry it whole (a dc_func kept 63 bytes before)
LONG = ("_ZN15datacrumbs_test46a_class_whose_name_makes_the_mangled_name_long"
        "34a_member_function_with_a_long_nameEi")
long_lua = script(d, "long.lua", 'dc.uprobe { functions = "_ZN15datacrumbs_test*", args = { '
                  '"int i" }, ret = "int", layer = "APP" }')
calls, _ = run_both("cxx_long", long_lua, [THROW, "long", "30"])
equal(sorted((e["name"],) + shape(e, "i") for e in calls), [(LONG, i, i + 1) for i in range(30)],
      "C++ name of %d bytes: 30 events under the whole name, with ret" % len(LONG))

# --- 2. setjmp/longjmp ----------------------------------------------------------------------
for label, extra in (("setjmp", ""), ("setjmp_insn", ', returns = "instructions"')):
    lua = script(d, label + ".lua", 'dc.uprobe { functions = "dc_maybe_jump", args = { '
                 '"long i" }, ret = "long", layer = "APP"%s }' % extra)
    calls, _ = run_both(label, lua, [SETJMP, "mix", "100"])
    equal(sorted(shape(e, "i") for e in calls),
          [(i, "unwound" if i % 2 else 2 * i) for i in range(100)],
          "%s: every call an event, the longjmp'd ones unwound" % label)

# --- 3. Go ----------------------------------------------------------------------------------
if not GO:
    print("SKIP: golang-go is not installed (scripts/setup.sh installs it): the Go part "
          "of test_returns NOT TESTED", flush=True)
else:
    # by default entry-only: goroutines share threads, so a return cannot be paired with
    # its entry per thread (entries past the stack-growth check: one event per call)
    gdir = dctest.workdir("returns_go_files")
    lua = script(d, "go.lua", 'dc.uprobe { functions = "main.*", layer = "GO" }')
    calls, err = run_both("go", lua, [GO, gdir, "20"])
    got = {}
    for e in calls:
        got.setdefault(e["name"], []).append((e["args"].get("entry_only"), "ret" in e["args"]))
    equal([len(got.get(f, [])) for f in ("main.writeFile", "main.readFile", "main.run")],
          [20, 20, 1], "Go (auto): one event per call of main.writeFile, readFile, run")
    equal(sorted({v for vs in got.values() for v in vs}), [(1, False)],
          "Go (auto): entry-only events, no ret")
    check(re.search(r"entry-only.*Go: goroutines share threads", err),
          "Go (auto): the warning says why: %r" % err[-600:])
    check("unexpected return pc" not in err, "Go: no runtime complaint")
    # asked for: returns at the return instructions (one goroutine here: pairs hold)
    gdir = dctest.workdir("returns_go_files")
    lua = script(d, "go_insn.lua", 'dc.uprobe { functions = "main.*", layer = "GO", '
                 'returns = "instructions" }')
    calls, err = run_both("go-insn", lua, [GO, gdir, "20"])
    got = {}
    for e in calls:
        got.setdefault(e["name"], []).append(e["args"].get("ret", "no ret"))
    equal(sorted(got.get("main.writeFile", [])), [0] * 20, "Go: main.writeFile calls, ret nil")
    equal(sorted(got.get("main.readFile", [])), [100] * 20, "Go: main.readFile calls, ret 100")
    equal(got.get("main.run"), [0], "Go: main.run once, ret 0")
    check("unexpected return pc" not in err, "Go (instructions): no runtime complaint")

# --- 4. a bad value ---------------------------------------------------------------------------
bad = script(d, "bad.lua", 'dc.uprobe { functions = "dc_thrower", returns = "uretprobe" }')
r = dctest.run_dc(["run", bad, "-o", d, "--", THROW, "1"])
check(r.returncode != 0 and re.search(r"bad\.lua:2: uprobe: unknown returns 'uretprobe' "
                                      r"\(auto, hijack, instructions or none\)", r.stderr),
      "bad returns: one-line error naming the line: rc %d %r" % (r.returncode, r.stderr))

# --- 5. the kernel's log ------------------------------------------------------------------------
after = dmesg_bad()
equal(after[len(before):] if after[:len(before)] == before else after, [],
      "no new uretprobe / uprobe leak / SIGILL line in dmesg")
equal(dctest.orphan_links(), [], "no BPF link left")
dctest.finish()
