"""test_viewers.py: a datacrumbs trace of an MPI run opens in a Chrome trace format viewer.
The .pfw.gz stays DFTracer's line format (no commas between records: the format contract);
`datacrumbs convert --chrome` writes the strict JSON document the viewers read. Here that
document of an io_all.lua trace of prog_mpiio under MPICH (2 ranks) is loaded into the
DevTools Performance panel's trace engine (npm @paulirish/trace_engine) in headless Debian
Chromium: the engine must find each rank (process "Rank N") with exactly the trace's events,
and the MPI-IO calls' POSIX children nested under them as the trace's p_idx says; no console
error; speedscope (npm) opens it too, one profile per thread, every stack well nested.
The upstream DFTracer trace (../shared/traces) is converted and loaded too.
Screenshots: $VIEWER_SHOTS (default TEST_OUT/viewers-shots)."""
import collections
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import browser  # noqa: E402
import dctest  # noqa: E402
from dctest import check, equal  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
MODULES = os.environ.get("VIEWER_MODULES", os.path.join(HERE, "..", "build", "viewer",
                                                       "node_modules"))
SHOTS = os.environ.get("VIEWER_SHOTS") or os.path.join(dctest.TEST_OUT, "viewers-shots")

dctest.need_root()
browser.need_browser(sys.argv[0])
if not os.path.exists(os.path.join(MODULES, "@paulirish", "trace_engine")):
    print("SKIP: %s has no @paulirish/trace_engine (scripts/setup.sh runs npm ci): %s NOT TESTED"
          % (MODULES, sys.argv[0]), flush=True)
    sys.exit(77)
if not shutil.which("mpicc.mpich"):
    check(False, "mpicc.mpich is not installed (scripts/setup.sh installs it)")
    dctest.finish()

d = dctest.workdir("viewers")
site = os.path.join(d, "site")
os.makedirs(site)
os.symlink(os.path.realpath(MODULES), os.path.join(site, "node_modules"))
for f in ("engine.html", "third-party-web-stub.js"):
    shutil.copy(os.path.join(HERE, "viewer", f), site)

# the MPI run: 2 ranks of prog_mpiio, MPI-IO with the POSIX calls under it
prog = os.path.join(d, "prog_mpiio")
subprocess.run(["mpicc.mpich", "-std=c99", "-O2", "-o", prog,
                os.path.join(HERE, "progs", "prog_mpiio.c")], check=True)
os.makedirs(os.path.join(d, "data"))
r = dctest.run_dc(["run", "-o", os.path.join(d, "mpi.pfw.gz"), "io_all.lua", "--",
                   "mpirun.mpich", "-n", "2", prog, os.path.join(d, "data", "shared.dat")])
equal(r.returncode, 0, "traced mpirun: exit status (%s)" % r.stderr)
trace = os.path.join(d, "mpi.pfw.gz")
dctest.check_pfw(trace)
events, files, meta = dctest.read_trace(trace)
ranks = {m["pid"]: int(m["args"]["value"]) for m in meta if m["name"] == "PR"}
equal(sorted(ranks.values()), [0, 1], "the trace has ranks 0 and 1")


def convert(src, out):
    r = dctest.run_dc(["convert", "--chrome", "-o", out, src])
    equal(r.returncode, 0, "datacrumbs convert --chrome %s: exit status (%s)" % (src, r.stderr))

    def no_constant(c):
        raise ValueError("not strict JSON: " + c)
    with open(out, encoding="utf-8") as f:
        doc = json.load(f, parse_constant=no_constant)  # strict: one document, no NaN
    return doc


doc = convert(trace, os.path.join(site, "mpi.json"))
# what the engine must find, from the .pfw.gz: per (pid, tid) the complete events (the
# tracer's start/end included: they are events of the first process), and the
# parent>child name pairs of p_idx
want_n = collections.Counter((e["pid"], e["tid"]) for e in events if e.get("ph") == "X")
by_id = {(e["pid"], e["id"]): e for e in events if e.get("ph") == "X"}
want_nest = collections.defaultdict(collections.Counter)
for e in events:
    p = by_id.get((e["pid"], e["args"].get("p_idx")))
    if e.get("ph") == "X" and p is not None:
        want_nest[(e["pid"], e["tid"])]["%s>%s" % (p["name"], e["name"])] += 1
equal(sum(1 for e in doc["traceEvents"] if e["ph"] == "X"), sum(want_n.values()),
      "converted: every complete event")
check(all(all(isinstance(v, (int, float)) for v in e["args"].values())
          for e in doc["traceEvents"] if e["ph"] == "C"), "converted: counters carry numbers only")

srv = browser.Server(site)
b = browser.Browser()
try:
    b.open(srv.url + "engine.html?trace=mpi.json")
    res = b.wait_promise("window.dcResult")
    check(res.get("ok"), "trace engine parsed the MPI trace: %s" % res.get("error"))
    got = res.get("result", {}).get("processes", [])
    names = {p["pid"]: p["name"] for p in got}
    for pid, rank in sorted(ranks.items(), key=lambda x: x[1]):
        equal(names.get(pid), "Rank %d" % rank, "engine: process %d is Rank %d" % (pid, rank))
    got_n = {(p["pid"], t["tid"]): t["entries"] for p in got for t in p["threads"]}
    equal(got_n, dict(want_n), "engine: events per process and thread")
    got_nest = {(p["pid"], t["tid"]): t["nested"] for p in got for t in p["threads"]}
    for pid in ranks:
        mine = {k: dict(v) for k, v in want_nest.items() if k[0] == pid}
        equal({k: got_nest.get(k) for k in mine}, mine,
              "engine: rank %d's nesting (parent>child counts) is the trace's p_idx" % ranks[pid])
        mpi_posix = sum(n for k, c in mine.items() for pc, n in c.items()
                        if pc.startswith("MPI_File_write_at>") or pc.startswith("MPI_File_read_at>"))
        check(mpi_posix >= 2, "rank %d has POSIX calls nested in MPI_File_*_at: %d"
              % (ranks[pid], mpi_posix))
        depth = max(t["maxDepth"] for p in got if p["pid"] == pid for t in p["threads"])
        check(depth >= 2, "engine: rank %d's events nest (depth %d)" % (ranks[pid], depth))
    errs = [m for m in b.console() if m["level"] == "SEVERE"]
    equal(errs, [], "browser console errors (MPI trace)")
    print("screenshot:", b.screenshot(os.path.join(SHOTS, "trace-engine-mpi.png")))

    # speedscope (npm speedscope, its built app): imports the document as a Trace Event
    # Format profile, one profile per thread, and finds every call stack well nested (it
    # warns "Tried to end ..." or "... still open" on the console otherwise)
    b.open(srv.url + "node_modules/speedscope/dist/release/index.html#profileURL=" + srv.url +
           "mpi.json&title=mpi")
    bar = b.wait_promise(
        "new Promise(res => { const f = () => { if (document.title !== 'speedscope' || "
        "/rror/.test(document.body.innerText)) res(document.body.innerText); "
        "else setTimeout(f, 50); }; f(); })")
    equal(bar.split("\n")[1] if "\n" in bar else bar, "mpi (1/%d)" % len(want_n),
          "speedscope: one profile per thread with events")
    log = b.console()
    equal([m["message"] for m in log if m["level"] == "SEVERE" or "Tried to end" in m["message"]
           or "still open" in m["message"]], [], "speedscope: no error, every stack nested")
    check(any("Importing as Trace Event Format profile" in m["message"] for m in log),
          "speedscope imported it as a Trace Event Format profile")
    print("screenshot:", b.screenshot(os.path.join(SHOTS, "speedscope-mpi.png")))

    up = dctest.upstream_trace()
    if up:
        udoc = convert(up, os.path.join(site, "upstream.json"))
        uev, _, _ = dctest.read_trace(up)
        n_up = sum(1 for e in uev if e.get("ph") == "X")
        equal(sum(1 for e in udoc["traceEvents"] if e["ph"] == "X"), n_up,
              "upstream converted: every complete event")
        b.open(srv.url + "engine.html?trace=upstream.json")
        res = b.wait_promise("window.dcResult")
        check(res.get("ok"), "trace engine parsed the upstream trace: %s" % res.get("error"))
        procs = res.get("result", {}).get("processes", [])
        equal(sum(t["entries"] for p in procs for t in p["threads"]), n_up,
              "engine: the upstream trace's events")
        check(max(t["maxDepth"] for p in procs for t in p["threads"]) >= 3,
              "engine: upstream events nest")
        equal([m for m in b.console() if m["level"] == "SEVERE"], [],
              "browser console errors (upstream trace)")
        print("screenshot:", b.screenshot(os.path.join(SHOTS, "trace-engine-upstream.png")))
finally:
    b.close()
    srv.close()
dctest.finish()
