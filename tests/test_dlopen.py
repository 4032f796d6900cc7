"""test_dlopen.py: probes follow dlopen. A library the command does not load at start,
named by soname (dc.uprobe file=, a layer's library), is attached when a traced process
loads it, before any of its code runs (its constructor's call is traced), once per file
(a dlclose and a second dlopen give their calls once more, never twice); an untraced
process loading the same library meanwhile is not seized, not held and not traced; without
CAP_SYS_PTRACE the library is attached late, with a warning; a library with nothing to
probe lets the program go on, with a warning naming it. Then the Python cases of issue 13:
h5py writing a dataset (its H5Dwrite calls, each with its one pwrite nested, at the
offsets HDF5 reports) and mpi4py doing MPI-IO on 2 Open MPI ranks under io_all.lua (exact
MPI-IO events per rank, "Rank N", the POSIX calls nested), each against the program's own
figures and the file's size."""
import os
import re
import shutil
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import dctest  # noqa: E402
from dctest import check, equal  # noqa: E402

dctest.need_root()
DC = dctest.DATACRUMBS
PROG = os.environ["PROG_DLOPEN"]
LIB = os.path.realpath(os.environ["LIB_DLTEST"])
SAFETY = 300  # seconds: a hung run fails the test instead of blocking ctest
PY = "/usr/bin/python3"  # Debian's, whose dist-packages hold python3-h5py and python3-mpi4py
DLT = """local dc = require "datacrumbs"
dc.uprobe { file = "libdltest.so", functions = { %s }, args = { "long x" }, layer = "DLT" }
"""
# io_all.lua's probes (scripts/io_all.lua), and H5Dwrite of the HDF5 library h5py loads
IO_ALL_HDF5 = """local dc = require "datacrumbs"
dc.probe { layer = "mpiio" }
dc.probe { layer = "stdio" }
dc.probe { layer = "posix" }
dc.probe { layer = "ldso" }
dc.probe { layer = "aio" }
dc.drop_paths { "/proc/", "/sys/" }
dc.uprobe { file = "libhdf5_serial.so", functions = { "H5Dwrite" }, layer = "HDF5" }
"""


def write(path, text, mode=0o644):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)
    return path


def dlt_calls(trace):
    events, _, _ = dctest.read_trace(trace)
    return [(e["pid"], e["args"].get("x"), e["args"].get("ret")) for e in dctest.calls(events, "DLT")]


def attached_lines(err, lib):
    return [ln for ln in err.splitlines()
            if re.search(r"loaded %s: layer \S+ attached \(\d+ functions\) before any of its "
                         r"code ran$" % re.escape(lib), ln)]


# 1. held at dlopen: the constructor's call is traced; dlclose and reload; an untraced
#    process loading the same library meanwhile is left alone ----------------------------
d = dctest.workdir("dlopen")
s = write(os.path.join(d, "dlt.lua"), DLT % '"dlt_fn"')
t1 = os.path.join(d, "t1.pfw.gz")
p = subprocess.Popen([DC, "run", "-o", t1, s, "--", PROG, LIB, "wait"], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
equal(p.stdout.readline(), "loaded %d\n" % p.pid,
      "held: the traced process is seized by datacrumbs (its TracerPid)")
u = subprocess.Popen([PROG, LIB], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
uout, uerr = u.communicate(timeout=SAFETY)
equal((u.returncode, uout), (0, "loaded 0\nret 10 20\n"),
      "untraced process loading the library meanwhile: not seized (TracerPid 0), not held, "
      "results right (%s)" % uerr)
p.stdin.write("go\n")
p.stdin.close()
out = p.stdout.read()
err = p.stderr.read()
p.wait(timeout=SAFETY)
equal((p.returncode, out), (0, "ret 10 20\n"), "held: exit status and output (%s)" % err)
dctest.check_pfw(t1)
calls = dlt_calls(t1)
# the constructor's dlt_fn(-1) ran inside dlopen, before any code after it: traced only
# because the probe was attached while the thread was held
equal([(x, r) for _, x, r in calls], [(-1, -10), (1, 10), (-1, -10), (2, 20)],
      "held: every call of both loads once, the constructors' too")
equal(len({pid for pid, _, _ in calls}), 1, "held: the calls are of the one traced process")
check(u.pid not in {pid for pid, _, _ in calls}, "untraced process: no event of it")
equal(len(attached_lines(err, LIB)), 1, "held: one attach for the file, said once: %r" % err)
check("warning" not in err, "held: no warning: %r" % err)
check(re.search(r"does not load libdltest\.so at start: its functions are probed in the "
                r"traced processes that load it \(dlopen\)", err), "held: the start note: %r" % err)

# check: a script whose library is loaded at run time is fine, and says when it is probed
r = dctest.run_dc(["check", s, "--", PROG, LIB], timeout=SAFETY)
equal(r.returncode, 0, "check: exit status (%s)" % r.stderr)
check("does not load libdltest.so at start: its functions are probed in the traced processes "
      "that load it (dlopen)" in r.stderr, "check: the note: %r" % r.stderr)

# 1b. a second thread loads it: threads are seized as they start, so it is held too
t1b = os.path.join(d, "t1b.pfw.gz")
r = dctest.run_dc(["run", "-o", t1b, s, "--", PROG, LIB, "thread"], timeout=SAFETY)
equal(r.returncode, 0, "thread: exit status (%s)" % r.stderr)
check(re.fullmatch(r"loaded \d+\nret 10 20\n", r.stdout), "thread: output %r" % r.stdout)
dctest.check_pfw(t1b)
equal([(x, ret) for _, x, ret in dlt_calls(t1b)], [(-1, -10), (1, 10), (-1, -10), (2, 20)],
      "thread: the constructor run by the loading thread is traced")
equal(len(attached_lines(r.stderr, LIB)), 1, "thread: attached before its code ran: %r" % r.stderr)

# 1c. the holds are no job-control stops: a parent waiting with WUNTRACED | WCONTINUED (as
#     a shell with job control does) sees only the stop and continue it makes itself
PARENT = """import os, signal, subprocess, sys
p = subprocess.Popen([sys.argv[1], sys.argv[2], "wait"], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, text=True)
p.stdout.readline()
seen = []
def wait():
    _, st = os.waitpid(p.pid, os.WUNTRACED | os.WCONTINUED)
    seen.append("stopped %d" % os.WSTOPSIG(st) if os.WIFSTOPPED(st) else "continued"
                if os.WIFCONTINUED(st) else "exited %d" % os.waitstatus_to_exitcode(st))
os.kill(p.pid, signal.SIGSTOP)
wait()
os.kill(p.pid, signal.SIGCONT)
wait()
p.stdin.write("go\\n")
p.stdin.close()
wait()
print(" ".join(seen))
"""
parent = write(os.path.join(d, "parent.py"), PARENT)
py = PY if os.path.exists(PY) else sys.executable
t1c = os.path.join(d, "t1c.pfw.gz")
r = dctest.run_dc(["run", "-o", t1c, s, "--", py, parent, PROG, LIB], timeout=SAFETY)
equal((r.returncode, r.stdout), (0, "stopped 19 continued exited 0\n"),
      "job control: the parent sees its own SIGSTOP/SIGCONT only (%s)" % r.stderr)
dctest.check_pfw(t1c)
equal([(x, ret) for _, x, ret in dlt_calls(t1c)], [(-1, -10), (1, 10), (-1, -10), (2, 20)],
      "job control: the child's calls, held at both loads")

# 1d. -p PID: its threads are seized, the load is held; at the end of the run the
#     process is released (TracerPid 0) and goes on untraced
w = subprocess.Popen([PROG, LIB, "before"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     text=True)
equal(w.stdout.readline(), "ready\n", "-p: the program waits before loading")
t1d = os.path.join(d, "t1d.pfw.gz")
p = subprocess.Popen([DC, "run", "-o", t1d, s, "-p", str(w.pid)], stderr=subprocess.PIPE,
                     text=True)
said = []
for ln in p.stderr:  # the run traces from this line on
    said.append(ln)
    if ln.startswith("datacrumbs: tracing PID %d" % w.pid):
        break
w.stdin.write("go\n")
w.stdin.flush()
equal(w.stdout.readline(), "loaded %d\n" % p.pid, "-p: seized by datacrumbs while it runs")
p.send_signal(signal.SIGINT)
err = "".join(said) + p.stderr.read()
p.wait(timeout=SAFETY)
equal(p.returncode, 0, "-p: the run's exit status (%s)" % err)
with open("/proc/%d/status" % w.pid) as f:
    tracer = [ln.split()[1] for ln in f if ln.startswith("TracerPid:")]
equal(tracer, ["0"], "-p: released at the end of the run")
w.stdin.write("go\n")
w.stdin.close()
equal((w.stdout.read(), w.wait(timeout=SAFETY)), ("ret 10 20\n", 0),
      "-p: the program goes on and ends as untraced")
dctest.check_pfw(t1d)
equal([(x, ret) for _, x, ret in dlt_calls(t1d)], [(-1, -10), (1, 10)],
      "-p: the held load's calls, the constructor's too; none after the run")
equal(len(attached_lines(err, LIB)), 1, "-p: attached before its code ran: %r" % err)

# 2. nothing to probe in the library: the program goes on, one warning names it ---------
s2 = write(os.path.join(d, "none.lua"), DLT % '"no_such_fn*"')
r = dctest.run_dc(["run", "-o", os.path.join(d, "t2.pfw.gz"), s2, "--", PROG, LIB],
                  timeout=SAFETY)
equal(r.returncode, 0, "nothing to probe: exit status (%s)" % r.stderr)
check(re.fullmatch(r"loaded \d+\nret 10 20\n", r.stdout), "nothing to probe: output %r" % r.stdout)
warns = [ln for ln in r.stderr.splitlines() if "warning" in ln]
equal(len(warns), 1, "nothing to probe: one warning: %r" % r.stderr)
check(warns and LIB in warns[0] and "no_such_fn*" in warns[0], "it names the library: %r" % warns)
dctest.check_pfw(os.path.join(d, "t2.pfw.gz"))

# 3. no CAP_SYS_PTRACE (capability mode): attached late, with a warning ------------------
if not shutil.which("setcap") or not shutil.which("setpriv"):
    print("SKIP: setcap/setpriv missing: the late attach of capability mode NOT TESTED",
          flush=True)
elif not dctest.mechanisms()["uprobe_session"]["ok"]:
    # the session kfuncs are weak externs: where the kernel lacks them, Debian's libbpf 1.1
    # looks in the modules' BTF, which BPF_BTF_GET_NEXT_ID lets only CAP_SYS_ADMIN list
    # there (docs/install.md "Kernels")
    print("SKIP: no session uprobes on this kernel: capability mode needs root or a libbpf "
          "that skips module BTFs it may not list; its late attach NOT TESTED", flush=True)
else:
    c = dctest.workdir("dlopen-caps")
    os.chmod(c, 0o755)
    capdc = os.path.join(c, "datacrumbs")
    shutil.copy(DC, capdc)
    subprocess.run(["setcap", "cap_bpf,cap_perfmon+ep", capdc], check=True)
    prog, lib = os.path.join(c, "prog_dlopen"), os.path.join(c, "libdltest.so")
    shutil.copy(PROG, prog)
    shutil.copy(LIB, lib)
    os.chmod(lib, 0o755)
    outd = os.path.join(c, "out")
    os.mkdir(outd)
    os.chmod(outd, 0o777)
    s3 = write(os.path.join(c, "dlt.lua"), DLT % '"dlt_fn"')
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    p = subprocess.Popen(nobody + [capdc, "run", "-o", outd, s3, "--", prog, lib, "wait"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    equal(p.stdout.readline(), "loaded 0\n", "late: not seized without CAP_SYS_PTRACE")
    late = ""
    for ln in p.stderr:  # the attach is done when its warning is out
        if "attached late" in ln:
            late = ln
            break
    check(re.search(r"warning: process %s \(prog_dlopen\) loaded %s before its probes could be "
                    r"attached \(datacrumbs has no CAP_SYS_PTRACE \(runs without root\): loading "
                    r"threads are not held\): layer DLT attached late, its calls until now are not "
                    r"traced$" % (r"\d+", re.escape(lib)), late.strip()),
          "late: the warning: %r" % late)
    p.stdin.write("go\n")
    p.stdin.close()
    out = p.stdout.read()
    err = p.stderr.read()
    p.wait(timeout=SAFETY)
    equal((p.returncode, out), (0, "ret 10 20\n"), "late: exit status and output (%s)" % err)
    t3 = dctest.find_trace(outd)
    dctest.check_pfw(t3)
    xs = [(x, r) for _, x, r in dlt_calls(t3)]
    # after the warning every call is traced: the second load's constructor and call;
    # before it, the first load's calls from where the attach landed
    equal(xs[-2:], [(-1, -10), (2, 20)], "late: the calls after the attach")
    check(xs[:-2] in ([], [(1, 10)], [(-1, -10), (1, 10)]),
          "late: before it, a tail of the first load's calls: %r" % xs)
    equal(err.count("attached late"), 0, "late: one warning for the file (no second): %r" % err)


def py_has(mod):
    return os.path.exists(PY) and subprocess.run([PY, "-c", "import " + mod],
                                                 capture_output=True).returncode == 0


# 4. h5py writes a dataset: H5Dwrite of the libhdf5 it loads, its pwrite nested ---------
H5 = """import sys, numpy, h5py
N = 65536
with h5py.File(sys.argv[1], "w") as f:
    d = f.create_dataset("d", (4, N), dtype="f8")
    for i in range(4):
        d[i, :] = numpy.full(N, i, dtype="f8")
    print("offset", d.id.get_offset())
"""
if not py_has("h5py"):
    print("SKIP: %s cannot import h5py (python3-h5py): the h5py case NOT TESTED" % PY,
          flush=True)
else:
    h = dctest.workdir("dlopen-h5py")
    prog = write(os.path.join(h, "w.py"), H5)
    s4 = write(os.path.join(h, "io_all_hdf5.lua"), IO_ALL_HDF5)
    data = os.path.join(h, "d.h5")
    t4 = os.path.join(h, "t.pfw.gz")
    r = dctest.run_dc(["run", "-o", t4, s4, "--", PY, prog, data], timeout=SAFETY)
    equal(r.returncode, 0, "h5py: exit status (%s)" % r.stderr)
    m = re.fullmatch(r"offset (\d+)\n", r.stdout)
    check(m, "h5py: the dataset's offset printed: %r" % r.stdout)
    base = int(m.group(1)) if m else -1
    row = 65536 * 8
    equal(os.path.getsize(data), base + 4 * row, "h5py: the file is the data after the header")
    dctest.check_pfw(t4)
    events, _, _ = dctest.read_trace(t4)
    h5 = dctest.calls(events, "HDF5")
    equal([(e["name"], e["args"].get("ret")) for e in h5], [("H5Dwrite", 0)] * 4,
          "h5py: one H5Dwrite per row, each returning 0")
    kids = [[(c["cat"], c["name"], c.get("path"), c["args"].get("offset"), c["args"].get("count"),
              c["args"].get("ret")) for c in events if c.get("ph") == "X" and
             c["pid"] == e["pid"] and c["args"].get("p_idx") == e["id"]] for e in h5]
    equal(kids, [[("POSIX", "pwrite", data, base + i * row, row, row)] for i in range(4)],
          "h5py: each H5Dwrite's one pwrite of its row, at HDF5's offset")
    equal(len([ln for ln in r.stderr.splitlines() if re.search(
        r"libhdf5_serial\.so[.\d]*: layer HDF5 attached \(1 functions\) before any of its code "
        r"ran$", ln)]), 1, "h5py: libhdf5 attached once, before its code ran: %r" % r.stderr)

# 5. mpi4py: MPI-IO on 2 Open MPI ranks under io_all.lua --------------------------------
MP = """import sys, numpy
from mpi4py import MPI
comm = MPI.COMM_WORLD
r = comm.Get_rank()
fh = MPI.File.Open(comm, sys.argv[1], MPI.MODE_CREATE | MPI.MODE_RDWR)
fh.Write_at(r * 4096, numpy.full(4096, r, dtype="u1"))
fh.Write_at_all(2 * 4096 + r * 8192, numpy.full(1024, r, dtype="f8"))
fh.Close()
sys.stdout.write("rank %d of %d\\n" % (r, comm.Get_size()))  # one write(2): whole lines
sys.stdout.flush()
"""
if not py_has("mpi4py") or not shutil.which("mpirun.openmpi"):
    print("SKIP: %s cannot import mpi4py (python3-mpi4py) or no mpirun.openmpi: the mpi4py "
          "case NOT TESTED" % PY, flush=True)
else:
    mdir = dctest.workdir("dlopen-mpi4py")
    prog = write(os.path.join(mdir, "m.py"), MP)
    data = os.path.join(mdir, "m.out")
    t5 = os.path.join(mdir, "t.pfw.gz")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_pml="ob1", OMPI_MCA_btl="self,vader")
    r = dctest.run_dc(["run", "-o", t5, "io_all.lua", "--", "mpirun.openmpi", "--oversubscribe",
                       "-np", "2", PY, prog, data], timeout=SAFETY, env=env)
    equal(r.returncode, 0, "mpi4py: exit status (%s)" % r.stderr)
    # (the two ranks' lines may interleave in mpirun's stdout: "rank 1 ofrank 0 of 2\n 2\n",
    # "rankrank 0 of 2\n 1 of 2\n": the number and " of" stay together)
    equal(sorted(re.findall(r"(\d+) of", r.stdout)), ["0", "1"],
          "mpi4py: both ranks ran: %r" % r.stdout)
    equal(os.path.getsize(data), 24576, "mpi4py: the file's size (2 x 4096 + 2 x 8192)")
    with open(data, "rb") as f:
        blob = f.read()
    equal(blob, bytes([0]) * 4096 + bytes([1]) * 4096 + bytes(8192) +
          bytes.fromhex("000000000000f03f") * 1024, "mpi4py: the file's bytes")
    check(len([ln for ln in r.stderr.splitlines() if "layer MPIIO attached" in ln]) == 1,
          "mpi4py: libmpi attached once for both ranks: %r" % r.stderr)
    dctest.check_pfw(t5)
    events, _, meta = dctest.read_trace(t5)
    mpi = dctest.calls(events, "MPIIO")
    ranks = {}
    for mt in meta:
        if mt["name"] == "PR" and mt["args"].get("name") == "rank":
            ranks[mt["pid"]] = int(mt["args"]["value"])
    names = {mt["pid"]: mt["args"]["name"] for mt in meta if mt["name"] == "process_name"}
    equal(sorted(ranks.values()), [0, 1], "mpi4py: two ranks, PR records")
    undercoll = 0
    for pid, rk in ranks.items():
        equal(names.get(pid), "Rank %d" % rk, "mpi4py: process %d named" % pid)
        mine = [e for e in mpi if e["pid"] == pid]
        want = [("MPI_Init_thread", {}), ("MPI_File_open", {"amode": 9}),
                ("MPI_File_write_at", {"offset": rk * 4096, "count": 4096, "elements": 4096}),
                ("MPI_File_write_at_all", {"offset": 8192 + rk * 8192, "count": 8192,
                                           "elements": 1024}),
                ("MPI_File_close", {}), ("MPI_Finalize", {})]
        equal([(e["name"], {k: e["args"][k] for k in w if k in e["args"]}, e["args"].get("ret"))
               for e, (_, w) in zip(mine, want)] if len(mine) == len(want) else mine,
              [(n, w, 0) for n, w in want], "rank %d: its MPI-IO calls" % rk)
        for e in mine:
            if e["name"] in ("MPI_File_open", "MPI_File_write_at", "MPI_File_write_at_all",
                             "MPI_File_close"):
                equal(e["path"], data, "rank %d: %s names the file" % (rk, e["name"]))
        wa = [e for e in mine if e["name"] == "MPI_File_write_at"]
        kids = [(c["name"], c["args"].get("offset"), c["args"].get("count"), c["args"].get("ret"))
                for c in dctest.calls(events) if wa and c["pid"] == pid and
                c["args"].get("p_idx") == wa[0]["id"] and c.get("path") == data]
        equal(kids, [("pwrite", rk * 4096, 4096, 4096)], "rank %d: write_at's pwrite nested" % rk)
        wc = [e for e in mine if e["name"] == "MPI_File_write_at_all"]
        undercoll += sum(c["args"].get("ret", 0) for c in dctest.calls(events)
                         if wc and c["pid"] == pid and c["args"].get("p_idx") == wc[0]["id"] and
                         c.get("path") == data and c["name"].startswith("pwrite"))
    equal(undercoll, 16384, "mpi4py: bytes pwritten inside the collective writes, both ranks")

# a command that is a tracer itself (strace) under a script whose library may come with a
# dlopen: held by our ptrace it cannot trace (said on stderr); --no-hold lets it
if shutil.which("strace"):
    for hold in (True, False):
        t6 = os.path.join(d, "t6-%d.pfw.gz" % hold)
        r = dctest.run_dc(["run", "-o", t6] + ([] if hold else ["--no-hold"]) +
                          ["io_all.lua", "--", "strace", "-f", "-o", "/dev/null", "true"],
                          timeout=SAFETY)
        if hold:
            dctest.check(r.returncode != 0 and "give --no-hold" in r.stderr,
                         "strace under the hold fails, and the note says --no-hold: %s"
                         % r.stderr[-300:])
        else:
            dctest.equal(r.returncode, 0, "strace under --no-hold (%s)" % r.stderr[-300:])
            dctest.check("give --no-hold" not in r.stderr, "--no-hold: no hold note")
        dctest.check_pfw(t6)
else:
    print("SKIP: strace not installed: the --no-hold check is NOT TESTED", flush=True)

dctest.finish()
