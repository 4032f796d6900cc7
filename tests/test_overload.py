"""test_overload.py: --auto-profile. A fast writer (prog_flood: N writes of 64 bytes to
/dev/null) under a callback of ~0.1 ms per event and a 64 KiB ring buffer must lose records;
the run then switches to profile mode: exactly one `overload` record (reason, mode, the
threshold given, lost > 0), counter events after it, every write accounted for (complete
events + counted calls <= N <= those + lost), and a trace that validates. Without the
option the same run stays in trace mode (decoding live: --no-spool); spooled, the slow
callback runs after the command and nothing is lost."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import dctest  # noqa: E402
from dctest import check, equal  # noqa: E402

dctest.need_root()
PROG = os.environ["PROG_FLOOD"]
SCRIPT = os.path.join(dctest.HERE, "data", "slow_cb.lua")
N = 1000000


def run(name, opts):
    d = dctest.workdir("overload-" + name)
    r = dctest.run_dc(["run", "-o", d, "--buffer-size", "64K", "--interval", "100ms"] + opts +
                      [SCRIPT, "--", PROG, str(N)])
    equal(r.returncode, 0, "%s: exit status (stderr: %s)" % (name, r.stderr.strip()))
    trace = dctest.find_trace(d)
    dctest.check_pfw(trace)
    events, _, _ = dctest.read_trace(trace)
    return r, events


def writes(events):
    """(complete write events on /dev/null, calls counted by write counters on it)"""
    x = [e for e in events if e.get("ph") == "X" and e["cat"] == "POSIX" and
         e["name"] == "write" and e["path"] == "/dev/null"]
    c = [e for e in events if e.get("ph") == "C" and e["cat"] == "POSIX" and
         e["name"] == "write" and e["path"] == "/dev/null"]
    return x, c


# 1. --auto-profile 1: the loss passes 1 % at once, the run switches
r, ev = run("switch", ["--auto-profile", "1"])
ov = [e for e in ev if e.get("cat") == "datacrumbs" and e["name"] == "overload"]
equal(len(ov), 1, "one overload record")
end = [e for e in ev if e.get("name") == "end"][0]["args"]
if ov:
    a = ov[0]["args"]
    equal((a["reason"], a["mode"], a["threshold_pct"], a["interval_us"]),
          ("loss", "profile", 1, 100000), "overload record: reason, mode, threshold, interval")
    check(a["lost"] > 0 and a["calls"] >= a["lost"], "overload record: lost %d of %d calls" %
          (a["lost"], a["calls"]))
    check(a["loss_pct"] > 1 and abs(a["loss_pct"] - 100.0 * a["lost"] / a["calls"]) < 1e-6,
          "overload record: loss_pct %r = 100 x lost / calls, above the threshold" % a["loss_pct"])
    i = ev.index(ov[0])
    equal([e["name"] for e in ev[i:] if e.get("ph") == "X" and e["cat"] == "POSIX" and
           e["ts"] > ov[0]["ts"] + 1000000], [],
          "no complete POSIX events a second after the switch")
    check(end["lost"] >= a["lost"], "end record's lost %d >= the overload record's %d" %
          (end["lost"], a["lost"]))
x, c = writes(ev)
counted = sum(e["args"]["count"] for e in c)
check(len(c) > 0, "counter events for the writes after the switch: %d" % len(c))
check(len(x) + counted <= N <= len(x) + counted + end["lost"],
      "every write accounted for: %d complete + %d counted <= %d <= those + %d lost" %
      (len(x), counted, N, end["lost"]))
check("profile mode from now" in r.stderr, "stderr says the switch: %s" % r.stderr.strip())

# 2. without the option, decoding live (--no-spool): trace mode to the end (the same loss,
# counted, no switch)
r, ev = run("none", ["--no-spool"])
equal([e for e in ev if e.get("name") == "overload" or e.get("ph") == "C"], [],
      "no --auto-profile: no overload record, no counters")
end = [e for e in ev if e.get("name") == "end"][0]["args"]
x, _ = writes(ev)
check(end["lost"] > 0 and len(x) + end["lost"] >= N and len(x) <= N,
      "no --auto-profile: %d complete writes + %d lost cover the %d writes" %
      (len(x), end["lost"], N))

# 2b. spooled (the default), with the default buffer: the callback runs after the command,
# on every record the drain threads copied during the run: nothing lost, every write an
# event
N2 = 20000
d = dctest.workdir("overload-spool")
r = dctest.run_dc(["run", "-o", d, SCRIPT, "--", PROG, str(N2)])
equal(r.returncode, 0, "spooled: exit status (stderr: %s)" % r.stderr.strip())
trace = dctest.find_trace(d)
dctest.check_pfw(trace)
ev, _, _ = dctest.read_trace(trace)
x, _ = writes(ev)
end = [e for e in ev if e.get("name") == "end"][0]["args"]
equal((len(x), end["lost"]), (N2, 0), "spooled: (complete writes, lost)")
equal(os.listdir(d), [os.path.basename(trace)], "spooled: only the trace is left")

# 3. bad values are refused
for bad in ("-1", "101", "x", "nan"):
    r = dctest.run_dc(["run", "--auto-profile", bad, SCRIPT, "--", PROG, "1"])
    check(r.returncode == 2 and "--auto-profile needs a loss percentage" in r.stderr,
          "--auto-profile %s refused (exit %d: %s)" % (bad, r.returncode, r.stderr.strip()))
dctest.finish()
