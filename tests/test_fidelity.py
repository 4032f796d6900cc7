"""test_fidelity.py: every byte on the right file (issue 13). Bytes moved (from ret) beside
bytes asked, equal in trace and profile mode and to the file's size: reads at end of file
(dd) and SQLite (python3's sqlite3 module, VACUUM INTO a new database file). Calls on two
names (rename, renameat, link, linkat, symlink, symlinkat: tests/progs/prog_links.c) name
both, in the POSIX and SYSCALL layers, and a file written through a hard link has one
name in trace and profile mode. Pipes and sockets are named as the kernel names them
(pipe:[N], socket:[N]) in both modes, also their close, and the same when libbpf
relocates against the kernel's whole BTF (DATACRUMBS_CORE_BTF=kernel); tar -x's writes name their files.
MPI-IO writes with MPI_STATUS_IGNORE (tests/progs/prog_mpi_ignore.c, Debian's Open MPI,
2 ranks, io_all.lua) move their count: the file's MPI-IO bytes equal its nested pwrites'
and its size, in both modes. A program's stdout writes through printf, vprintf, puts,
putchar, fputs, putc and dprintf (tests/progs/prog_stdout.c) are STDIO events on the file
stdout is, whose bytes moved are the file's size in both modes, as are its nested writes'.
msync names the file its address's mapping was made from (tests/progs/prog_msync.c),
after the fd's close and a partial munmap, in the POSIX and SYSCALL layers and in
profile mode. fscanf's bytes are its nested reads' (tests/progs/prog_fscanf.c, io_all.lua):
the file's size."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
import dctest  # noqa: E402
from dctest import check, equal  # noqa: E402
from datacrumbs import analysis  # noqa: E402

dctest.need_root()

FILE_SIZE = 204800   # 50 pages
BS = 5000            # dd's read size: 40 full reads, one of 4800 bytes, one at EOF (0)
SQLITE_ROWS = 200


def traced(name, mode, cmd, script="io_posix.lua"):
    """Runs cmd under datacrumbs in mode ("trace" or "profile"); returns the Trace."""
    d = dctest.workdir("fidelity-%s-%s" % (name, mode))
    out = os.path.join(d, "t.pfw.gz")
    opts = ["--mode", "profile", "--interval", "10s"] if mode == "profile" else []
    r = dctest.run_dc(["run", "-o", out] + opts + [script, "--"] + cmd)
    equal(r.returncode, 0, "%s %s: exit status (stderr: %s)" % (name, mode, r.stderr.strip()))
    dctest.check_pfw(out)
    return analysis.Trace(out)


def per_file(t, path):
    """{function: [calls, bytes asked, bytes moved]} of the calls on path (complete
    events and counters alike)."""
    out = {}
    for e in t.events:
        a = e.get("args") or {}
        if e.get("cat") != "POSIX" or t.file(a) != path:
            continue
        c = out.setdefault(e["name"], [0, 0, 0])
        if e["ph"] == "C":
            c[0] += a["count"]
            c[1] += a.get("size_sum", 0)
            c[2] += analysis.counter_bytes(a)
        else:
            c[0] += 1
            c[1] += a.get("count", 0)
            c[2] += analysis.moved_bytes(a, e["name"])
    return out


def io_only(totals):
    return {k: v for k, v in totals.items() if k in ("read", "pread", "write", "pwrite")}


# 1. reads at end of file: 42 reads of 5000 bytes asked, 204,800 moved, in both modes
d = dctest.workdir("fidelity-data")
src = os.path.join(d, "f.bin")
with open(src, "wb") as f:
    f.write(bytes(range(256)) * (FILE_SIZE // 256))
nreads = FILE_SIZE // BS + 2
for mode in ("trace", "profile"):
    t = traced("eof", mode, ["dd", "if=" + src, "of=/dev/null", "bs=%d" % BS, "status=none"])
    equal(io_only(per_file(t, src)), {"read": [nreads, nreads * BS, FILE_SIZE]},
          "%s mode: dd's reads of %s (calls, bytes asked, bytes moved)" % (mode, src))
    if mode == "profile":
        c = [e for e in t.events if e["ph"] == "C" and t.file(e["args"]) == src
             and e["name"] == "read"]
        equal([(e["args"]["size_sum"], e["args"]["moved_sum"]) for e in c],
              [(nreads * BS, FILE_SIZE)], "profile mode: the counter's size_sum and moved_sum")

# 2. SQLite: a database of 200 rows copied by VACUUM INTO: its pages written once each (the
# new file's size), its reads of the new file at end of file (asked, 0 moved); every
# figure equal in both modes, also the source database's reads
db = os.path.join(d, "src.db")
prog = os.path.join(d, "sq.py")
with open(prog, "w") as f:
    f.write("""import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
if sys.argv[2] == "make":
    db.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB)")
    db.executemany("INSERT INTO t VALUES (?, ?)", ((i, bytes(1000)) for i in range(%d)))
    db.commit()
else:
    db.execute("VACUUM INTO ?", (sys.argv[2],))
""" % SQLITE_ROWS)
import subprocess  # noqa: E402
subprocess.run([sys.executable, prog, db, "make"], check=True)
got = {}
for mode in ("trace", "profile"):
    new = os.path.join(d, "copy-%s.db" % mode)
    t = traced("sqlite", mode, [sys.executable, prog, db, new])
    size = os.path.getsize(new)
    check(size >= SQLITE_ROWS * 1000, "%s: the copy holds the rows: %d bytes" % (mode, size))
    nw = io_only(per_file(t, new))
    equal(nw.get("pwrite", [0, 0, 0])[1:], [size, size],
          "%s mode: bytes asked and moved by the pwrites of %s = its size" % (mode, new))
    check(nw.get("pread", [0, 0, 0])[1] > 0 and nw["pread"][2] == 0,
          "%s mode: the reads of the new file are at its end: asked > 0, moved 0: %r"
          % (mode, nw.get("pread")))
    got[mode] = (nw, io_only(per_file(t, db)))
    check(got[mode][1].get("pread", [0, 0, 0])[2] >= os.path.getsize(db),
          "%s mode: the source's pages are read: %r" % (mode, got[mode][1]))
equal(got["profile"], got["trace"], "SQLite: calls, bytes asked and moved per function on "
      "both files, profile mode vs trace mode")

# 3. calls on two names: fhash the first, fhash2 the second (the link's directory for a
# symlink's relative target); a hard link's writes and reads name the file as first opened
prog = os.environ.get("PROG_LINKS", "build/tests/prog_links")
for layer, script, prefix in (("POSIX", "io_posix.lua", ""), ("SYSCALL", "io_syscalls.lua", "sys_")):
    d = dctest.workdir("fidelity-links-%s" % layer)
    t = traced("links-" + layer, "trace", [prog, d], script)
    two = {e["name"]: (t.file(e["args"]), t.files.get(e["args"].get("fhash2")), e["args"].get("ret"))
           for e in t.events if e["ph"] == "X" and e["cat"] == layer and
           e["name"] in [prefix + n for n in ("rename", "renameat", "link", "linkat", "symlink",
                                                "symlinkat")]}
    j = lambda *p: os.path.join(d, *p)  # noqa: E731
    equal(two, {prefix + "link": (j("a"), j("b"), 0), prefix + "rename": (j("b"), j("c"), 0),
                prefix + "renameat": (j("c"), j("sub", "d"), 0),
                prefix + "symlink": (j("sub", "s"), j("a"), 0),
                prefix + "symlinkat": (j("sub", "t"), j("a"), 0),
                prefix + "linkat": (j("a"), j("sub", "e"), 0)},
          "%s: (fhash, fhash2, ret) of each call on two names" % layer)
    rw = io_only(per_file(t, j("a"))) if layer == "POSIX" else None
    if layer == "POSIX":
        equal(rw, {"write": [2, 300, 300], "read": [1, 300, 300]},
              "trace mode: the writes through a and its hard link b, the read through sub/e, "
              "all on a")
        equal(io_only(per_file(t, j("b"))), {}, "trace mode: nothing named b")
        opens = [(e["args"].get("pathname"), t.file(e["args"])) for e in t.events
                 if e["ph"] == "X" and e["name"] == "openat" and e["args"].get("pathname") in ("b", "sub/e")]
        equal(opens, [("b", j("a")), ("sub/e", j("a"))], "the opens of the hard links: the "
              "name given as pathname, the file as first opened")
        d = dctest.workdir("fidelity-links-profile")
        t = traced("links", "profile", [prog, d], script)
        equal(io_only(per_file(t, os.path.join(d, "a"))), rw,
              "profile mode: the same calls and bytes on a as trace mode")

# 4. pipes and sockets: named by the inode BPF reads at the call's entry (the program
# prints the inodes, as fstat(2) gives them)
d = dctest.workdir("fidelity-pipes")
prog = os.path.join(d, "ps.py")
with open(prog, "w") as f:
    f.write("""import os, socket, sys
r, w = os.pipe()
a, b = socket.socketpair()
print(os.fstat(r).st_ino, a.fileno(), os.fstat(a.fileno()).st_ino,
      b.fileno(), os.fstat(b.fileno()).st_ino, flush=True)
assert os.write(w, b"x" * 100) == 100 and len(os.read(r, 4096)) == 100
assert os.write(a.fileno(), b"y" * 50) == 50 and len(os.read(b.fileno(), 4096)) == 50
os.close(w)
os.close(r)
a.close()
b.close()
""")
# "kernel-btf": trace mode with libbpf relocating against the kernel's whole BTF
# (DATACRUMBS_CORE_BTF=kernel) instead of each object's small CO-RE target
# (core/corebtf.h): the fd walk's fields (f_inode, i_ino, i_sb, s_magic) the same
for mode in ("trace", "profile", "kernel-btf"):
    dd = dctest.workdir("fidelity-pipes-" + mode)
    out = os.path.join(dd, "t.pfw.gz")
    opts = ["--mode", "profile", "--interval", "10s"] if mode == "profile" else []
    env = dict(os.environ, DATACRUMBS_CORE_BTF="kernel") if mode == "kernel-btf" else None
    r = dctest.run_dc(["run", "-o", out] + opts + ["io_posix.lua", "--", sys.executable, prog],
                      env=env)
    equal(r.returncode, 0, "pipes %s: exit status (stderr: %s)" % (mode, r.stderr.strip()))
    dctest.check_pfw(out)
    t = analysis.Trace(out)
    pino, afd, aino, bfd, bino = (int(x) for x in r.stdout.split())
    pipe, sa, sb = "pipe:[%d]" % pino, "socket:[%d]" % aino, "socket:[%d]" % bino
    got = {}
    for path in (pipe, sa, sb):
        got[path] = io_only(per_file(t, path))
        got[path]["close"] = per_file(t, path).get("close", [0])[0]
    equal(got, {pipe: {"write": [1, 100, 100], "read": [1, 4096, 100], "close": 2},
                sa: {"write": [1, 50, 50], "close": 1}, sb: {"read": [1, 4096, 50], "close": 1}},
          "%s mode: the pipe's and the sockets' calls by name (calls, asked, moved; closes)" % mode)

# 5. tar -x: the files it writes (glibc's internal opens among them) are named
d = dctest.workdir("fidelity-tar")
src = os.path.join(d, "src")
os.makedirs(src)
with open(os.path.join(src, "f1"), "wb") as f:
    f.write(b"z" * 10000)
subprocess.run(["tar", "-C", d, "-cf", os.path.join(d, "a.tar"), "src"], check=True)
subprocess.run(["rm", "-rf", src], check=True)
t = traced("tar", "trace", ["tar", "-C", d, "-xf", os.path.join(d, "a.tar")])
equal(io_only(per_file(t, os.path.join(src, "f1"))).get("write", [0, 0, 0])[1:], [10000, 10000],
      "tar -x: bytes asked and moved by the writes of src/f1")
unnamed = [e for e in t.events if e["ph"] == "X" and e["name"] in ("read", "write")
           and not e["args"].get("fhash")]
equal(unnamed, [], "tar -x: every read and write names its file")

# 6. MPI-IO with MPI_STATUS_IGNORE: bytes moved from the count and MPI_SUCCESS
import shutil  # noqa: E402
if not shutil.which("mpicc.openmpi"):
    check(False, "mpicc.openmpi is not installed (scripts/setup.sh installs it)")
else:
    d = dctest.workdir("fidelity-mpi")
    prog = os.path.join(d, "prog_mpi_ignore")
    subprocess.run(["mpicc.openmpi", "-std=c99", "-O2", "-o", prog,
                    os.path.join(os.path.dirname(__file__), "progs", "prog_mpi_ignore.c")],
                   check=True)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_pml="ob1", OMPI_MCA_btl="self,vader")
    for mode in ("trace", "profile"):
        target = os.path.join(d, "%s.dat" % mode)
        out = os.path.join(d, "%s.pfw.gz" % mode)
        opts = ["--mode", "profile", "--interval", "10s"] if mode == "profile" else []
        r = dctest.run_dc(["run", "-o", out] + opts + ["io_all.lua", "--", "mpirun.openmpi",
                           "--oversubscribe", "-n", "2", prog, target], env=env)
        equal(r.returncode, 0, "MPI %s: exit status (stderr: %s)" % (mode, r.stderr.strip()))
        check("prog_mpi_ignore: 2 ranks" in r.stdout, "the program ran: %r" % r.stdout)
        dctest.check_pfw(out)
        t = analysis.Trace(out)
        size = os.path.getsize(target)
        equal(size, 2 * 12288, "the file's size")
        mpi, posix = {}, {}
        for e in t.events:
            a = e["args"]
            if t.file(a) != target or e["name"] not in ("pwrite", "MPI_File_write_at",
                                                         "MPI_File_write_at_all"):
                continue
            moved = analysis.counter_bytes(a) if e["ph"] == "C" else analysis.moved_bytes(a, e["name"])
            side = mpi if e["cat"] == "MPIIO" else posix
            side[e["name"]] = side.get(e["name"], 0) + moved
        equal(mpi, {"MPI_File_write_at": 2 * 4096, "MPI_File_write_at_all": 2 * 8192},
              "%s mode: bytes moved by the MPI-IO writes (MPI_STATUS_IGNORE)" % mode)
        equal(posix, {"pwrite": size}, "%s mode: bytes moved by the pwrites under them" % mode)
        if mode == "trace":
            by_id = {(e["pid"], e["id"]): e for e in t.events if e["ph"] == "X"}
            parents = sorted(by_id[(e["pid"], e["args"]["p_idx"])]["name"] for e in t.events
                             if e["ph"] == "X" and e["name"] == "pwrite" and t.file(e["args"]) == target)
            equal(parents, ["MPI_File_write_at"] * 2 + ["MPI_File_write_at_all"] * 2,
                  "each pwrite nested under its MPI-IO call")

# 7. stdout through the STDIO layer: every call's bytes, the file's size in both modes
prog = os.environ.get("PROG_STDOUT", "build/tests/prog_stdout")
WANT_STDOUT = {"printf": 6, "puts": 6, "putchar": 1, "fputs": 3, "vprintf": 5, "putc": 1,
               "fflush": 0, "dprintf": 3}
for mode in ("trace", "profile"):
    d = dctest.workdir("fidelity-stdout-" + mode)
    out, target = os.path.join(d, "t.pfw.gz"), os.path.join(d, "stdout.txt")
    opts = ["--mode", "profile", "--interval", "10s"] if mode == "profile" else []
    with open(target, "w") as so:
        r = subprocess.run([dctest.DATACRUMBS, "run", "-o", out] + opts + ["io_all.lua", "--", prog],
                           stdout=so, stderr=subprocess.PIPE, text=True, timeout=300)
    equal(r.returncode, 0, "stdout %s: exit status (stderr: %s)" % (mode, r.stderr.strip()))
    dctest.check_pfw(out)
    t = analysis.Trace(out)
    size = os.path.getsize(target)
    equal(size, 25, "the program's stdout")
    got, posix = {}, 0
    for e in t.events:
        a = e["args"]
        if t.file(a) != target:
            continue
        moved = analysis.counter_bytes(a) if e["ph"] == "C" else analysis.moved_bytes(a, e["name"])
        if e["cat"] == "STDIO":
            got[e["name"]] = got.get(e["name"], 0) + moved
        elif e["cat"] == "POSIX" and e["name"] == "write":
            posix += moved
    equal(got, WANT_STDOUT, "%s mode: bytes moved by each STDIO call on stdout" % mode)
    equal(sum(got.values()), size, "%s mode: the STDIO calls' bytes are the file's size" % mode)
    equal(posix, size, "%s mode: the writes under them move the same bytes" % mode)

# 8. msync: the file the mmap that made the mapping mapped
prog = os.environ.get("PROG_MSYNC", "build/tests/prog_msync")
for layer, script, prefix, mode in (("POSIX", "io_posix.lua", "", "trace"),
                                    ("SYSCALL", "io_syscalls.lua", "sys_", "trace"),
                                    ("POSIX", "io_posix.lua", "", "profile")):
    d = dctest.workdir("fidelity-msync-%s-%s" % (layer, mode))
    target = os.path.join(d, "m.dat")
    t = traced("msync-" + layer, mode, [prog, target], script)
    calls = {}
    for e in t.events:
        if e["cat"] == layer and e["name"] in (prefix + "mmap", prefix + "msync", prefix + "munmap"):
            k = (e["name"], t.file(e["args"]))
            calls[k] = calls.get(k, 0) + (e["args"]["count"] if e["ph"] == "C" else 1)
    calls = {k: v for k, v in calls.items()  # the loader's maps are not the program's
             if k[0] == prefix + "msync" or k[1] == target}
    equal(calls, {(prefix + "mmap", target): 1, (prefix + "msync", target): 3,
                  (prefix + "munmap", target): 2},
          "%s %s mode: the mmap, msync and munmap calls of the mapping, by file" % (layer, mode))

# 9. fscanf: ret is items; its bytes are those the reads nested in it moved
prog = os.environ.get("PROG_FSCANF", "build/tests/prog_fscanf")
d = dctest.workdir("fidelity-fscanf")
target = os.path.join(d, "n.txt")
t = traced("fscanf", "trace", [prog, target], "io_all.lua")
size = os.path.getsize(target)
equal(size, 48890, "the numbers' file")
got = {}
for e in t.events:
    a = e["args"]
    if e["ph"] == "X" and t.file(a) == target and e["name"] in ("__isoc99_fscanf", "fscanf", "read"):
        c = got.setdefault((e["cat"], e["name"]), [0, 0])
        c[0] += 1
        c[1] += analysis.moved_bytes(a, e["name"])
equal({k: v[1] for k, v in got.items()}, {("STDIO", "__isoc99_fscanf"): size, ("POSIX", "read"): size},
      "fscanf's bytes (from its nested reads) and the reads' own: the file's size")
equal(got.get(("STDIO", "__isoc99_fscanf"), [0])[0], 10001, "10,001 fscanf calls")

dctest.finish()
