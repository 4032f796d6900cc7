"""test_real.py: real programs (dd, cp, tar, gzip, sqlite3) traced with io_posix.lua.

On each program's own files, the trace must hold exactly the calls strace(1) sees in a
separate run of the same deterministic command: the same calls in the same order with the
same fd, count, offset, flags, mode and return value; per-file byte totals must also equal
the file sizes. Every trace passes check_pfw.py.

Why trace and strace can be compared call for call here (glibc 2.36, x86_64): the POSIX
layer's system-call wrappers are served by the raw_syscalls tracepoints (one event per
system call, named after the libc function: openat, pread, fstatat = newfstatat, ...), so
what the trace holds is what strace sees, stat family included (glibc's fstat and stat
are one newfstatat each, one event each). The comparison is restricted to the programs'
own data files (a directory created for this test): the locale, NSS and library files
the two runs open depend on the machine. The commands are deterministic (fixed input
bytes, gzip -n, fixed SQL, same environment and working directory), so the two runs make
the same calls with the same fd numbers.
A tool missing from the machine is a FAILURE, not a skip: install its Debian package."""
import json
import os
import random
import re
import shlex
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import dctest  # noqa: E402
from dctest import check, equal  # noqa: E402

dctest.need_root()
# the commands run in their own directories: datacrumbs' path must not depend on ours
dctest.DATACRUMBS = os.path.abspath(dctest.DATACRUMBS)

# Debian package of each tool the test needs
TOOLS = {"strace": "strace", "dd": "coreutils", "cp": "coreutils", "tar": "tar",
         "gzip": "gzip", "sqlite3": "sqlite3", "h5import": "hdf5-tools",
         "h5repack": "hdf5-tools", "fio": "fio"}
missing = ["%s (package %s)" % (t, p) for t, p in TOOLS.items() if not shutil.which(t)]
if missing:
    print("FAIL: %s: tools missing: %s; install them, this test does not skip"
          % (os.path.basename(sys.argv[0]), ", ".join(missing)), flush=True)
    sys.exit(1)

# the system calls strace watches, and the libc functions of the trace that make them
SYSCALLS = ["read", "write", "pread64", "pwrite64", "open", "openat", "creat", "close",
            "lseek", "copy_file_range", "fsync", "fdatasync", "ftruncate", "unlink",
            "unlinkat", "newfstatat"]
LIBC_TO_SYSCALL = {
    "read": "read", "__read_nocancel": "read",
    "write": "write", "__write_nocancel": "write",
    "pread": "pread64", "pread64": "pread64", "__pread64_nocancel": "pread64",
    "pwrite": "pwrite64", "pwrite64": "pwrite64",
    "open": "openat", "open64": "openat", "openat": "openat", "openat64": "openat",
    "__open_nocancel": "openat", "__open64_nocancel": "openat",
    "creat": "creat", "creat64": "creat",
    "close": "close", "__close_nocancel": "close",
    "lseek": "lseek", "lseek64": "lseek",
    "copy_file_range": "copy_file_range",
    "fsync": "fsync", "fdatasync": "fdatasync",
    "ftruncate": "ftruncate", "ftruncate64": "ftruncate",
    "unlink": "unlink", "unlinkat": "unlinkat",
    "fstatat": "newfstatat",
}
MOVES_BYTES = ("read", "write", "pread64", "pwrite64", "copy_file_range")
AT_FLAGS = {"AT_SYMLINK_NOFOLLOW": 0x100, "AT_NO_AUTOMOUNT": 0x800, "AT_EMPTY_PATH": 0x1000}
WHENCE = {"SEEK_SET": 0, "SEEK_CUR": 1, "SEEK_END": 2, "SEEK_DATA": 3, "SEEK_HOLE": 4}


# --- strace's side ------------------------------------------------------------------
def parse_flags(s):
    """O_WRONLY|O_CREAT|O_TRUNC -> int; a name strace knows but Python does not fails."""
    v = 0
    for part in s.split("|"):
        if part.startswith("0x"):
            v |= int(part, 16)  # bits strace has no name for
        elif part.isdigit():
            v |= int(part, 8 if part.startswith("0") else 10)
        else:
            v |= getattr(os, part)
    return v


def parse_fd(s):
    """'3</a/path>' -> (3, '/a/path'); 'AT_FDCWD</cwd>' -> (-100, '/cwd')."""
    m = re.fullmatch(r"(AT_FDCWD|-?\d+)(?:<(.*)>)?", s)
    if not m:
        raise ValueError("not an fd: %r" % s)
    return (-100 if m.group(1) == "AT_FDCWD" else int(m.group(1))), m.group(2)


def unquote(s):
    if not (s.startswith('"') and s.endswith('"')):
        raise ValueError("not a plain path string: %r" % s)
    return s[1:-1]


def resolve(base, path):
    return os.path.normpath(path if path.startswith("/") else os.path.join(base, path))


CALL = re.compile(r"(\w+)\((.*)\)\s+=\s+(-?\d+)(?:<(.*?)>)?(?:\s.*)?$")


def strace_calls(log):
    """Parses an `strace -f -y -s 0` log into [(path, call tuple)] in log order."""
    out, pending = [], {}
    for line in open(log):
        pid, _, rest = line.rstrip("\n").partition(" ")
        rest = rest.strip()
        if rest.endswith("<unfinished ...>"):
            pending[pid] = rest[:-len("<unfinished ...>")].rstrip()
            continue
        m = re.match(r"<\.\.\. \w+ resumed>(.*)", rest)
        if m:  # the arguments were cut after a comma: "read(3<pipe:[7]>," + " 0x7f.., 8)"
            head, tail = pending.pop(pid), m.group(1).lstrip()
            rest = head + (" " if head.endswith(",") else "") + tail
        m = CALL.match(rest)
        if not m or m.group(1) not in SYSCALLS:
            continue  # exits, signals, unknown syscalls (other tracers' uretprobe trap)
        name, a, ret, retpath = m.group(1), m.group(2).split(", "), int(m.group(3)), m.group(4)
        if name in ("read", "write"):
            fd, path = parse_fd(a[0])
            t = (name, fd, int(a[2]), ret)
        elif name in ("pread64", "pwrite64"):
            fd, path = parse_fd(a[0])
            t = (name, fd, int(a[2]), int(a[3]), ret)
        elif name in ("openat", "open"):
            if name == "open":
                a = ["AT_FDCWD<%s>" % os.getcwd()] + a
            _, base = parse_fd(a[0])
            flags = parse_flags(a[2])
            path = retpath if ret >= 0 and retpath else resolve(base, unquote(a[1]))
            t = ("openat", flags, int(a[3], 8) if len(a) > 3 else None, ret)
        elif name == "creat":
            path = retpath if ret >= 0 and retpath else resolve(os.getcwd(), unquote(a[0]))
            t = (name, int(a[1], 8), ret)
        elif name in ("close", "fsync", "fdatasync"):
            fd, path = parse_fd(a[0])
            t = (name, fd, ret)
        elif name == "lseek":
            fd, path = parse_fd(a[0])
            t = (name, fd, int(a[1]), WHENCE[a[2]], ret)
        elif name == "ftruncate":
            fd, path = parse_fd(a[0])
            t = (name, fd, int(a[1]), ret)
        elif name == "copy_file_range":
            fd_in, path = parse_fd(a[0])
            t = (name, fd_in, parse_fd(a[2])[0], int(a[4]), ret)
        elif name == "unlink":
            path = resolve(os.getcwd(), unquote(a[0]))
            t = (name, ret)
        elif name == "newfstatat":  # (dirfd, "path", {struct, with commas}, flags)
            fd, base = parse_fd(a[0])
            path = base if a[1] == '""' else resolve(base, unquote(a[1]))
            t = (name, fd, sum(AT_FLAGS[f] for f in a[-1].split("|")) if a[-1] != "0" else 0,
                 ret)
        else:  # unlinkat
            _, base = parse_fd(a[0])
            path = resolve(base, unquote(a[1]))
            t = (name, ret)
        out.append((path, t))
    return out


# --- the trace's side ---------------------------------------------------------------
def trace_calls(events):
    """The trace's POSIX events as [(path, call tuple)], tuples shaped as strace_calls'."""
    out = []
    for e in dctest.calls(events):
        name = LIBC_TO_SYSCALL.get(e["name"])
        if name is None:
            continue
        a = e["args"]
        if name in ("read", "write"):
            t = (name, a["fd"], a["count"], a["ret"])
        elif name in ("pread64", "pwrite64"):
            t = (name, a["fd"], a["count"], a["offset"], a["ret"])
        elif name == "openat":
            t = (name, a["flags"], a.get("mode"), a["ret"])
        elif name == "creat":
            t = (name, a["mode"], a["ret"])
        elif name in ("close", "fsync", "fdatasync"):
            t = (name, a["fd"], a["ret"])
        elif name == "lseek":
            t = (name, a["fd"], a["offset"], a["whence"], a["ret"])
        elif name == "ftruncate":
            t = (name, a["fd"], a["size"], a["ret"])
        elif name == "copy_file_range":
            t = (name, a["fd_in"], a["fd_out"], a["count"], a["ret"])
        elif name == "newfstatat":
            t = (name, a["dirfd"], a["flags"], a["ret"])
        else:
            t = (name, a["ret"])
        out.append((e["path"], t))
    return out


def per_file(calls, keep):
    """{path: [call tuples in order]} for the paths keep(path) accepts."""
    d = {}
    for path, t in calls:
        if path and keep(path):
            d.setdefault(path, []).append(t)
    return d


def totals(seq):
    """{syscall: [calls, bytes]} of one file's calls (bytes: positive returns that move data)."""
    t = {}
    for c in seq:
        s = t.setdefault(c[0], [0, 0])
        s[0] += 1
        if c[0] in MOVES_BYTES and c[-1] > 0:
            s[1] += c[-1]
    return t


def compare(what, got, want):
    """Trace vs strace, file by file, call by call; prints the first difference."""
    equal(sorted(got), sorted(want), "%s: files touched (trace vs strace)" % what)
    for path in sorted(set(got) & set(want)):
        g, w = got[path], want[path]
        equal(totals(g), totals(w), "%s: %s: calls and bytes per syscall (trace vs strace)"
              % (what, path))
        if g != w:
            i = next((i for i, (x, y) in enumerate(zip(g, w)) if x != y), min(len(g), len(w)))
            check(False, "%s: %s: call %d differs (of %d in the trace, %d in strace):\n"
                  "  trace:  %r\n  strace: %r" % (what, path, i, len(g), len(w),
                                                  g[i] if i < len(g) else None,
                                                  w[i] if i < len(w) else None))
        else:
            check(True, "")


def strace_run(name, cmd, keep, cwd):
    """Runs cmd under strace in cwd; returns strace's calls per kept file."""
    log = os.path.join(dctest.workdir(name), "strace.log")
    r = subprocess.run(["strace", "-f", "-y", "-s", "0", "-o", log,
                        "-e", "trace=" + ",".join(SYSCALLS)] + cmd,
                       cwd=cwd, capture_output=True, text=True, timeout=300)
    equal(r.returncode, 0, "%s: the command under strace (stderr: %s)" % (name, r.stderr))
    # relative paths of failed opens are resolved against the command's cwd
    here = os.getcwd()
    os.chdir(cwd)
    try:
        return per_file(strace_calls(log), keep)
    finally:
        os.chdir(here)


def trace_of(name, d, cmd, keep, cwd):
    """Runs cmd under datacrumbs io_posix.lua in cwd, the trace in d/trace; checks the trace
    (check_pfw.py, nothing lost); returns its events, metadata and calls per kept file."""
    tdir = os.path.join(d, "trace")
    os.makedirs(tdir)
    r = dctest.run_dc(["run", "-o", tdir, "io_posix.lua", "--"] + cmd, cwd=cwd)
    equal(r.returncode, 0, "%s: datacrumbs exit status (stderr: %s)" % (name, r.stderr.strip()))
    trace = dctest.find_trace(tdir)
    dctest.check_pfw(trace)
    events, _, meta = dctest.read_trace(trace)
    own = [e for e in events if e.get("cat") == "datacrumbs"]
    end = own[-1]["args"] if own and own[-1]["name"] == "end" else {}
    equal(end.get("lost"), 0, "%s: end record: lost" % name)
    check(" 0 lost" in r.stderr, "%s: summary line says 0 lost: %r" % (name, r.stderr))
    return events, meta, per_file(trace_calls(events), keep)


def size(p):
    return os.stat(p).st_size


def sum_bytes(seq, names):
    return sum(c[-1] for c in seq if c[0] in names and c[-1] > 0)


# --- 1. dd: 100 x 64 KiB from /dev/zero ---------------------------------------------
d = dctest.workdir("real-dd")
OUT = os.path.join(d, "zero.bin")
DD = ["dd", "if=/dev/zero", "of=" + OUT, "bs=64k", "count=100"]


def keep_dd(p):
    return p in (OUT, "/dev/zero")


want = strace_run("real-dd-strace", DD, keep_dd, d)
os.unlink(OUT)
events, meta, got = trace_of("dd", d, DD, keep_dd, d)
ev = dctest.calls(events)
reads = [e for e in ev if e["name"] == "read" and e["path"] == "/dev/zero"]
writes = [e for e in ev if e["name"] == "write" and e["path"] == OUT]
equal(len(reads), 100, "dd: reads on /dev/zero")
equal(sorted({(e["args"]["count"], e["args"]["ret"]) for e in reads}), [(65536, 65536)],
      "dd: (count, ret) of every read on /dev/zero")
equal(sum(e["args"]["ret"] for e in reads), 6553600, "dd: bytes read from /dev/zero")
equal(len(writes), 100, "dd: writes on %s" % OUT)
equal(sorted({(e["args"]["count"], e["args"]["ret"]) for e in writes}), [(65536, 65536)],
      "dd: (count, ret) of every write on the output")
equal(sum(e["args"]["ret"] for e in writes), 6553600, "dd: bytes written to the output")
equal(size(OUT), 6553600, "dd: output file size")
equal(sorted({e["path"] for e in ev if e["path"] and e["path"].endswith("/zero.bin")}), [OUT],
      "dd: the output's path, exact and absolute")
equal([e["name"] for e in ev if e["path"] == OUT and e["name"] not in ("write", "fstat",
                                                                       "fstatat")],
      ["openat", "dup2", "close", "close"], "dd: the other calls on the output")
compare("dd", got, want)

# --- 2. cp, tar, gzip, sqlite3 on files of known sizes -------------------------------
d = dctest.workdir("real-tools")
DATA = os.path.join(d, "data")
INPUTS = {"cp/src.bin": 50 * 1048576, "tar/in/a": 5000, "tar/in/b": 20000,
          "tar/in/c": 0, "tar/in/d": 123457}
SQL = ("PRAGMA page_size=4096; CREATE TABLE t(a INTEGER, b TEXT); "
       "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<2000) "
       "INSERT INTO t SELECT x, printf('row %05d', x) FROM c; CREATE INDEX ti ON t(b);")


def P(rel):
    return os.path.join(DATA, rel)


def prepare():
    """The same input files, byte for byte, before each run."""
    subprocess.run(["rm", "-rf", DATA], check=True)
    for sub in ("cp", "tar/in", "gz", "sq"):
        os.makedirs(P(sub))
    rnd = random.Random(20240601)
    for rel, n in INPUTS.items():
        with open(P(rel), "wb") as f:
            f.write(rnd.randbytes(n))
    with open(P("gz/f.txt"), "w") as f:
        f.write("".join("%d\n" % i for i in range(1, 50001)))


PROGRAMS = [
    ["cp", P("cp/src.bin"), P("cp/dst.bin")],
    ["tar", "cf", P("tar/out.tar"), "-C", P("tar/in"), "a", "b", "c", "d"],
    ["gzip", "-k", "-n", P("gz/f.txt")],
    ["sqlite3", P("sq/t.db"), SQL],
]
TOOLS_CMD = ["sh", "-c", "set -e; " + "; ".join(shlex.join(c) for c in PROGRAMS)]


def keep_tools(p):
    return p == DATA or p.startswith(DATA + "/")


prepare()
want = strace_run("real-tools-strace", TOOLS_CMD, keep_tools, d)
prepare()
events, meta, got = trace_of("tools", d, TOOLS_CMD, keep_tools, d)
compare("tools", got, want)

# which process touched which program's files: the one named after the program
names = {(m["pid"], m["args"]["name"]) for m in meta if m["name"] == "process_name"}
for prog, sub in (("cp", "cp/"), ("tar", "tar/"), ("gzip", "gz/"), ("sqlite3", "sq/")):
    pids = {e["pid"] for e in dctest.calls(events)
            if e["path"] and e["path"].startswith(P(sub)) and e["name"] in LIBC_TO_SYSCALL}
    equal([(p, prog) in names for p in sorted(pids)], [True],
          "%s: one process, named %s, did the calls on its files" % (prog, prog))

# totals against the file sizes
g = lambda rel: got.get(P(rel), [])  # noqa: E731
n = size(P("cp/src.bin"))
equal(n, INPUTS["cp/src.bin"], "cp: input size")
equal(size(P("cp/dst.bin")), n, "cp: output size")
equal(open(P("cp/dst.bin"), "rb").read() == open(P("cp/src.bin"), "rb").read(), True,
      "cp: output equals input")
equal(sum_bytes(g("cp/src.bin"), ("copy_file_range", "read")), n,
      "cp: bytes copied from the source (copy_file_range or read) = its size")
# copy_file_range names both files: fhash the source, fhash2 the destination; the bytes
# it moved are credited to both in the summary (read from one, written to the other)
fh = {m["args"]["value"]: m["args"]["name"] for m in meta if m["name"] == "FH"}
cfr = [(e["path"], fh.get(e["args"].get("fhash2")), e["args"]["ret"]) for e in dctest.calls(events)
       if e["name"] == "copy_file_range"]
check(cfr and {(a, b) for a, b, _ in cfr} == {(P("cp/src.bin"), P("cp/dst.bin"))},
      "cp: copy_file_range names its source (fhash) and destination (fhash2): %r" % cfr)
copied = sum(r for _, _, r in cfr if r > 0)
out = subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                   "..", "scripts", "pfw_summary.py"),
                      "--top", "1000", dctest.find_trace(os.path.join(d, "trace"))],
                     capture_output=True, text=True).stdout
sums = {m.group(1): int(m.group(2)) for m in
            re.finditer(r"^  (\S+)\s+\d+\s+(\d+)\s+\d+$", out, re.M)}
# (the table shows a long path by its end: "...s/data/cp/src.bin")
row = lambda rel: [b for f, b in sums.items() if f.endswith("/" + rel)]  # noqa: E731
equal((row("cp/src.bin"), row("cp/dst.bin")), ([n], [n]),
      "cp: pfw_summary's bytes of the source and of the destination = the file size "
      "(%d of them by copy_file_range)" % copied)
for rel in ("tar/in/a", "tar/in/b", "tar/in/d"):
    equal(sum_bytes(g(rel), ("read",)), INPUTS[rel], "tar: bytes read from %s = its size" % rel)
# the empty file is only looked at: fstatat(dirfd, "c", AT_SYMLINK_NOFOLLOW) twice (when
# tar walks the directory and when it archives the member), no open, no read
equal(g("tar/in/c"), [("newfstatat", 4, AT_FLAGS["AT_SYMLINK_NOFOLLOW"], 0)] * 2,
      "tar: no open/read of the empty file (it needs none), only its two fstatat")
equal(sum_bytes(g("tar/out.tar"), ("write",)), size(P("tar/out.tar")),
      "tar: bytes written to the archive = its size")
equal(sum_bytes(g("gz/f.txt"), ("read",)), size(P("gz/f.txt")), "gzip: bytes read = input size")
equal(sum_bytes(g("gz/f.txt.gz"), ("write",)), size(P("gz/f.txt.gz")),
      "gzip: bytes written = output size")
pw = [c for c in g("sq/t.db") if c[0] == "pwrite64"]
check(len(pw) > 10, "sqlite3: pwrites on the database: %d" % len(pw))
equal(max((c[3] + c[4] for c in pw), default=0), size(P("sq/t.db")),
      "sqlite3: highest byte written (offset + ret) = database size")
equal(os.path.exists(P("sq/t.db-journal")), False, "sqlite3: journal deleted")
jn = g("sq/t.db-journal")
equal(len([c for c in jn if c[0] == "openat"]), len([c for c in jn if c[0] == "unlink"]),
      "sqlite3: every journal opened is unlinked")

# --- 3. HDF5 (h5repack) and fio (psync engine) ----------------------------------------
d = dctest.workdir("real-hdf5")
A, O = os.path.join(d, "a.h5"), os.path.join(d, "o.h5")
with open(os.path.join(d, "in.bin"), "wb") as f:
    f.write(bytes(65536))
with open(os.path.join(d, "in.cfg"), "w") as f:  # 16384 little-endian int32 as /data
    f.write("PATH /data\nINPUT-CLASS IN\nINPUT-SIZE 32\nINPUT-BYTE-ORDER LE\nRANK 1\n"
            "DIMENSION-SIZES 16384\nOUTPUT-CLASS IN\nOUTPUT-SIZE 32\nOUTPUT-BYTE-ORDER LE\n")
subprocess.run(["h5import", "in.bin", "-c", "in.cfg", "-o", A], cwd=d, check=True)
H5 = ["h5repack", "-M", "512", A, O]  # -M 512: the dataset copied as one contiguous block


def keep_h5(p):
    return p in (A, O)


want = strace_run("real-hdf5-strace", H5, keep_h5, d)
os.unlink(O)
events, meta, got = trace_of("h5repack", d, H5, keep_h5, d)
compare("h5repack", got, want)
equal(max(c[3] + c[4] for c in got[O] if c[0] == "pwrite64"), size(O),
      "h5repack: highest byte written to the output (offset + ret) = its size")
equal(sum_bytes(got[O], ("pwrite64",)), sum_bytes(want[O], ("pwrite64",)),
      "h5repack: bytes written to the output (trace = strace)")
check(sum_bytes(got[A], ("pread64",)) >= size(A),
      "h5repack: reads the whole input (%d bytes of %d)" % (sum_bytes(got[A], ("pread64",)), size(A)))

d = dctest.workdir("real-fio")
D = os.path.join(d, "fio.dat")
FIO = ["fio", "--name=w", "--filename=" + D, "--size=4m", "--bs=64k", "--rw=write",
       "--ioengine=psync", "--output-format=json"]


def keep_fio(p):
    return p == D


want = strace_run("real-fio-strace", FIO, keep_fio, d)
os.unlink(D)
tdir = os.path.join(d, "trace")
os.makedirs(tdir)
r = dctest.run_dc(["run", "-o", tdir, "io_posix.lua", "--"] + FIO, cwd=d)
equal(r.returncode, 0, "fio: datacrumbs exit status (stderr: %s)" % r.stderr.strip())
trace = dctest.find_trace(tdir)
dctest.check_pfw(trace)
events, _, _ = dctest.read_trace(trace)
got = per_file(trace_calls(events), keep_fio)
compare("fio", got, want)
report = json.loads(r.stdout[r.stdout.index("{"):])["jobs"][0]["write"]
pw = [c for c in got.get(D, []) if c[0] == "pwrite64"]
equal((len(pw), sum(c[-1] for c in pw)), (report["total_ios"], report["io_bytes"]),
      "fio: pwrite calls and bytes in the trace = fio's own report")
equal(sorted(c[3] for c in pw), [k * 65536 for k in range(64)], "fio: the 64 offsets")
equal(report["io_bytes"], size(D), "fio: bytes written = the file's size")

# the figures, for the log
for path in sorted(got):
    print("  %-40s %s" % (os.path.relpath(path, DATA),
                          " ".join("%s=%d/%dB" % (k, v[0], v[1])
                                   for k, v in sorted(totals(got[path]).items()))))
dctest.finish()
