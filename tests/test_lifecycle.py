"""test_lifecycle.py: processes that come and go (issue 13, items 4 and 5).
  1. pid reuse: prog_forkmany makes pid_max + 7,232 short children one after another
     (40,000 with Linux's default pid_max of 32,768), each writing 1 byte to its own file.
     Pids recur, yet every (pid, id) is unique (the validators pass), every child's
     open, write and close are on its own file, one each, in that order.
  2. a daemon: prog_daemon's grandchild (fork, setsid, fork) outlives the command. The run
     goes on until it has ended, says so once on stderr, and its 5 writes are in the
     trace; the exit status is still the command's (3). With --end-with-cmd the run ends
     with the command, and the daemon runs on untouched. Ctrl-C (SIGINT) while waiting
     ends the run at once, the trace complete, the daemon untouched."""
import os
import re
import select
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import dctest  # noqa: E402
from dctest import check, equal  # noqa: E402

dctest.need_root()
DC = dctest.DATACRUMBS
FORKMANY = os.environ["PROG_FORKMANY"]
DAEMON = os.environ["PROG_DAEMON"]

# --- 2. a daemon that outlives the command -------------------------------------------------
def start(label, extra=()):
    d = dctest.workdir("life-" + label)
    out = os.path.join(d, "daemon.out")
    p = subprocess.Popen([DC, "run"] + list(extra) + ["io_posix.lua", "-o", d, "--", DAEMON,
                                                      out],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    m = re.match(r"daemon (\d+)$", p.stdout.readline().strip())
    check(m, "%s: the daemon started" % label)
    return d, out, p, int(m.group(1)) if m else 0


def wait_gone(pid):
    """Waits for a process that is not our child to end (its pidfd becomes readable)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    select.select([fd], [], [], 60)
    os.close(fd)


def daemon_writes(d, out, dpid):
    trace = dctest.find_trace(d)
    dctest.check_pfw(trace)
    events, _, _ = dctest.read_trace(trace)
    return [(e["pid"], e["args"]["count"], e["args"]["ret"]) for e in dctest.calls(events)
            if e["name"] == "write" and e["path"] == out]


d, out, p, dpid = start("daemon")
note = p.stderr.readline()  # printed once the command has exited, the daemon still waiting
check(re.match(r"^datacrumbs: \S*prog_daemon exited; 1 process it started is still traced "
               r"\(%d\): the trace ends when it ends \(Ctrl-C ends it now; --end-with-cmd "
               r"does not wait\)$" % dpid, note), "daemon: the note on stderr: %r" % note)
equal(p.poll(), None, "daemon: the run goes on after the command exited")
p.stdin.close()             # the daemon writes its 5 x 5 bytes and exits; so does the run
rest = p.stderr.read()
equal(p.wait(timeout=60), 3, "daemon: the command's exit status (stderr %r)" % rest)
check(re.match(r"^datacrumbs: \d+ events written, 0 lost", rest), "daemon: summary %r" % rest)
equal(daemon_writes(d, out, dpid), [(dpid, 5, 5)] * 5, "daemon: its 5 writes are traced")
equal(os.path.getsize(out), 25, "daemon: the file it wrote")

# (the daemon holds our pipes to the run's stdout and stderr: they are read to their end
# only once it has ended)
d, out, p, dpid = start("endwithcmd", ["--end-with-cmd"])
equal(p.wait(timeout=60), 3, "--end-with-cmd: the run ends with the command, its status")
equal(daemon_writes(d, out, dpid), [], "--end-with-cmd: the daemon had written nothing")
check(os.path.exists("/proc/%d" % dpid), "--end-with-cmd: the daemon still runs")
p.stdin.close()
wait_gone(dpid)
err = p.stderr.read()
check("still traced" not in err, "--end-with-cmd: no waiting note: %r" % err)
equal(os.path.getsize(out), 25, "--end-with-cmd: the daemon ran on untouched, wrote its file")

d, out, p, dpid = start("sigint")
note = p.stderr.readline()
check("still traced (%d)" % dpid in note, "SIGINT: waiting for the daemon: %r" % note)
p.send_signal(signal.SIGINT)
equal(p.wait(timeout=60), 3, "SIGINT while waiting: the command's exit status")
equal(daemon_writes(d, out, dpid), [], "SIGINT: the trace ends there, complete")
check(os.path.exists("/proc/%d" % dpid), "SIGINT: the daemon is not touched")
p.stdin.close()
wait_gone(dpid)
err = p.stderr.read()
check(re.match(r"^datacrumbs: \d+ events written, 0 lost", err), "SIGINT: summary %r" % err)
equal(os.path.getsize(out), 25, "SIGINT: the daemon ran on and wrote its file")
# --- 1. pid reuse --------------------------------------------------------------------------
with open("/proc/sys/kernel/pid_max") as f:
    pid_max = int(f.read())
if pid_max > 100000:
    print("SKIP: pid_max is %d: pid reuse would need more than 100,000 children here; "
          "the pid-reuse part of test_lifecycle.py NOT TESTED" % pid_max, flush=True)
else:
    n = pid_max + 7232
    d = dctest.workdir("life-reuse")
    data = os.path.join(d, "data")
    os.makedirs(data)
    r = dctest.run_dc(["run", "io_posix.lua", "-o", d, "--", FORKMANY, str(n), data],
                      timeout=900)
    equal(r.returncode, 0, "pid reuse: exit status (stderr %r)" % r.stderr[-500:])
    equal(sorted(os.path.getsize(os.path.join(data, f)) for f in os.listdir(data)), [1] * n,
          "pid reuse: %d files of 1 byte each" % n)
    trace = dctest.find_trace(d)
    dctest.check_pfw(trace)   # unique (pid, id) pairs, parents that exist
    events, _, _ = dctest.read_trace(trace)
    per_file = {}
    for e in dctest.calls(events):
        if e["path"] and e["path"].startswith(data + "/"):
            per_file.setdefault(os.path.basename(e["path"]), []).append(e)
    equal(len(per_file), n, "pid reuse: files in the trace")
    bad = []
    for name, evs in per_file.items():
        shape = [(e["name"], e["args"].get("count"), e["args"]["ret"]) for e in evs]
        same = len({e["pid"] for e in evs}) == 1
        ordered = [e["id"] for e in evs] == sorted(e["id"] for e in evs)
        if shape != [("openat", None, 3), ("write", 1, 1), ("close", None, 0)] or not same \
                or not ordered:
            bad.append((name, shape, same, ordered))
    equal(bad[:3], [], "pid reuse: each child's openat, write of 1 byte, close, in one "
          "process, in id order (%d files wrong)" % len(bad))
    pids = {}
    for e in dctest.calls(events):
        if e["name"] == "write" and e["path"] and e["path"].startswith(data + "/"):
            pids[e["pid"]] = pids.get(e["pid"], 0) + 1
    check(len(pids) < n, "pid reuse: pids recurred (%d pids for %d children)" % (len(pids), n))
    print("pid reuse: %d children, %d distinct pids, at most %d children per pid"
          % (n, len(pids), max(pids.values()) if pids else 0))


equal(dctest.orphan_links(), [], "no BPF link left")
dctest.finish()
