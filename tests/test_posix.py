"""test_posix.py: traces tests/progs/prog_io.c (known I/O: relative and absolute paths,
offsets, a failing open, two threads, a fork, an exec) and checks every event on its
files exactly: name, pid, tid, fd, count, offset, ret, path, nesting. Also a script
callback that drops and tags events, and that untraced processes stay out."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import dctest  # noqa: E402
from dctest import check, equal  # noqa: E402

dctest.need_root()
PROG = os.environ["PROG_IO"]
O_WRONLY, O_CREAT, O_TRUNC = 0o1, 0o100, 0o1000
WFLAGS = O_CREAT | O_WRONLY | O_TRUNC
AT_FDCWD = -100


def run_prog(name, script, extra=()):
    d = dctest.workdir(name)
    data = os.path.join(d, "data")
    os.makedirs(data)
    # an untraced process doing I/O in the same directory at the same time
    noise = subprocess.Popen(["dd", "if=/dev/zero", "of=" + os.path.join(data, "noise.bin"),
                              "bs=512", "count=20000", "status=none"])
    r = dctest.run_dc(["run", "-o", d] + list(extra) + [script, "--", PROG, data])
    noise.wait()
    equal(r.returncode, 7, "%s: datacrumbs exits with the program's status 7 (stderr: %s)"
          % (name, r.stderr.strip()))
    ids = dict(kv.split("=") for kv in r.stdout.split())
    trace = dctest.find_trace(d)
    equal(os.path.basename(trace), "prog_io-%s-%s.pfw.gz" % (os.uname().nodename, ids["main"]),
          "trace file name <exec>-<host>-<pid>.pfw.gz")
    dctest.check_pfw(trace)
    events, files, meta = dctest.read_trace(trace)
    return data, {k: int(v) for k, v in ids.items()}, events, meta, r


def mine(events, data, pid=None, tid=None):
    """POSIX events on the program's own files (under data/), in trace order."""
    out = []
    for e in dctest.calls(events):
        p = e["path"]
        if p and (p == data or p.startswith(data + "/")):
            if (pid is None or e["pid"] == pid) and (tid is None or e["tid"] == tid):
                out.append(e)
    return out


def shape(e, data):
    """The comparable part of an event: name, file relative to data/, and its args."""
    a = dict(e["args"])
    for k in ("hhash", "fhash", "level", "p_idx"):
        a.pop(k, None)
    return (e["name"], os.path.relpath(e["path"], data), a)


# --- the full run -------------------------------------------------------------------
data, ids, events, meta, r = run_prog("posix", "io_posix.lua")
P, T0, T1, C, E = ids["main"], ids["thread0"], ids["thread1"], ids["child"], ids["exec"]
check(len({P, T0, T1}) == 3, "threads have their own tids: %r" % ids)

# the dynamic loader's first calls are traced: probes were attached before the first
# instruction. They are system calls, seen by the raw_syscalls tracepoints (no uprobe, no
# debug symbols): ld.so checks /etc/ld.so.preload, opens its cache and fstat()s it
# (glibc 2.36 makes fstat newfstatat(fd, "", AT_EMPTY_PATH): one fstatat event)
AT_EMPTY_PATH = 0x1000
first = [(e["name"], e["path"], e["args"].get("flags"), e["args"]["ret"])
         for e in dctest.calls(events) if e["pid"] == P and e["path"]][:3]
equal(first, [("access", "/etc/ld.so.preload", None, -1),
              ("openat", "/etc/ld.so.cache", os.O_RDONLY | os.O_CLOEXEC, 3),
              ("fstatat", "/etc/ld.so.cache", AT_EMPTY_PATH, 0)],
      "the program's first calls are ld.so's: preload check, its cache opened, fstat")
libc_opens = [e for e in dctest.calls(events) if e["pid"] == P and e["name"] == "openat"
              and e["path"] and os.path.basename(e["path"]) == "libc.so.6"]
equal(len(libc_opens), 1, "ld.so opens libc.so.6 once")

# prog_io's calls on data/, as strace shows them: glibc's open(2) is openat(AT_FDCWD, ...),
# its stat(2) one newfstatat (one event, not two); a failed call has ret -1 and errno
want_main = [
    ("chdir", ".", {"ret": 0}),
    ("openat", "data.bin", {"dirfd": AT_FDCWD, "flags": WFLAGS, "mode": 0o644, "ret": 3}),
    ("write", "data.bin", {"fd": 3, "count": 4096, "ret": 4096}),
    ("pwrite", "data.bin", {"fd": 3, "count": 1000, "offset": 8192, "ret": 1000}),
    ("fsync", "data.bin", {"fd": 3, "ret": 0}),
    ("close", "data.bin", {"fd": 3, "ret": 0}),
    ("openat", "data.bin", {"dirfd": AT_FDCWD, "flags": 0, "ret": 3}),
    ("read", "data.bin", {"fd": 3, "count": 100, "ret": 100}),
    ("lseek", "data.bin", {"fd": 3, "offset": 8192, "whence": 0, "ret": 8192}),
    ("read", "data.bin", {"fd": 3, "count": 2000, "ret": 1000}),
    ("pread", "data.bin", {"fd": 3, "count": 10, "offset": 4000, "ret": 10}),
    ("close", "data.bin", {"fd": 3, "ret": 0}),
    ("fstatat", "data.bin", {"dirfd": AT_FDCWD, "flags": 0, "ret": 0}),
    ("openat", "missing/nothere", {"dirfd": AT_FDCWD, "flags": 0, "ret": -1, "errno": 2}),
    ("unlink", "data.bin", {"ret": 0}),
]
# the same calls by uprobes on libc (dc.probe's mechanism = "uprobe"): the library
# functions themselves; glibc's stat is a tail call into fstatat, so the inner call
# returns first, nested under it
want_uprobe = [
    ("chdir", ".", {"ret": 0}),
    ("open", "data.bin", {"flags": WFLAGS, "mode": 0o644, "ret": 3}),
    ("write", "data.bin", {"fd": 3, "count": 4096, "ret": 4096}),
    ("pwrite", "data.bin", {"fd": 3, "count": 1000, "offset": 8192, "ret": 1000}),
    ("fsync", "data.bin", {"fd": 3, "ret": 0}),
    ("close", "data.bin", {"fd": 3, "ret": 0}),
    ("open", "data.bin", {"flags": 0, "ret": 3}),
    ("read", "data.bin", {"fd": 3, "count": 100, "ret": 100}),
    ("lseek", "data.bin", {"fd": 3, "offset": 8192, "whence": 0, "ret": 8192}),
    ("read", "data.bin", {"fd": 3, "count": 2000, "ret": 1000}),
    ("pread", "data.bin", {"fd": 3, "count": 10, "offset": 4000, "ret": 10}),
    ("close", "data.bin", {"fd": 3, "ret": 0}),
    ("fstatat", "data.bin", {"dirfd": AT_FDCWD, "flags": 0, "ret": 0}),
    ("stat", "data.bin", {"ret": 0}),
    ("open", "missing/nothere", {"flags": 0, "ret": -1}),
    ("unlink", "data.bin", {"ret": 0}),
]
main = mine(events, data, pid=P, tid=P)
got_main = [shape(e, data) for e in main]
equal(len(got_main), len(want_main), "number of main-thread events on data/")
for i, (g, w) in enumerate(zip(got_main, want_main)):
    equal(g, w, "main-thread event %d" % i)
# every call the program made itself is outermost
for e in main:
    equal((e["args"]["level"], e["args"]["p_idx"]), (1, -1), "%s is outermost" % e["name"])

# the two threads: same process, own tids, 3 writes of 512 bytes each
for tid, n in ((T0, 0), (T1, 1)):
    got = [shape(e, data) for e in mine(events, data, pid=P, tid=tid)]
    f = "t%d.bin" % n
    want = [("openat", f, {"dirfd": AT_FDCWD, "flags": WFLAGS, "mode": 0o600,
                           "ret": got[0][2].get("ret") if got else None})]
    want += [("write", f, {"fd": want[0][2]["ret"], "count": 512, "ret": 512})] * 3
    want += [("close", f, {"fd": want[0][2]["ret"], "ret": 0})]
    equal(got, want, "thread %d events" % n)
    check(got and got[0][2]["ret"] >= 3, "thread %d got an fd" % n)

# the forked child writes 777 bytes; the exec'd child 333
equal([shape(e, data) for e in mine(events, data, pid=C)],
      [("openat", "child.bin", {"dirfd": AT_FDCWD, "flags": WFLAGS, "mode": 0o600, "ret": 3}),
       ("write", "child.bin", {"fd": 3, "count": 777, "ret": 777}),
       ("close", "child.bin", {"fd": 3, "ret": 0})], "forked child events")
check(all(e["tid"] == C for e in mine(events, data, pid=C)), "forked child tid == pid")
equal([shape(e, data) for e in mine(events, data, pid=E)],
      [("chdir", ".", {"ret": 0}),
       ("openat", "exec.bin", {"dirfd": AT_FDCWD, "flags": WFLAGS, "mode": 0o600, "ret": 3}),
       ("write", "exec.bin", {"fd": 3, "count": 333, "ret": 333}),
       ("close", "exec.bin", {"fd": 3, "ret": 0})], "exec'd child events")

# nothing else: only our processes, no event of the untraced dd
equal(sorted({e["pid"] for e in dctest.calls(events)} - {P, C, E}), [], "pids other than the program's")
equal([e for e in dctest.calls(events) if e["path"] and e["path"].endswith("noise.bin")], [],
      "events of the untraced dd")
# ids unique per pid; process names; start and end records
seen = set()
for e in events:
    if e.get("ph") == "X":
        check((e["pid"], e["id"]) not in seen, "id %r repeats in pid %r" % (e["id"], e["pid"]))
        seen.add((e["pid"], e["id"]))
names = {(m["pid"], m["args"]["name"]) for m in meta if m["name"] == "process_name"}
check((P, "prog_io") in names and (E, "prog_io") in names, "process_name records: %r" % names)
own = [e for e in events if e.get("cat") == "datacrumbs"]
equal([e["name"] for e in own], ["start", "end"], "the tracer's own records")
end = own[-1]["args"] if own else {}
equal(end.get("lost"), 0, "end record: lost")
equal(end.get("num_events"), len(dctest.calls(events)), "end record: num_events")
check(" 0 lost" in r.stderr and "events written" in r.stderr, "summary line: %r" % r.stderr)
# every path is absolute; an fd that is no file keeps the kernel's name (pipe:[N])
stdout = [e for e in dctest.calls(events) if e["name"] == "write" and e["args"]["fd"] == 1]
equal([(e["pid"], e["args"]["ret"], e["path"].startswith("pipe:[")) for e in stdout],
      [(P, len(r.stdout), True)], "the program's one write to stdout (a pipe)")
equal([e["path"] for e in dctest.calls(events) if e["path"] and not e["path"].startswith("/")
       and not e["path"].startswith("pipe:[")], [], "paths that are not absolute")

# --- a script callback that drops and tags events -----------------------------------
script = os.path.join(dctest.workdir("posix-cb"), "tagger.lua")
with open(script, "w") as f:
    f.write('''local dc = require "datacrumbs"
dc.probe { layer = "posix", functions = { "open", "write", "close" } }
dc.on_event(function(ev)
  if ev.path and ev.path:find("/t1%.bin$") then return false end  -- drop one thread's file
  if ev.name == "write" then ev.args.phase = "io"; ev.args.count = nil end
end)
''')
data, ids, events, meta, r = run_prog("posix-cb-run", script)
got = mine(events, data)
equal([e for e in got if e["path"].endswith("t1.bin")], [], "dropped events absent")
# open(3) asked for: glibc's open makes openat(2), the event's name (probes/posix.yaml)
equal(sorted({e["name"] for e in got}), ["close", "openat", "write"], "only the asked functions")
w = [e for e in got if e["name"] == "write" and e["path"].endswith("child.bin")]
equal([(e["args"].get("phase"), "count" in e["args"], e["args"]["ret"]) for e in w],
      [("io", False, 777)], "the callback tagged the write and removed its count")

# --- real paths: through a symlinked directory and "..", the file the kernel opened -------
d = dctest.workdir("posix-real")
os.makedirs(os.path.join(d, "real", "sub"))
os.makedirs(os.path.join(d, "real", "x"))
os.symlink("real/sub", os.path.join(d, "link2"))
with open(os.path.join(d, "real", "x", "t"), "w") as f:
    f.write("hello")
r = dctest.run_dc(["run", "io_posix.lua", "-o", os.path.join(d, "t.pfw.gz"), "--", "sh", "-c",
                   "cd link2 && cat ../x/t"], cwd=d)
equal((r.returncode, r.stdout), (0, "hello"), "real paths: the command ran")
dctest.check_pfw(os.path.join(d, "t.pfw.gz"))
events, _, _ = dctest.read_trace(os.path.join(d, "t.pfw.gz"))
got = [(e["name"], e["path"], e["args"].get("pathname"), e["args"].get("ret"))
       for e in dctest.calls(events) if e["path"] and e["path"].startswith(d + "/")
       and e["name"] in ("chdir", "openat", "read")]
# (sh gives chdir the absolute path it made: d/link2)
equal(got, [("chdir", d + "/real/sub", d + "/link2", 0),
            ("openat", d + "/real/x/t", None, 3),
            ("read", d + "/real/x/t", None, 5), ("read", d + "/real/x/t", None, 0)],
      "real paths: the cwd and the file as the kernel resolves them (not %s/x/t), the "
      "name given kept" % d)

# --- calls on two files: both named, fhash and fhash2 ----------------------------------------
d = dctest.workdir("posix-two")
with open(os.path.join(d, "src"), "wb") as f:
    f.write(bytes(range(256)) * 48)                         # 12288 bytes
r = dctest.run_dc(["run", "io_posix.lua", "-o", os.path.join(d, "t.pfw.gz"), "--",
                   os.environ["PROG_TWOFILE"], d])
equal(r.returncode, 0, "two files: prog_twofile's exit status (stderr %r)" % r.stderr)
dctest.check_pfw(os.path.join(d, "t.pfw.gz"))
events, files, _ = dctest.read_trace(os.path.join(d, "t.pfw.gz"))
# (the pipe the program made is named as the kernel names it, pipe:[INODE]; compared
# without its inode, which differs per run)
pipe = lambda p: "pipe:" if p and p.startswith("pipe:[") and p.endswith("]") else p  # noqa: E731
got = [(e["name"], pipe(e["path"]), pipe(files.get(e["args"].get("fhash2"))), e["args"]["count"],
        e["args"]["ret"]) for e in dctest.calls(events) if e["name"] in ("sendfile", "splice")]
equal(got, [("sendfile", d + "/a", d + "/src", 12288, 12288),
            ("splice", d + "/src", "pipe:", 12288, 12288),
            ("splice", "pipe:", d + "/b", 12288, 12288)],
      "two files: sendfile (out_fd, in_fd) and splice (fd_in, fd_out) name both files")
sp = [e for e in dctest.calls(events) if e["name"] == "splice"]
check(len(sp) == 2 and files.get(sp[0]["args"].get("fhash2")) == sp[1]["path"],
      "two files: both splices name the one pipe (its write end, then its read end)")
equal([os.path.getsize(os.path.join(d, n)) for n in ("a", "b")], [12288, 12288],
      "two files: the copies")

# --- the uprobe way, on request: the library functions themselves ------------------------
script = os.path.join(dctest.workdir("posix-up"), "uprobe.lua")
with open(script, "w") as f:
    f.write('local dc = require "datacrumbs"\n'
            'dc.probe { layer = "posix", mechanism = "uprobe" }\n')
data, ids, events, meta, r = run_prog("posix-up-run", script)
main = mine(events, data, pid=ids["main"], tid=ids["main"])
equal([shape(e, data) for e in main], want_uprobe, "mechanism = uprobe: main-thread events")
by_name = {}
for e in main:
    by_name.setdefault(e["name"], []).append(e)
if "stat" in by_name and "fstatat" in by_name:
    st, fs = by_name["stat"][0], by_name["fstatat"][0]
    equal((fs["args"]["level"], fs["args"]["p_idx"]), (2, st["id"]),
          "mechanism = uprobe: fstatat nests under stat")
    check(st["ts"] <= fs["ts"] and fs["ts"] + fs["dur"] <= st["ts"] + st["dur"] + dctest.US_ROUNDING,
          "fstatat lies within stat in time")
bad_lua = os.path.join(dctest.workdir("posix-bad"), "bad.lua")
with open(bad_lua, "w") as f:
    f.write('local dc = require "datacrumbs"\n'
            'dc.probe { layer = "posix", mechanism = "kprobe" }\n')
bad = dctest.run_dc(["check", bad_lua])
check(bad.returncode != 0 and re.search(r'bad\.lua:2: probe: spec\.mechanism must be '
                                        r'"syscall"', bad.stderr),
      "mechanism = kprobe: one line naming the script's line: %r" % bad.stderr)
dctest.finish()
