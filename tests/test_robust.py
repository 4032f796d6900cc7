"""test_robust.py: what broke before and must not again: -p attached to a busy process
(calls starting between the entry and return attach), scripts that set metatables on
events, run the event loop from a callback or call os.exit, a run killed in its first
second, and a traced program that signals its parent."""
import os
import re
import select
import time
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import dctest  # noqa: E402
from dctest import check, equal  # noqa: E402

dctest.need_root()
DC = dctest.DATACRUMBS
SAFETY = 120


def script(d, name, text):
    p = os.path.join(d, name)
    with open(p, "w") as f:
        f.write('local dc = require "datacrumbs"\ndc.probe { layer = "posix", '
                'functions = { "write", "read", "open", "close" } }\n' + text)
    return p


def readline(f):
    return f.readline().decode()


# 1. -p on a busy process: every write after the attach line is recorded, none nested
d = dctest.workdir("robust-p")
spin = subprocess.Popen([os.environ["PROG_SPIN"]], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
m = re.match(r"ready (\d+)", readline(spin.stdout))
pid = int(m.group(1))
p = subprocess.Popen([DC, "run", "-o", d, script(d, "w.lua", ""), "-p", str(pid)],
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
line = p.stderr.readline().decode()
check(line.startswith("datacrumbs: tracing PID %d" % pid), "attach line: %r" % line)
# let it run until a few thousand calls have certainly been traced: the trace's own
# writes are flushed every second, so wait for the file to hold data rather than sleep
spin.stdin.write(b"g")
spin.stdin.flush()
calls = int(readline(spin.stdout).split()[1])
spin.wait(timeout=SAFETY)
out, err = p.communicate(timeout=SAFETY)
equal(p.returncode, 0, "-p: exit status (%s)" % err.decode())
t = dctest.find_trace(d)
dctest.check_pfw(t)
events, _, _ = dctest.read_trace(t)
w = [e for e in dctest.calls(events) if e["name"] == "write" and e["path"] == "/dev/null"]
check(len(w) > 0, "-p: writes of the busy process were traced: %d" % len(w))
equal(sorted({(e["args"]["level"], e["args"]["p_idx"]) for e in w}), [(1, -1)],
      "-p: every write is outermost (no stale frames from the attach)")
equal(sorted({(e["args"]["count"], e["args"]["ret"]) for e in w}), [(1, 1)], "-p: each write 1 byte")
check(len(w) <= calls, "-p: no more writes than the process made (%d <= %d)" % (len(w), calls))
end = [e for e in events if e.get("name") == "end" and e.get("cat") == "datacrumbs"][0]["args"]
equal((end["lost"], end["too_deep"]), (0, 0), "-p: end record: nothing lost, nothing too deep")
# writes are contiguous: ids of consecutive writes of the one thread increase by one
ids = [e["id"] for e in w]
equal(ids, list(range(ids[0], ids[0] + len(ids))), "-p: no write missing between the first and last")

# 2. hostile callbacks: metatables on the event, the loop run from a callback, os.exit
d = dctest.workdir("robust-cb")
data = os.path.join(d, "f")
cases = {
    "meta": 'dc.on_event(function(ev)\n'
            '  setmetatable(ev.args, {__index = function(t, k) error("gotcha " .. k) end})\n'
            '  ev.args.ret = nil\nend)\n',
    "uvrun": 'local uv = require "luv"\ndc.on_event(function(ev) uv.run("nowait") end)\n',
    "exit": 'dc.on_event(function(ev) os.exit(3) end)\n',
}
for name, text in cases.items():
    out = os.path.join(d, name)
    os.makedirs(out)
    r = dctest.run_dc(["run", "-o", out, script(d, name + ".lua", text), "--", "dd",
                       "if=/dev/zero", "of=" + data, "bs=4k", "count=10", "status=none"],
                      timeout=SAFETY)
    equal(r.returncode, 0, "%s: exit status (stderr %r)" % (name, r.stderr))
    t = dctest.find_trace(out)
    dctest.check_pfw(t)
    events, _, _ = dctest.read_trace(t)
    w = [e for e in dctest.calls(events) if e["name"] == "write" and e["path"] == data]
    equal(len(w), 10, "%s: dd's 10 writes, each once" % name)
    equal(len({e["id"] for e in w}), 10, "%s: no event written twice" % name)
    if name == "meta":
        check(all("ret" not in e["args"] for e in w), "meta: ret removed by the callback")
    if name == "exit":
        check("os.exit is not available" in r.stderr, "exit: reported: %r" % r.stderr)
        end = [e for e in events if e.get("name") == "end" and e.get("cat") == "datacrumbs"][0]
        check(end["args"]["script_errors"] > 0, "exit: the end record counts the errors")

# 3. killed in its first second: the trace so far is readable
d = dctest.workdir("robust-kill")
p = subprocess.Popen([DC, "run", "-o", d, "io_posix.lua", "--", os.environ["PROG_SPIN"]],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
ready = readline(p.stdout)
check(ready.startswith("ready"), "kill: the command started")
spin_fd = os.pidfd_open(int(ready.split()[1]))
p.kill()
p.wait(timeout=SAFETY)
t = dctest.find_trace(d)
dctest.check_pfw(t, partial=True)
events, _, _ = dctest.read_trace(t) if t.endswith(".gz") and os.path.getsize(t) else ([], {}, [])
check(any(e.get("name") == "start" for e in events), "kill: the start record is in the file")
# the command outlives the killed tracer (it is never killed by our failure); it shares
# the stdin pipe given to datacrumbs: a byte there ends it
p.stdin.write(b"g")
p.stdin.close()
r, _, _ = select.select([spin_fd], [], [], SAFETY)  # a pidfd is readable once it exited
check(r == [spin_fd], "kill: the command went on and exited by itself")
os.close(spin_fd)

# 4. the traced program signals its parent (SIGUSR1) and datacrumbs carries on
d = dctest.workdir("robust-usr1")
data = os.path.join(d, "f")
r = dctest.run_dc(["run", "-o", d, "io_posix.lua", "--", "sh", "-c",
                   'kill -USR1 $PPID; echo hi > %s' % data], timeout=SAFETY)
equal(r.returncode, 0, "usr1: exit status (stderr %r)" % r.stderr)
t = dctest.find_trace(d)
dctest.check_pfw(t)
events, _, _ = dctest.read_trace(t)
check(any(e["path"] == data for e in dctest.calls(events)), "usr1: the write after the signal is traced")
# 5. a system call a signal kills the program in is unfinished, not an error (the kernel
# returns ERESTARTSYS, which no program ever sees)
d = dctest.workdir("robust-restart")
data = os.path.join(d, "f")
sysonly = os.path.join(d, "sys.lua")
with open(sysonly, "w") as f:
    f.write('local dc = require "datacrumbs"\ndc.probe { layer = "syscalls", functions = '
            '{ "sys_read", "sys_write", "sys_openat", "sys_close" } }\n')
hold_r, hold_w = os.pipe()
p = subprocess.Popen([DC, "run", "-o", d, sysonly, "--", os.environ["PROG_WAIT"], "before", data, "10"],
                     stdin=hold_r, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
os.close(hold_r)
ready = readline(p.stdout)
check(ready.startswith("ready"), "restart: the command says ready")
# wait until it is blocked in read(2) (syscall 0 in /proc/PID/syscall), a bounded poll
cmd_pid, deadline = int(ready.split()[1]), time.monotonic() + SAFETY
while time.monotonic() < deadline:
    with open("/proc/%d/syscall" % cmd_pid) as f:
        if f.read().startswith("0 "):
            break
p.send_signal(15)
p.communicate(timeout=SAFETY)
os.close(hold_w)
equal(p.returncode, 143, "restart: exit status")
t = dctest.find_trace(d)
dctest.check_pfw(t)
events, _, _ = dctest.read_trace(t)
reads = [e for e in dctest.calls(events, "SYSCALL") if e["name"] == "sys_read" and e["args"].get("fd") == 0]
equal([(e["args"].get("unfinished"), "ret" in e["args"], "errno" in e["args"]) for e in reads],
      [(1, False, False)], "restart: the read(0) the signal ended is unfinished")

equal(dctest.orphan_links(), [], "nothing left attached")
# an error in a luv timer is reported once with file:line and counted; the run goes on
d = dctest.workdir("robust-timer")
script = os.path.join(d, "timer.lua")
with open(script, "w") as f:
    f.write('local dc = require "datacrumbs"\nlocal uv = require "luv"\ndc.probe "posix"\n'
            'local t = uv.new_timer()\nt:start(10, 0, function() error("boom") end)\n'
            'dc.on_end(function() t:close() end)\n')
r = dctest.run_dc(["run", "-o", d, script, "--", "/bin/sh", "-c", "sleep 0.3; exit 3"])
equal(r.returncode, 3, "timer error: the command's exit status")
equal([l for l in r.stderr.splitlines() if "boom" in l],
      ["datacrumbs: error in a luv callback (the run goes on; later errors are only counted): "
       "%s:5: boom" % script], "timer error: one line with file:line")
trace = dctest.find_trace(d)
dctest.check_pfw(trace)
ev, _, _ = dctest.read_trace(trace)
equal([e["args"]["script_errors"] for e in ev if e.get("name") == "end"], [1],
      "timer error: counted in the end record")

# the command's fds: what it inherits from its caller (fd 7 here, and what the test's own
# caller passed down), none of ours.
# datacrumbs' own are all close-on-exec and dropped by the held child before it execs
# (core/util.h dc_close_fds); fd 7, inherited without close-on-exec, must stay.
LIST = ["/bin/sh", "-c", "for f in /proc/$$/fd/*; do echo ${f##*/}; done"]
null = os.open("/dev/null", os.O_RDONLY)
if null != 7:
    os.dup2(null, 7)  # inheritable (dup2's default)
    os.close(null)
os.set_inheritable(7, True)
bare = subprocess.run(LIST, pass_fds=(7,), stdout=subprocess.PIPE, text=True)
d = dctest.workdir("robust-fds")
traced = subprocess.run([DC, "run", "-q", "-o", d, "io_posix.lua", "--"] + LIST,
                        pass_fds=(7,), stdout=subprocess.PIPE, text=True)
os.close(7)
equal(traced.returncode, 0, "fds: the run")
fds = sorted(int(x) for x in bare.stdout.split())
check(7 in fds and 0 in fds, "fds: the bare command has 0 and the inherited 7: %s" % fds)
equal(sorted(int(x) for x in traced.stdout.split()), fds,
      "fds: the traced command's, the same as the bare one's")
dctest.check_pfw(dctest.find_trace(d))
dctest.finish()
