"""test_report.py: `datacrumbs report` and the Python loader (datacrumbs.analysis) on the
traces of a multi-process run: prog_mpiio under MPICH with 2 ranks, traced twice into one
directory (io_all.lua in trace mode, io_mpiio.lua in profile mode). Every figure is
compared with the one counted here from the raw events:
- the loader (pandas, and Dask distributed with 2 worker processes over the directory):
  calls, bytes and time per layer, hosts, files, process names and ranks resolved;
- the report, opened in headless Chromium: no console error, its totals, per-layer rows
  (with the time in the layers below, from p_idx), the data file's row, the ranks' rows,
  lost and dropped; its embedded Chrome trace document has every event, counters with
  numbers only;
- the upstream DFTracer trace (../shared/traces) loads and reports too.
Runs with the interpreter that has pandas and matplotlib (DC_PYTHON, Debian's)."""
import base64
import collections
import json
import os
import shutil
import socket
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import browser  # noqa: E402
import dctest  # noqa: E402
from dctest import check, equal  # noqa: E402

def main():
    dctest.need_root()
    try:
        import pandas  # noqa: F401
        import matplotlib  # noqa: F401
        from dask.distributed import Client, LocalCluster
    except ImportError as e:
        print("SKIP: %s: %s (apt-get install python3-pandas python3-matplotlib python3-dask "
              "python3-distributed; scripts/setup.sh does): NOT TESTED" % (sys.argv[0], e), flush=True)
        sys.exit(77)
    browser.need_browser(sys.argv[0])
    from datacrumbs import analysis  # noqa: E402,F401

    if not shutil.which("mpicc.mpich"):
        check(False, "mpicc.mpich is not installed (scripts/setup.sh installs it)")
        dctest.finish()

    d = dctest.workdir("report")
    traces = os.path.join(d, "traces")
    os.makedirs(traces)
    prog = os.path.join(d, "prog_mpiio")
    subprocess.run(["mpicc.mpich", "-std=c99", "-O2", "-o", prog,
                    os.path.join(HERE, "progs", "prog_mpiio.c")], check=True)
    os.makedirs(os.path.join(d, "data"))
    target = os.path.join(d, "data", "shared.dat")
    for name, opts in (("trace", ["io_all.lua"]),
                       ("profile", ["--mode", "profile", "--interval", "10s", "io_mpiio.lua"])):
        r = dctest.run_dc(["run", "-o", os.path.join(traces, name + ".pfw.gz")] + opts +
                          ["--", "mpirun.mpich", "-n", "2", prog, target])
        equal(r.returncode, 0, "%s run: exit status (%s)" % (name, r.stderr))
        dctest.check_pfw(os.path.join(traces, name + ".pfw.gz"))

    RET_IS_BYTES = {"fprintf", "vfprintf", "getline", "getdelim", "printf", "vprintf", "dprintf",
                    "vdprintf"}
    ONE_BYTE = {"fputc", "putc", "putchar", "fgetc", "getc", "getchar"}


    def moved(e):
        """Bytes moved by one event (docs: pfw_summary.py's rule), counted here again."""
        a = e["args"]
        if e["ph"] == "C":
            return a.get("moved_sum", a.get("size_sum", 0))
        if "bytes" in a:
            return max(a["bytes"], 0)
        ret = a.get("ret")
        if e["name"].startswith("MPI_File_") and ret == 0 and "count" in a:
            return a["count"]  # MPI_SUCCESS without a status (MPI_STATUS_IGNORE): all
        if e["name"] in ONE_BYTE:
            return 1 if isinstance(ret, int) and ret >= 0 else 0
        if e["name"] in ("fputs", "puts") and isinstance(ret, int) and ret >= 0:
            return a.get("count", 0)  # glibc's fputs returns 1: its count is what moved
        if not isinstance(ret, int) or ret <= 0:
            return 0
        if "nmemb" in a:
            return ret * a["size"]
        if e["name"] in RET_IS_BYTES:
            return ret
        return ret if "count" in a and ret <= a["count"] else 0


    # what every reader must find, from the raw events
    want = {"layer": collections.defaultdict(lambda: [0, 0, 0]), "below": collections.Counter(),
            "file": [0, 0, 0], "rank": collections.defaultdict(lambda: [0, 0, 0]),
            "lost": 0, "dropped": 0, "events": 0, "counters": 0}
    names, ranks, all_events = {}, {}, {}
    for f in sorted(os.listdir(traces)):
        events, files, meta = dctest.read_trace(os.path.join(traces, f))
        all_events[f] = events
        tnames = {m["pid"]: m["args"]["name"] for m in meta if m["name"] == "process_name"}
        tranks = {m["pid"]: int(m["args"]["value"]) for m in meta if m["name"] == "PR"}
        names.update(tnames)
        ranks.update(tranks)
        by_id = {(e["pid"], e["id"]): e for e in events if e["ph"] == "X"}
        io = {(e["pid"], e["id"]) for e in events if e["ph"] == "X" and e["args"].get("fhash")}
        for e in events:
            if e["cat"] == "datacrumbs":
                if e["name"] == "end":
                    want["lost"] += e["args"]["lost"]
                    want["dropped"] += e["args"]["dropped"]
                continue
            n = e["args"]["count"] if e["ph"] == "C" else 1
            dur = e["args"]["dur_sum"] if e["ph"] == "C" else e["dur"]
            want["events"] += 1
            want["counters"] += e["ph"] == "C"
            row = want["layer"][e["cat"]]
            row[0] += n
            row[1] += moved(e)
            row[2] += dur
            p = by_id.get((e["pid"], e["args"].get("p_idx"))) if e["ph"] == "X" else None
            if p is not None and p["cat"] != e["cat"]:
                want["below"][p["cat"]] += e["dur"]
            top = e["ph"] == "C" or (e["pid"], e["args"].get("p_idx")) not in io
            if top and e["path"] == target:
                for i, v in enumerate((n, moved(e), dur)):
                    want["file"][i] += v
            if top and e["pid"] in tranks:
                for i, v in enumerate((n, moved(e), dur)):
                    want["rank"]["%d %s" % (e["pid"], tnames[e["pid"]])][i] += v
    check(want["counters"] > 0, "the profile run wrote counters: %d" % want["counters"])
    check(want["below"]["MPIIO"] > 0, "MPI-IO calls have POSIX calls under them")
    equal(sorted(ranks.values()), [0, 0, 1, 1], "two runs of 2 ranks")

    # --- the loader ---
    df = analysis.load(traces)
    equal(len(df), want["events"], "loader: rows (complete and counter events)")
    got = {c: [int(g["calls"].sum()), int(g["size"].sum()), int(g["dur"].sum())]
           for c, g in df[~df["cat"].isin(["datacrumbs"])].groupby("cat")}
    equal(got, {k: v for k, v in want["layer"].items()}, "loader: calls, bytes, time per layer")
    equal(set(df["hostname"]), {socket.gethostname()}, "loader: the host name resolved")
    equal(int((df["filename"] == target).sum()),
          sum(1 for ev in all_events.values() for e in ev if e["path"] == target and
              e["cat"] != "datacrumbs"), "loader: events on the data file")
    equal(sorted(set(df[df["rank"] >= 0]["proc_name"])), ["Rank 0", "Rank 1"],
          "loader: ranks' process names")
    equal(list(df.columns)[:12], ["index", "name", "cat", "ph", "pid", "tid", "ts", "dur", "te",
                                  "trange", "hostname", "filename"], "loader: column names")
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    client = Client(cluster)
    try:
        ddf = analysis.load_dask(traces, client=client)
        equal(ddf.npartitions, 2, "dask: one partition per trace")
        dd_tot = ddf.groupby("cat")[["calls", "size", "dur"]].sum().compute()
        equal({c: [int(r["calls"]), int(r["size"]), int(r["dur"])] for c, r in dd_tot.iterrows()
               if c != "datacrumbs"}, {k: v for k, v in want["layer"].items()},
              "dask distributed: calls, bytes, time per layer")
    finally:
        client.close()
        cluster.close()

    # --- the report ---
    r = dctest.run_dc(["report", "--bogus", traces])
    equal((r.returncode, r.stderr.split(" (usage")[0]), (2, "datacrumbs report: unknown option --bogus"),
          "datacrumbs report --bogus: named, exit 2")
    out = os.path.join(d, "site", "report.html")
    os.makedirs(os.path.dirname(out))
    r = dctest.run_dc(["report", "-o", out, traces])
    equal(r.returncode, 0, "datacrumbs report: exit status (%s)" % r.stderr)
    srv = browser.Server(os.path.dirname(out))
    b = browser.Browser(1280, 3200)


    def table(tid):
        """The rows of table #tid: text of each cell, numbers as ints (data-v)."""
        return b.run("return Array.from(document.querySelectorAll('#%s tr')).slice(1).map(tr => "
                     "Array.from(tr.children).map(td => td.dataset.v !== undefined ? "
                     "Number(td.dataset.v) : td.textContent));" % tid)


    try:
        b.open(srv.url + "report.html")
        equal([m for m in b.console() if m["level"] in ("SEVERE", "WARNING")], [],
              "report: browser console errors")
        tot = [sum(v[i] for v in want["layer"].values()) for i in range(3)]
        equal(table("totals"), [[2] + tot], "report: totals (traces, calls, bytes, time)")
        got = {row[0]: row[1:5] for row in table("layers")}
        equal(got, {k: v + [want["below"][k]] for k, v in want["layer"].items()},
              "report: per layer calls, bytes, time, time in layers below")
        files = {row[0]: row[1:] for row in table("files")}
        equal(files.get(target), want["file"], "report: the data file's row")
        procs = {row[0]: row[1:] for row in table("processes")}
        equal({k: procs.get(k) for k in want["rank"]}, dict(want["rank"]), "report: ranks' rows")
        loss = b.run("return ['lost','dropped'].map(k => Number(document.querySelector("
                     "'#loss-' + k + ' span').dataset.v));")
        equal(loss, [want["lost"], want["dropped"]], "report: lost and dropped")
        href = b.run("return document.getElementById('chrome').href;")
        doc = json.loads(base64.b64decode(href.split(",", 1)[1]))
        equal(sum(1 for e in doc["traceEvents"] if e["ph"] in ("X", "C") and e["cat"] != "datacrumbs"),
              want["events"], "report: the embedded Chrome trace has every event")
        cs = [e for e in doc["traceEvents"] if e["ph"] == "C"]
        equal(len(cs), want["counters"], "report: the embedded Chrome trace's counters")
        check(all(isinstance(v, int) for e in cs for v in e["args"].values()),
              "report: counters carry numbers only")
        check(any(e["name"].endswith(" " + target) for e in cs), "a counter names the data file")
        imgs = b.run("return Array.from(document.images).map(i => i.complete && i.naturalWidth > 0);")
        check(len(imgs) == 5 and all(imgs), "report: every plot decodes: %r" % imgs)
        shots = os.environ.get("VIEWER_SHOTS") or os.path.join(dctest.TEST_OUT, "viewers-shots")
        b.run("window.scrollTo(0, 0);")
        print("screenshot:", b.screenshot(os.path.join(shots, "report-mpi.png")))

        up = dctest.upstream_trace()
        if up:
            uev, _, _ = dctest.read_trace(up)
            calls = [e for e in uev if e["ph"] == "X" and e["cat"] != "dftracer"]
            udf = analysis.load(up)
            equal(len(udf), len(calls), "upstream: loader rows")
            pread = [e for e in calls if e["name"] == "pread"]
            got = udf[udf["name"] == "pread"]
            equal([len(got), int(got["size"].sum()), int(got["dur"].sum())],
                  [len(pread), sum(moved(e) for e in pread), sum(e["dur"] for e in pread)],
                  "upstream: loader's pread calls, bytes, time")
            equal(set(udf["hostname"]), {"corona183"}, "upstream: host resolved")
            uout = os.path.join(d, "site", "upstream.html")
            r = dctest.run_dc(["report", "--no-chrome", "-o", uout, up])
            equal(r.returncode, 0, "report of the upstream trace (%s)" % r.stderr)
            b.open(srv.url + "upstream.html")
            equal([m for m in b.console() if m["level"] in ("SEVERE", "WARNING")], [],
                  "upstream report: console errors")
            equal(table("totals")[0][1], len(calls), "upstream report: calls")
            print("screenshot:", b.screenshot(os.path.join(shots, "report-upstream.png")))
    finally:
        b.close()
        srv.close()
    dctest.finish()


if __name__ == "__main__":  # Dask's spawned workers import this file
    main()
