"""test_mpiio.py: the MPI-IO layer (io_mpiio.lua, io_all.lua) on tests/progs/prog_mpiio.c,
built and run with Debian's Open MPI and MPICH at 2 and 4 ranks under their own launchers:
each rank's exact calls (offsets, bytes asked and moved, the file), its process named
"Rank N" with a PR record, each call once through the PMPI_ aliases, and the POSIX calls
each MPI-IO call made nested under it."""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import dctest  # noqa: E402
from dctest import check, equal  # noqa: E402

dctest.need_root()
SRC = os.path.join(os.path.dirname(__file__), "progs", "prog_mpiio.c")
MPIS = {
    # launcher, compiler, environment (Open MPI refuses root without the two ALLOW
    # variables; ob1/vader skip its network probing; 4 ranks on 2 cores oversubscribe)
    "openmpi": (["mpirun.openmpi", "--oversubscribe"], "mpicc.openmpi",
                {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
                 "OMPI_MCA_pml": "ob1", "OMPI_MCA_btl": "self,vader"}),
    "mpich": (["mpirun.mpich"], "mpicc.mpich", {}),
}
MODE_CREATE_RDWR = 1 | 8   # MPI_MODE_CREATE | MPI_MODE_RDWR, both MPIs' mpi.h
SEEK_SET = 600             # MPI_SEEK_SET


def want_calls(r, n):
    """What rank r of n does (prog_mpiio.c's header), as (name, args) of MPIIO events."""
    io = lambda off, elems, size: dict({} if off is None else {"offset": off},  # noqa: E731
                                       elements=elems, bytes=elems * size,
                                       count=elems * size, ret=0)
    return [
        ("MPI_Init", {"ret": 0}),
        ("MPI_File_open", {"amode": MODE_CREATE_RDWR, "ret": 0}),
        ("MPI_File_write_at", io(r * 4096, 4096, 1)),
        ("MPI_File_write_at_all", io(n * 4096 + r * 8192, 1024, 8)),
        ("MPI_File_sync", {"ret": 0}),
        ("MPI_File_read_at", io(r * 4096, 4096, 1)),
        ("MPI_File_read_at_all", io(n * 4096 + r * 8192, 2048, 4)),
        ("MPI_File_seek", {"offset": r * 4096, "whence": SEEK_SET, "ret": 0}),
        ("MPI_File_write", io(None, 100, 1)),
        # nonblocking: bytes asked; the moved ones are in the status MPI_Wait fills
        ("MPI_File_iwrite_at", {"offset": r * 4096, "elements": 1024, "count": 4096, "ret": 0}),
        ("MPI_File_iread_at", {"offset": r * 4096, "elements": 4096, "count": 4096, "ret": 0}),
        ("MPI_File_get_size", {"size": n * 12288, "ret": 0}),
        ("MPI_File_close", {"ret": 0}),
        ("MPI_Finalize", {"ret": 0}),
    ]


def build_indirect(cc, d):
    """prog_mpiio's code in a shared library (libwrap.so, linked with MPI) and a main
    program linked with libwrap only: the MPI library is reached through another one."""
    lib = os.path.join(d, "libwrap.so")
    subprocess.run([cc, "-std=c99", "-O2", "-shared", "-fPIC", "-Dmain=wrap_main", "-o", lib,
                    SRC], check=True)
    main = os.path.join(d, "main.c")
    with open(main, "w") as f:
        f.write("int wrap_main(int, char **);\n"
                "int main(int argc, char **argv) { return wrap_main(argc, argv); }\n")
    prog = os.path.join(d, "prog_mpiio")
    subprocess.run(["cc", "-o", prog, main, "-L" + d, "-lwrap", "-Wl,-rpath," + d], check=True)
    return prog


def run(mpi, n, script, opts=(), cflags=(), indirect=False):
    launcher, cc, env = MPIS[mpi]
    d = dctest.workdir("mpiio-%s-%d-%s%s%s" % (mpi, n, os.path.basename(script).split(".")[0],
                                               "".join(opts + cflags).replace("-", ""),
                                               "-indirect" if indirect else ""))
    prog = os.path.join(d, "prog_mpiio")
    if indirect:
        build_indirect(cc, d)
    else:
        subprocess.run([cc, "-std=c99", "-O2", "-o", prog, SRC] + list(cflags), check=True)
    target = os.path.join(d, "data", "shared.dat")
    os.makedirs(os.path.dirname(target))
    r = dctest.run_dc(["run", "-o", d] + list(opts) + [script, "--"] + launcher +
                      ["-n", str(n), prog, target], env=dict(os.environ, **env))
    equal(r.returncode, 0, "%s -n %d under %s: exit status (stderr: %s)" % (mpi, n, script, r.stderr))
    check("prog_mpiio: %d ranks, size %d" % (n, n * 12288) in r.stdout, "the program's own check: %r" % r.stdout)
    trace = dctest.find_trace(d)
    dctest.check_pfw(trace)
    events, _, meta = dctest.read_trace(trace)
    ranks = {}
    for m in meta:
        if m["name"] == "PR":
            equal(m["args"]["name"], "rank", "PR record's name")
            ranks[m["pid"]] = int(m["args"]["value"])
    names = {m["pid"]: m["args"]["name"] for m in meta if m["name"] == "process_name"}
    run.stdout = r.stdout
    return target, events, ranks, names


for mpi in ("openmpi", "mpich"):
    if not shutil.which(MPIS[mpi][1]):
        check(False, "%s is not installed (scripts/setup.sh installs it)" % MPIS[mpi][1])
        continue
    for n in (2, 4):
        what = "%s -n %d" % (mpi, n)
        target, events, ranks, names = run(mpi, n, "io_mpiio.lua")
        equal(sorted(ranks.values()), list(range(n)), what + ": one PR rank record per rank")
        equal(sorted(names[p] for p in ranks), sorted("Rank %d" % r for r in range(n)),
              what + ": ranks' last process_name is Rank N")
        for pid, r in sorted(ranks.items(), key=lambda x: x[1]):
            mine = [e for e in dctest.calls(events, "MPIIO") if e["pid"] == pid]
            got = [(e["name"], {k: v for k, v in e["args"].items()
                                if k not in ("hhash", "fhash", "level", "p_idx")}) for e in mine]
            equal(got, want_calls(r, n), "%s: rank %d's MPI-IO calls" % (what, r))
            equal([e["path"] for e in mine if e["name"].startswith("MPI_File")], [target] * 12,
                  "%s: rank %d's MPI_File calls name the file" % (what, r))
        other = [e for e in dctest.calls(events, "MPIIO") if e["pid"] not in ranks]
        equal(other, [], what + ": no MPI-IO events outside the ranks")
        equal(sorted(set(e["cat"] for e in events if e.get("ph") == "X")), ["MPIIO", "datacrumbs"],
              what + ": io_mpiio.lua writes MPIIO events only")

    # io_all.lua: each MPI-IO call is the parent of the POSIX calls that moved its data
    for n in (2, 4):
        what = "%s -n %d io_all" % (mpi, n)
        target, events, ranks, names = run(mpi, n, "io_all.lua")
        equal(sorted(ranks.values()), list(range(n)), what + ": ranks")
        byid = {(e["pid"], e["id"]): e for e in events if e.get("ph") == "X"}
        coll = 0
        for pid, r in ranks.items():
            mine = [e for e in dctest.calls(events, "MPIIO") if e["pid"] == pid]
            equal([e["name"] for e in mine], [c[0] for c in want_calls(r, n)],
                  "%s: rank %d's MPI-IO calls, each once" % (what, r))
            kids = {}
            for e in events:
                if e.get("ph") == "X" and e["pid"] == pid and e["cat"] == "POSIX" and e["path"] == target:
                    p = byid.get((pid, e["args"]["p_idx"]))
                    while p is not None and p["cat"] != "MPIIO":  # the MPI-IO call it is under
                        p = byid.get((pid, p["args"]["p_idx"]))
                    if p is not None:
                        kids.setdefault(p["name"], []).append(e)
                        check(p["ts"] <= e["ts"] and e["ts"] + e["dur"] <= p["ts"] + p["dur"] + dctest.US_ROUNDING,
                              "%s: %s inside %s" % (what, e["name"], p["name"]))
            data = lambda name: [(e["name"], e["args"]["offset"], e["args"]["ret"])  # noqa: E731
                                 for e in kids.get(name, []) if e["name"] in ("pwrite", "pread")]
            equal(data("MPI_File_write_at"), [("pwrite", r * 4096, 4096)],
                  "%s: rank %d's write_at made one pwrite of its 4096 bytes" % (what, r))
            equal(data("MPI_File_read_at"), [("pread", r * 4096, 4096)],
                  "%s: rank %d's read_at made one pread" % (what, r))
            equal(data("MPI_File_write"), [("pwrite", r * 4096, 100)],
                  "%s: rank %d's write at its file pointer made one pwrite of 100 bytes" % (what, r))
            # collective writes may be done by aggregator ranks for the others (Open MPI at
            # 4 ranks: rank 0 writes all): count the bytes over all ranks
            for e in kids.get("MPI_File_write_at_all", []):
                if e["name"] == "pwrite":
                    coll += e["args"]["ret"]
                    check(n * 4096 <= e["args"]["offset"] and e["args"]["offset"] + e["args"]["ret"] <= n * 12288,
                          "%s: collective pwrite inside the collective region: %r" % (what, e["args"]))
        equal(coll, n * 8192, what + ": the collective write's pwrites, all ranks, add up to its bytes")
# the MPI library reached through another shared library (the program links libwrap.so)
for mpi in ("openmpi", "mpich"):
    target, events, ranks, names = run(mpi, 2, "io_mpiio.lua", indirect=True)
    equal(sorted(ranks.values()), [0, 1], "%s through libwrap.so: ranks" % mpi)
    for pid, r in ranks.items():
        equal([e["name"] for e in dctest.calls(events, "MPIIO") if e["pid"] == pid],
              [c[0] for c in want_calls(r, 2)], "%s through libwrap.so: rank %d's calls" % (mpi, r))

# a call made through its PMPI_ name (HDF5 does) is traced once, under the MPI_ name
for mpi in ("openmpi", "mpich"):
    target, events, ranks, names = run(mpi, 2, "io_mpiio.lua", cflags=("-DTHROUGH_PMPI",))
    for pid, r in ranks.items():
        mine = [e for e in dctest.calls(events, "MPIIO") if e["pid"] == pid]
        got = [(e["name"], {k: v for k, v in e["args"].items()
                            if k not in ("hhash", "fhash", "level", "p_idx")}) for e in mine]
        equal(got, want_calls(r, 2), "%s: PMPI_File_write_at: rank %d's calls, each once" % (mpi, r))

# a script sees the ranks (dc.on_process "rank"); profile mode names the MPI_File's file
d = dctest.workdir("mpiio-script")
script = os.path.join(d, "ranks.lua")
with open(script, "w") as f:
    f.write('''local dc = require "datacrumbs"
dc.probe "mpiio"
local ranks = {}
dc.on_process(function(p) if p.event == "rank" then ranks[#ranks + 1] = p.rank end end)
dc.on_end(function() table.sort(ranks); print("ranks " .. table.concat(ranks, ",")) end)
''')
for mpi in ("openmpi", "mpich"):
    target, events, ranks, names = run(mpi, 4, script)
    check("ranks 0,1,2,3" in run.stdout, "%s: dc.on_process saw the 4 ranks: %r" % (mpi, run.stdout))
    target, events, ranks, names = run(mpi, 2, "io_mpiio.lua", ("--mode", "profile"))
    equal(sorted(ranks.values()), [0, 1], "%s profile: ranks" % mpi)
    for pid, r in ranks.items():
        c = {e["name"]: e for e in events if e.get("ph") == "C" and e["pid"] == pid and e["path"] == target}
        equal({k: (c[k]["args"]["count"], c[k]["args"].get("size_sum")) for k in
               ("MPI_File_write_at", "MPI_File_write_at_all", "MPI_File_read_at_all", "MPI_File_write")
               if k in c},
              {"MPI_File_write_at": (1, 4096), "MPI_File_write_at_all": (1, 8192),
               "MPI_File_read_at_all": (1, 8192), "MPI_File_write": (1, 100)},
              "%s profile: rank %d's counters on the file (calls, bytes asked)" % (mpi, r))
dctest.finish()
