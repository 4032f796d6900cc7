"""test_cli.py: the contract of `datacrumbs run` as a user meets it, end to end:
  1. exit status: CMD's own (0, 3), 128+N when CMD dies of signal N, 127 when CMD is not
     found / not executable / has a bad #! interpreter, with a one-line error;
  2. SIGTERM and SIGINT sent to datacrumbs reach CMD, datacrumbs exits 128+N and the trace
     is complete and holds the I/O CMD did before the signal;
  3. -p PID: the attach line, exactly the process's I/O, exit 0 when it exits, Ctrl-C that
     stops tracing and leaves the process alone, a PID that does not exist;
  4. bad input (script, Lua, probe description, options, output directory, not root):
     exactly one stderr line naming the culprit, the right exit status, no trace file, CMD
     never started; a function the library lacks is a warning and the rest is traced;
  5. after every run: no process of ours left, no BPF link left without an owner.
No sleep: every wait is on a readiness line (a pipe) or a process's end; timeouts are only a
safety net."""
import json
import os
import pty
import re
import select
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import dctest  # noqa: E402
from dctest import check, equal  # noqa: E402

dctest.need_root()
DC = dctest.DATACRUMBS
PROG = os.environ["PROG_WAIT"]
HOST = socket.gethostname()
WFLAGS = 0o1 | 0o100 | 0o1000  # O_WRONLY | O_CREAT | O_TRUNC
SAFETY = 120                   # seconds: a safety net only, never a synchronisation
# every process this test starts carries this variable: what is left of them is findable
TAG = "DCTEST_CLI_RUN=%d" % os.getpid()
AT_FDCWD = -100  # fcntl.h
ENV = dict(os.environ, DCTEST_CLI_RUN=str(os.getpid()))
ENV.pop("DATACRUMBS_PROBE_PATH", None)
# the POSIX layer alone (io_posix.lua adds the ldso layer); its system calls include the
# dynamic loader's, whose number depends on the machine's libraries: the cases count the
# program's calls on its own files, and those after its first one
LIBC_ONLY = os.path.join(dctest.workdir("cli-script"), "libc_only.lua")
with open(LIBC_ONLY, "w") as f:
    f.write('local dc = require "datacrumbs"\ndc.probe "posix"\n')


# --- helpers ---------------------------------------------------------------------------
def run(args, cwd, env=ENV, prefix=()):
    """Runs datacrumbs ARGS (after an optional wrapper command) to its end."""
    return subprocess.run(list(prefix) + [DC] + args, cwd=cwd, env=env, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=SAFETY)


def lines(text):
    return text.splitlines()


def read_line(fd, what):
    """One line from a pipe (raw fd), waiting at most SAFETY seconds; '' on EOF/timeout."""
    buf = b""
    deadline = time.monotonic() + SAFETY
    while not buf.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            check(False, "%s: no line within %ds (got %r)" % (what, SAFETY, buf))
            return buf.decode()
        c = os.read(fd, 1)
        if not c:
            break
        buf += c
    return buf.decode()


def finish_proc(p, what):
    """Waits for p (safety net: killed after SAFETY s, a failure); returns (out, err)."""
    try:
        out, err = p.communicate(timeout=SAFETY)
    except subprocess.TimeoutExpired:
        check(False, "%s: still running after %ds, killed" % (what, SAFETY))
        p.kill()
        out, err = p.communicate()
    dec = lambda b: b.decode() if isinstance(b, bytes) else (b or "")  # noqa: E731
    return dec(out), dec(err)


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def tagged_processes():
    """Live processes started by this test (they carry TAG in their environment)."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit() and int(d) != os.getpid():
            try:
                with open("/proc/%s/environ" % d, "rb") as f:
                    env = f.read().split(b"\0")
                with open("/proc/%s/comm" % d) as f:
                    comm = f.read().strip()
            except OSError:
                continue
            if TAG.encode() in env:
                out.append((int(d), comm))
    return out


def nothing_left(what):
    """After a run: no process of ours, no BPF link that no live process holds (a link of
    a finished datacrumbs). Links of live processes are other users' (another session's
    datacrumbs): with none running, `bpftool link list` must be empty."""
    equal(tagged_processes(), [], "%s: processes left running" % what)
    equal(dctest.orphan_links(), [], "%s: BPF links left without an owner" % what)


def workdir(name):
    d = dctest.workdir("cli-" + name)
    os.chmod(d, 0o755)
    return d


def trace_events(path):
    events, files, meta = dctest.read_trace(path)
    return events, meta


def io_of(events, path):
    """(name, args without the bookkeeping) of the POSIX events on path, in order."""
    out = []
    for e in dctest.calls(events):
        if e["path"] == path:
            a = {k: v for k, v in e["args"].items() if k not in ("hhash", "fhash", "level", "p_idx")}
            out.append((e["name"], a))
    return out


def file_io(n):
    return [("openat", {"dirfd": AT_FDCWD, "flags": WFLAGS, "mode": 0o644, "ret": 3}),
            ("write", {"fd": 3, "count": n, "ret": n}),
            ("close", {"fd": 3, "ret": 0})]


def own_records(events):
    return [e["name"] for e in events if e.get("cat") == "datacrumbs"]


def summary_re(d, n=r"\d+"):
    return r"^datacrumbs: %s events written, 0 lost, trace %s/[^/]+\.pfw\.gz$" % (n, re.escape(d))


def trace_file(d, what):
    try:
        return dctest.find_trace(d)
    except AssertionError as e:
        check(False, "%s: %s" % (what, e))
        return None


# --- 1. exit status ----------------------------------------------------------------------
for name, cmd, want in (("exit0", ["sh", "-c", "exit 0"], 0),
                        ("exit3", ["sh", "-c", "exit 3"], 3),
                        ("segv", ["sh", "-c", "kill -SEGV $$"], 128 + signal.SIGSEGV),
                        ("usr1", ["sh", "-c", "kill -USR1 $$"], 128 + signal.SIGUSR1)):
    d = workdir(name)
    r = run(["run", "-o", d, LIBC_ONLY, "--"] + cmd, d)
    equal(r.returncode, want, "%s: exit status of %r (stderr %r)" % (name, cmd, r.stderr))
    equal(r.stdout, "", "%s: stdout" % name)
    err = lines(r.stderr)
    check(len(err) == 1 and re.match(summary_re(d), err[0]), "%s: stderr is the summary "
          "line alone: %r" % (name, err))
    t = trace_file(d, name)
    if t:
        dctest.check_pfw(t)
        equal(own_records(trace_events(t)[0]), ["start", "end"], "%s: start and end" % name)
    nothing_left(name)

# -q: the exit status stays CMD's, and stderr is empty
d = workdir("quiet")
r = run(["run", "-q", "-o", d, LIBC_ONLY, "--", "sh", "-c", "exit 5"], d)
equal((r.returncode, r.stderr, r.stdout), (5, "", ""), "-q: exit 5, nothing printed")
nothing_left("quiet")

# CMD that cannot be executed: 127, one line naming it, nothing traced
d = workdir("noexec")
noexec = os.path.join(d, "noexec.sh")
with open(noexec, "w") as f:
    f.write("#!/bin/sh\ntouch %s/marker\n" % d)
os.chmod(noexec, 0o644)
badint = os.path.join(d, "badinterp.sh")
with open(badint, "w") as f:
    f.write("#!/nonexistent/dctest-interp\ntouch %s/marker\n" % d)
os.chmod(badint, 0o755)
out = os.path.join(d, "out")
os.makedirs(out)
for what, cmd, pat in (
        ("not found", "no_such_command_xyz",
         r"^datacrumbs: no_such_command_xyz: command not found$"),
        ("not executable", noexec, r"^datacrumbs: %s: .*not executable.*$" % re.escape(noexec)),
        ("bad #! interpreter", badint,
         r"^datacrumbs: \S*badinterp\.sh: .*/nonexistent/dctest-interp.*$")):
    r = run(["run", "-o", out, LIBC_ONLY, "--", cmd], d)
    equal(r.returncode, 127, "CMD %s: exit status (stderr %r)" % (what, r.stderr))
    err = lines(r.stderr)
    check(len(err) == 1 and re.match(pat, err[0]), "CMD %s: one line naming it: %r" % (what, err))
    equal(r.stdout, "", "CMD %s: stdout" % what)
    equal(os.listdir(out), [], "CMD %s: no trace file" % what)
    check(not os.path.exists(os.path.join(d, "marker")), "CMD %s: did not run" % what)
    nothing_left("CMD " + what)

# a script without #! runs under /bin/sh, as a shell and execvp(3) run it; its calls traced
plain = os.path.join(d, "plain.sh")
with open(plain, "w") as f:
    f.write("printf 12345 > %s/plain.out\nexit 4\n" % d)
os.chmod(plain, 0o755)
r = run(["run", "-o", out, LIBC_ONLY, "--", plain], d)
equal(r.returncode, 4, "a script without #!: its exit status (stderr %r)" % r.stderr)
equal(open(os.path.join(d, "plain.out")).read(), "12345", "a script without #!: it ran")
tr = [os.path.join(out, f) for f in os.listdir(out)]
equal(len(tr), 1, "a script without #!: one trace")
if tr:
    dctest.check_pfw(tr[0])
    ev, _, _ = dctest.read_trace(tr[0])
    equal([(e["args"]["count"], e["args"]["ret"]) for e in ev if e.get("ph") == "X" and e["name"] == "write"
           and e["path"] == os.path.join(d, "plain.out")], [(5, 5)],
          "a script without #!: /bin/sh's write of 5 bytes to its output")


# --- 2. SIGTERM and SIGINT reach CMD; the trace is complete --------------------------------
for sig in (signal.SIGTERM, signal.SIGINT):
    name = sig.name
    d = workdir("sig-" + name)
    data = os.path.join(d, "before.bin")
    # CMD writes 4321 bytes, says "ready PID", then blocks reading a pipe we hold open
    # (its own, not datacrumbs' stdin pipe of Popen, which communicate() would close)
    hold_r, hold_w = os.pipe()
    p = subprocess.Popen([DC, "run", "-o", d, LIBC_ONLY, "--", PROG, "before", data, "4321"],
                         cwd=d, env=ENV, stdin=hold_r, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, bufsize=0)
    os.close(hold_r)
    ready = read_line(p.stdout.fileno(), name + ": CMD's ready line")
    m = re.match(r"^ready (\d+)\n$", ready)
    check(m, "%s: CMD says ready: %r" % (name, ready))
    cmd_pid = int(m.group(1)) if m else -1
    check(m and alive(cmd_pid) and p.poll() is None, "%s: CMD and datacrumbs run" % name)
    # wait (bounded) until CMD is blocked in read(2): syscall 0 in /proc/PID/syscall
    deadline = time.monotonic() + SAFETY
    while m and time.monotonic() < deadline:
        with open("/proc/%d/syscall" % cmd_pid) as f:
            if f.read().startswith("0 "):
                break
    p.send_signal(sig)  # to datacrumbs alone, not to its process group
    out, err = finish_proc(p, name)
    os.close(hold_w)
    equal(p.returncode, 128 + sig, "%s: datacrumbs exits 128+%d (stderr %r)" % (name, sig, err))
    equal(out, "", "%s: nothing more on stdout" % name)
    check(not alive(cmd_pid), "%s: CMD is gone" % name)
    err = lines(err)
    check(len(err) == 1 and re.match(summary_re(d), err[0]), "%s: stderr is the summary "
          "line alone: %r" % (name, err))
    t = trace_file(d, name)
    if t:
        equal(os.path.basename(t), "prog_wait-%s-%d.pfw.gz" % (HOST, cmd_pid), name + ": trace name")
        dctest.check_pfw(t)
        events, meta = trace_events(t)
        equal(io_of(events, data), file_io(4321), "%s: the I/O done before the signal" % name)
        # the other calls: the "ready" write, and the read of stdin CMD was blocked in when
        # the signal killed it, recorded as unfinished (no ret)
        # (after the program's first call on DATA: before it come ld.so's system calls)
        calls = dctest.calls(events)
        start = min([i for i, e in enumerate(calls) if e["path"] == data] or [0])
        others = [(e["name"], e["args"]["fd"], e["args"].get("ret", "unfinished"))
                  for e in calls[start:] if e["path"] != data]
        equal(others, [("write", 1, len(ready)), ("read", 0, "unfinished")],
              "%s: other calls" % name)
        equal(own_records(events), ["start", "end"], "%s: start and end records" % name)
        end = [e for e in events if e.get("name") == "end" and e.get("cat") == "datacrumbs"]
        equal((end[0]["args"]["num_events"], end[0]["args"]["lost"]) if end else None,
              (len(dctest.calls(events)), 0), "%s: end record's counts" % name)
    nothing_left(name)


# --- 3. -p PID ------------------------------------------------------------------------------
def start_waiter(d, data, n):
    """prog_wait after DATA N, not under datacrumbs: says ready, waits for a byte on stdin."""
    w = subprocess.Popen([PROG, "after", data, str(n)], cwd=d, env=ENV, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, bufsize=0)
    line = read_line(w.stdout.fileno(), "prog_wait's ready line")
    equal(line, "ready %d\n" % w.pid, "prog_wait says ready")
    return w


def attach(d, pid, what):
    """datacrumbs -p PID; returns (proc, stderr lines up to and with the attach line)."""
    p = subprocess.Popen([DC, "run", "-o", d, LIBC_ONLY, "-p", str(pid)], cwd=d, env=ENV,
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         bufsize=0)
    got = []
    while True:
        line = read_line(p.stderr.fileno(), what + ": the attach line")
        if not line:
            break
        got.append(line.rstrip("\n"))
        if line.startswith("datacrumbs: tracing PID"):
            break
    return p, got


d = workdir("pid")
data = os.path.join(d, "after.bin")
w = start_waiter(d, data, 1234)
p, err = attach(d, w.pid, "-p")
check(len(err) == 1 and re.match(r"^datacrumbs: tracing PID %d \([1-9]\d* probes attached\)$"
                                 % w.pid, err[0]), "-p: the attach line alone: %r" % err)
w.stdin.write(b"g")  # go: the process writes 1234 bytes to after.bin and exits
w.stdin.close()
equal(w.wait(timeout=SAFETY), 0, "-p: the traced process's exit status")
out, rest = finish_proc(p, "-p")
equal(p.returncode, 0, "-p: datacrumbs exits 0 when the process exits (stderr %r)" % rest)
equal(out, "", "-p: stdout")
rest = lines(rest)
check(len(rest) == 1 and re.match(summary_re(d, "3"), rest[0]), "-p: then the summary line "
      "alone: %r" % rest)
t = trace_file(d, "-p")
if t:
    equal(os.path.basename(t), "prog_wait-%s-%d.pfw.gz" % (HOST, w.pid), "-p: trace name")
    dctest.check_pfw(t)
    events, meta = trace_events(t)
    equal([(e["pid"], e["tid"]) for e in dctest.calls(events)], [(w.pid, w.pid)] * 3,
          "-p: every call is the process's")
    equal([(e["name"], e["path"], e["args"].get("count"), e["args"]["ret"])
           for e in dctest.calls(events) if e["name"] == "write"],
          [("write", data, 1234, 1234)], "-p: exactly the one write, its count and path")
    equal(io_of(events, data), file_io(1234), "-p: the process's calls on after.bin")
    equal(own_records(events), ["start", "end"], "-p: start and end records")
    # the start record describes the traced process, not datacrumbs: its parent is this
    # test, its command line prog_wait's
    start = [e for e in events if e.get("name") == "start" and e.get("cat") == "datacrumbs"]
    sh = {m["args"]["value"]: m["args"]["name"] for m in meta if m["name"] == "SH"}
    equal((start[0]["args"]["ppid"], sh.get(start[0]["args"]["cmd_hash"])) if start else None,
          (os.getpid(), "%s after %s 1234" % (PROG, data)), "-p: start record's ppid and command")
nothing_left("-p")

# -p then Ctrl-C: datacrumbs stops tracing, exits 0, the process lives on untraced
d = workdir("pid-int")
data = os.path.join(d, "after.bin")
w = start_waiter(d, data, 555)
p, err = attach(d, w.pid, "-p SIGINT")
check(len(err) == 1 and err[0].startswith("datacrumbs: tracing PID %d " % w.pid),
      "-p SIGINT: attach line: %r" % err)
p.send_signal(signal.SIGINT)
out, rest = finish_proc(p, "-p SIGINT")
equal(p.returncode, 0, "-p SIGINT: datacrumbs exits 0 (stderr %r)" % rest)
check(w.poll() is None, "-p SIGINT: the process is left alone, still running")
check(len(lines(rest)) == 1 and re.match(summary_re(d, "0"), rest), "-p SIGINT: the summary "
      "line alone, no event: %r" % rest)
t = trace_file(d, "-p SIGINT")
if t:
    dctest.check_pfw(t)
    equal(own_records(trace_events(t)[0]), ["start", "end"], "-p SIGINT: start and end")
w.stdin.write(b"g")
w.stdin.close()
equal(w.wait(timeout=SAFETY), 0, "-p SIGINT: the process goes on and exits 0")
with open(data, "rb") as f:
    equal(len(f.read()), 555, "-p SIGINT: the process's write after the detach")
nothing_left("-p SIGINT")

# -p of a process that does not exist (above the largest pid_max, 2^22)
d = workdir("pid-none")
r = run(["run", "-o", d, LIBC_ONLY, "-p", "4194304"], d)
equal(r.returncode, 125, "-p no such process: exit status (stderr %r)" % r.stderr)
err = lines(r.stderr)
check(len(err) == 1 and re.match(r"^datacrumbs: -p 4194304: no such process\b", err[0]),
      "-p no such process: one line: %r" % err)
equal(os.listdir(d), [], "-p no such process: no trace file")
nothing_left("-p no such process")


# --- 4. bad input -----------------------------------------------------------------------------
d = workdir("bad")
out = os.path.join(d, "out")
os.makedirs(out)
marker = os.path.join(d, "marker")
TOUCH = ["--", "touch", marker]


def script(name, text):
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def probe_dir(name, text):
    pd = os.path.join(d, name)
    os.makedirs(pd)
    with open(os.path.join(pd, "posix.yaml"), "w") as f:
        f.write(text)
    return pd


REQ = 'local dc = require "datacrumbs"\n'
syntax = script("syntax.lua", REQ + 'dc.probe { layer = "posix"\n\n')
runtime = script("runtime.lua", REQ + 'dc.probe { layer = "posix" }\nlocal t = nil\n'
                 'print(t.field)\n')
badfn = script("badfn.lua", REQ + 'dc.probe { layer = "posix", functions = { "open", '
               '"no_such_fn_abc" } }\n')
plain = script("plain.lua", REQ + 'dc.probe { layer = "posix" }\n')
LAYER = ("# a probe description for the tests\nlayer: POSIX\nlibrary: libc.so\nfunctions:\n"
         "  - name: open                  # open(2)\n"
         "    args: [path pathname, uint flags, mode mode]\n"
         "    effect: open\n")
unknown_field = probe_dir("probes-field", LAYER + "    colour: blue\n")     # line 8
yaml_error = probe_dir("probes-yaml", LAYER.replace("library: libc.so", "library: libc.so: x"))
ro = os.path.join(d, "readonly")
os.makedirs(ro)

cases = [
    # name, datacrumbs args, exit status, the line (regex), extra env
    ("script not found", ["run", "-o", out, "no_such_script.lua"] + TOUCH, 125,
     r"^datacrumbs: script 'no_such_script\.lua' not found \(looked in .+\)$", {}),
    ("Lua syntax error", ["run", "-o", out, syntax] + TOUCH, 125,
     r"^datacrumbs: %s:4: .+$" % re.escape(syntax), {}),
    ("Lua runtime error", ["run", "-o", out, runtime] + TOUCH, 125,
     r"^datacrumbs: %s:4: attempt to index a nil value \(local 't'\)$" % re.escape(runtime), {}),
    ("probe description unknown field", ["run", "-o", out, plain] + TOUCH, 125,
     r"^datacrumbs: %s:2: probe: %s/posix\.yaml:8: unknown field 'colour'$"
     % (re.escape(plain), re.escape(unknown_field)), {"DATACRUMBS_PROBE_PATH": unknown_field}),
    ("probe description YAML error", ["run", "-o", out, plain] + TOUCH, 125,
     r"^datacrumbs: %s:2: probe: %s/posix\.yaml:3: YAML syntax error: .+$"
     % (re.escape(plain), re.escape(yaml_error)), {"DATACRUMBS_PROBE_PATH": yaml_error}),
    ("dc.probe of a function the layer lacks", ["run", "-o", out, badfn] + TOUCH, 125,
     r"^datacrumbs: %s:2: probe: function 'no_such_fn_abc' is not in \S+/posix\.yaml$"
     % re.escape(badfn), {}),
    ("output directory missing", ["run", "-o", out + "/missing/", LIBC_ONLY] + TOUCH, 125,
     r"^datacrumbs: output directory %s/missing/ does not exist \(.+\)$" % re.escape(out), {}),
    ("output file not creatable", ["run", "-o", "/proc/dctest.pfw.gz", LIBC_ONLY] + TOUCH,
     125, r"^datacrumbs: cannot create /proc/dctest\.pfw\.gz: .+$", {}),
    ("unknown option", ["run", "--bogus", "-o", out, LIBC_ONLY] + TOUCH, 2,
     r"^datacrumbs: unknown option '--bogus' \(see 'datacrumbs run --help'\)$", {}),
    ("-p not a number", ["run", "-o", out, LIBC_ONLY, "-p", "12ab"], 2,
     r"^datacrumbs: -p needs a process id, got '12ab' \(see 'datacrumbs run --help'\)$", {}),
]
for what, args, want, pat, extra in cases:
    r = run(args, d, env=dict(ENV, **extra))
    equal(r.returncode, want, "%s: exit status (stderr %r)" % (what, r.stderr))
    err = lines(r.stderr)
    check(len(err) == 1 and re.match(pat, err[0]), "%s: one line naming the culprit: %r"
          % (what, err))
    equal(r.stdout, "", "%s: stdout" % what)
    equal(os.listdir(out), [], "%s: no trace file" % what)
    check(not os.path.exists(marker), "%s: CMD did not run" % what)
    nothing_left(what)

# an output directory that is not writable, even for root: a read-only mount (in a mount
# namespace of its own, so nothing stays mounted)
r = run(["run", "-o", ro, LIBC_ONLY] + TOUCH, d,
        prefix=["unshare", "--mount", "--propagation", "private", "sh", "-c",
                'mount -t tmpfs -o ro dctest "$0" && exec "$@"', ro])
equal(r.returncode, 125, "read-only output directory: exit status (stderr %r)" % r.stderr)
err = lines(r.stderr)
check(len(err) == 1 and re.match(r"^datacrumbs: cannot write to output directory %s: "
                                 r"Read-only file system \(.+\)$" % re.escape(ro), err[0]),
      "read-only output directory: one line naming it: %r" % err)
equal(os.listdir(ro), [], "read-only output directory: nothing under the mount point")
check(not os.path.exists(marker), "read-only output directory: CMD did not run")
nothing_left("read-only output directory")

# not root: the permission line, and nothing runs (the marker's directory is world-writable
# so that CMD, run as nobody, could create it)
nb = workdir("nobody")
os.chmod(nb, 0o777)
nb_marker = os.path.join(nb, "marker")
r = run(["run", "-o", nb, LIBC_ONLY, "--", "touch", nb_marker], nb,
        prefix=["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"])
equal(r.returncode, 125, "not root: exit status (stderr %r)" % r.stderr)
err = lines(r.stderr)
check(len(err) == 1 and re.match(r"^datacrumbs: permission denied: datacrumbs needs root, or "
                                 r"CAP_BPF and CAP_PERFMON .+$", err[0]),
      "not root: the permission line: %r" % err)
equal(os.listdir(nb), [], "not root: no trace file, no marker")
nothing_left("not root")

# a function the library does not export: a warning naming it, the rest is traced
wd = workdir("unexported")
pd = os.path.join(wd, "probes")
os.makedirs(pd)
with open(os.path.join(pd, "posix.yaml"), "w") as f:
    f.write(LAYER +
            "  - name: no_such_function_xyz  # in no C library\n"   # line 8
            "    args: [fd fd]\n"
            "  - name: write                 # write(2)\n"
            "    args: [fd fd, _ buf, long count]\n"
            "    ret: long\n"
            "  - name: close                 # close(2)\n"
            "    args: [fd fd]\n"
            "    effect: close\n")
data = os.path.join(wd, "before.bin")
r = run(["run", "-o", wd, LIBC_ONLY, "--", PROG, "before", data, "2345"], wd,
        env=dict(ENV, DATACRUMBS_PROBE_PATH=pd))
equal(r.returncode, 0, "unexported function: exit status (stderr %r)" % r.stderr)
err = lines(r.stderr)
check(len(err) == 2 and re.match(r"^datacrumbs: warning: no_such_function_xyz is not exported by "
                                 r"/\S*libc\.so[.\d]* \(%s/posix\.yaml:8\): not traced$"
                                 % re.escape(pd), err[0]),
      "unexported function: the warning line first: %r" % err)
check(len(err) == 2 and re.match(summary_re(wd, "4"), err[1]),
      "unexported function: then the summary: %r" % err)
t = trace_file(wd, "unexported function")
if t:
    dctest.check_pfw(t)
    events, meta = trace_events(t)
    # (this description names no system call: its functions are uprobes, open is open)
    equal(io_of(events, data), [("open", {"flags": WFLAGS, "mode": 0o644, "ret": 3})] +
          file_io(2345)[1:], "unexported function: the others are traced")
    equal(sorted({e["name"] for e in dctest.calls(events)}), ["close", "open", "write"],
          "unexported function: only the layer's functions")
nothing_left("unexported function")

# --- 5. Ctrl-C typed at a terminal reaches CMD once -------------------------------------------
# The terminal sends SIGINT to the whole foreground process group, CMD included: datacrumbs
# must not forward it a second time. Run under a pseudo-terminal, type ^C once.
d = workdir("ctrl-c")
pid, fd = pty.fork()
if pid == 0:
    os.chdir(d)
    os.execve(DC, [DC, "run", "-q", "-o", d, LIBC_ONLY, "--", os.environ["PROG_SIGCOUNT"]], ENV)
seen = b""


def pty_until(text):
    global seen
    while text not in seen:
        r, _, _ = select.select([fd], [], [], SAFETY)
        if not r:
            return False
        try:
            seen += os.read(fd, 1024)
        except OSError:
            return False
    return True


check(pty_until(b"ready"), "ctrl-c: CMD is ready: %r" % seen)
os.write(fd, b"\x03")
check(pty_until(b"got 1"), "ctrl-c: CMD got the SIGINT: %r" % seen)
os.write(fd, b"\n")
check(pty_until(b"final "), "ctrl-c: CMD reports its count: %r" % seen)
_, status = os.waitpid(pid, 0)
os.close(fd)
m = re.search(rb"final (\d+)", seen)
equal(int(m.group(1)) if m else None, 1, "ctrl-c: SIGINTs CMD received for one ^C")
equal(os.waitstatus_to_exitcode(status), 0, "ctrl-c: datacrumbs exits with CMD's status")
t = trace_file(d, "ctrl-c")
if t:
    dctest.check_pfw(t)
nothing_left("ctrl-c")

# --- 6. -o: a directory, or a file named .pfw.gz (.pfw with --no-compress) ------------------
d = workdir("o-rules")
for args, want in (
        (["-o", os.path.join(d, "nodir")], r"^datacrumbs: output directory \S+/nodir does not exist "
                                          r"\(create it, or give -o a file name ending in \.pfw\.gz\)$"),
        (["-o", os.path.join(d, "x.pfw")], r"^datacrumbs: -o \S+/x\.pfw: a \.pfw file is plain JSON: "
                                          r"name it \.pfw\.gz, or add --no-compress$"),
        (["--no-compress", "-o", os.path.join(d, "x.pfw.gz")],
         r"^datacrumbs: -o \S+/x\.pfw\.gz: --no-compress writes plain JSON: name the file \.pfw, not \.gz$")):
    r = run(["run"] + args + [LIBC_ONLY] + TOUCH, d)
    err = lines(r.stderr)
    equal(r.returncode, 125, "-o %r: exit status" % args)
    check(len(err) == 1 and re.match(want, err[0]), "-o %r: one line: %r" % (args, err))
    check(not os.path.exists(marker), "-o %r: CMD did not run" % args)
r = run(["run", "-q", "--no-compress", "-o", os.path.join(d, "t.pfw"), LIBC_ONLY, "--", "true"], d)
equal(r.returncode, 0, "-o FILE.pfw --no-compress: exit status (stderr %r)" % r.stderr)
check(os.path.exists(os.path.join(d, "t.pfw")) and dctest.check_pfw(os.path.join(d, "t.pfw")),
      "-o FILE.pfw --no-compress: a plain trace by that name")
nothing_left("-o rules")

dctest.finish()
