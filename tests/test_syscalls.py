"""test_syscalls.py: the SYSCALL layer (io_syscalls.lua, raw_syscalls tracepoints): a static
program doing raw syscall(2) I/O that no uprobe can see, dd's exact syscalls, and the
nesting of syscalls under the POSIX calls that made them when both layers are probed."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
import dctest  # noqa: E402
from dctest import check, equal  # noqa: E402

dctest.need_root()
O_WRONLY, O_CREAT, O_TRUNC = 0o1, 0o100, 0o1000
AT_FDCWD, ENOENT = -100, 2


def traced(name, script, cmd):
    d = dctest.workdir("sys-" + name)
    data = os.path.join(d, "data")
    os.makedirs(data)
    r = dctest.run_dc(["run", "-o", d, script, "--"] + [c.replace("DATA", data) for c in cmd])
    trace = dctest.find_trace(d)
    dctest.check_pfw(trace)
    events, _, _ = dctest.read_trace(trace)
    return data, r, events


def on(events, data, cat):
    return [e for e in dctest.calls(events, cat) if e["path"] and e["path"].startswith(data + "/")]


def shape(e, data):
    a = {k: v for k, v in e["args"].items() if k not in ("hhash", "fhash", "level", "p_idx")}
    return (e["name"], os.path.relpath(e["path"], data), a)


# 1. a static binary with raw syscalls: seen by the syscall layer, not by uprobes
data, r, events = traced("raw", "io_syscalls.lua", [os.environ["PROG_RAW"], "DATA"])
equal(r.returncode, 0, "prog_raw exit status (stderr: %s)" % r.stderr.strip())
equal([shape(e, data) for e in on(events, data, "SYSCALL")], [
    ("sys_openat", "raw.bin", {"dirfd": AT_FDCWD, "flags": O_CREAT | O_WRONLY | O_TRUNC,
                               "mode": 0o640, "ret": 3}),
    ("sys_write", "raw.bin", {"fd": 3, "count": 100, "ret": 100}),
    ("sys_pwrite64", "raw.bin", {"fd": 3, "count": 200, "offset": 1000, "ret": 200}),
    ("sys_close", "raw.bin", {"fd": 3, "ret": 0}),
    ("sys_openat", "missing/none", {"dirfd": AT_FDCWD, "flags": 0, "ret": -1, "errno": ENOENT}),
], "prog_raw's syscalls")
data, r, events = traced("raw-posix", "io_posix.lua", [os.environ["PROG_RAW"], "DATA"])
equal(r.returncode, 0, "prog_raw under io_posix.lua exit status")
# the POSIX layer's system-call wrappers are served by the syscall tracepoints, so a static
# binary's calls are POSIX events too, named as libc names them; what is no system call
# (readdir's buffered entries) needs the library, and the warning says so
check(re.search(r"prog_raw does not load libc\.so \(a static binary\): layer POSIX is traced "
                r"by its system calls; its 5 functions that are no system call \(opendir, "
                r"\.\.\.\) only in the programs it runs that load \S*libc\.so\.6$", r.stderr,
                re.M),
      "io_posix.lua warns about the static binary: %r" % r.stderr)
equal([shape(e, data) for e in on(events, data, "POSIX")], [
    ("openat", "raw.bin", {"dirfd": AT_FDCWD, "flags": O_CREAT | O_WRONLY | O_TRUNC,
                           "mode": 0o640, "ret": 3}),
    ("write", "raw.bin", {"fd": 3, "count": 100, "ret": 100}),
    ("pwrite", "raw.bin", {"fd": 3, "count": 200, "offset": 1000, "ret": 200}),
    ("close", "raw.bin", {"fd": 3, "ret": 0}),
    ("openat", "missing/none", {"dirfd": AT_FDCWD, "flags": 0, "ret": -1, "errno": ENOENT}),
], "a static binary's POSIX events")

# 1b. a static launcher that execs a dynamic program: the program's libc calls are traced
data, r, events = traced("launch", "io_posix.lua", [os.environ["PROG_LAUNCH"], "/bin/dd",
                                                     "if=/dev/zero", "of=DATA/l", "bs=1k",
                                                     "count=3", "status=none"])
equal(r.returncode, 0, "launcher exit status (stderr: %s)" % r.stderr.strip())
check("layer POSIX is traced in the library /bin/dd loads" in r.stderr,
      "the launcher note names the program it runs: %r" % r.stderr)
equal([(e["name"], e["args"]["count"], e["args"]["ret"]) for e in dctest.calls(events, "POSIX")
       if e["name"] == "write" and e["path"] == data + "/l"], [("write", 1024, 1024)] * 3,
      "dd's 3 writes, run by a static launcher")

# 2. dd: exactly its 100 reads and 100 writes of 64 KiB
data, r, events = traced("dd", "io_syscalls.lua",
                         ["dd", "if=/dev/zero", "of=DATA/out", "bs=64k", "count=100"])
equal(r.returncode, 0, "dd exit status")
calls = dctest.calls(events, "SYSCALL")
reads = [e for e in calls if e["name"] == "sys_read" and e["path"] == "/dev/zero"]
writes = [e for e in calls if e["name"] == "sys_write" and e["path"] == data + "/out"]
equal([(e["args"]["count"], e["args"]["ret"]) for e in reads], [(65536, 65536)] * 100,
      "dd's reads of /dev/zero")
equal([(e["args"]["count"], e["args"]["ret"]) for e in writes], [(65536, 65536)] * 100,
      "dd's writes to out")
equal(sum(e["args"]["ret"] for e in writes), os.path.getsize(data + "/out"), "bytes written = file size")

# 2b. a script asking for one syscall gets it (its probe may have index 0: its attach
# cookie must still say "traced")
script1 = os.path.join(dctest.workdir("sys-one-script"), "one.lua")
with open(script1, "w") as f:
    f.write('local dc = require "datacrumbs"\n'
            'dc.probe { layer = "syscalls", functions = { "sys_write" } }\n')
data, r, events = traced("one", script1, ["dd", "if=/dev/zero", "of=DATA/out", "bs=4k",
                                          "count=7", "status=none"])
equal([(e["name"], e["args"]["count"], e["args"]["ret"]) for e in dctest.calls(events, "SYSCALL")
       if e["path"] == data + "/out"], [("sys_write", 4096, 4096)] * 7,
      "only sys_write asked: dd's 7 writes")

# 3. both layers: every syscall on the program's files nests under the POSIX call
script = os.path.join(dctest.workdir("sys-both-script"), "both.lua")
with open(script, "w") as f:
    f.write('local dc = require "datacrumbs"\ndc.probe "posix"\ndc.probe "syscalls"\n')
data, r, events = traced("both", script, [os.environ["PROG_IO"], "DATA"])
equal(r.returncode, 7, "prog_io exit status")
byid = {(e["pid"], e["id"]): e for e in dctest.calls(events, "POSIX")}
posix_of = {"write": "sys_write", "pwrite": "sys_pwrite64", "read": "sys_read",
            "pread": "sys_pread64", "close": "sys_close", "fsync": "sys_fsync",
            "lseek": "sys_lseek", "unlink": "sys_unlink", "open": "sys_openat",
            "fstatat": "sys_newfstatat", "chdir": "sys_chdir"}
sys_on_data = on(events, data, "SYSCALL")
check(len(sys_on_data) >= 30, "syscalls on data/: %d" % len(sys_on_data))
for e in sys_on_data:
    parent = byid.get((e["pid"], e["args"]["p_idx"]))
    ok = parent is not None and posix_of.get(parent["name"]) == e["name"] \
        and e["args"]["level"] == parent["args"]["level"] + 1 \
        and parent["ts"] <= e["ts"] and e["ts"] + e["dur"] <= parent["ts"] + parent["dur"] + dctest.US_ROUNDING
    check(ok, "%s (id %d) nests under its POSIX call: parent %r" % (
        e["name"], e["id"], parent and (parent["name"], parent["args"]["level"])))
# one syscall per POSIX data call, with the same bytes
pw = [e for e in on(events, data, "POSIX") if e["name"] == "pwrite"]
spw = [e for e in sys_on_data if e["name"] == "sys_pwrite64"]
equal([(e["args"]["count"], e["args"]["offset"], e["args"]["ret"]) for e in spw],
      [(e["args"]["count"], e["args"]["offset"], e["args"]["ret"]) for e in pw],
      "sys_pwrite64 mirrors pwrite")
failed = [e for e in sys_on_data if e["name"] == "sys_openat" and e["args"]["ret"] == -1]
equal([(os.path.relpath(e["path"], data), e["args"]["errno"]) for e in failed],
      [("missing/nothere", ENOENT)], "the failing open's syscall carries errno")
dctest.finish()
