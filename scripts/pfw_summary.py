#!/usr/bin/env python3
"""pfw_summary.py: a short summary of a DFTracer trace (.pfw or .pfw.gz, ours or
upstream's, complete or cut): calls, bytes and time per function, per file and per
process (MPI ranks by their "Rank N" names).

usage: pfw_summary.py [--top N] TRACE...
       pfw_summary.py [--top N] DIR...            (a job: every trace in DIR)
       pfw_summary.py [--top N] --job JOBID [DIR]  (JOBID.*-*.pfw.gz in DIR, default .)
  --top N      rows per table (default 10)
  --job JOBID  the traces of one job, one per job step and node as the site tracer names
               them (<jobid>.<stepid>-<node>.pfw.gz); other jobs' files are left out
A TRACE gets its own summary. A job (DIR, --job) gets one: job-wide totals (calls, bytes
read, bytes written, time), a table per node (the trace's `node` record, else its host),
per rank (the process's `rank` record; `-` for processes that are no rank; a process is
known by its node and pid), and the function and file tables over all its traces.
A call on two files (copy_file_range, sendfile, splice: `fhash2`) counts on both, its
bytes read from one and written to the other. Bytes are the bytes moved (the rule of
datacrumbs.analysis.moved_bytes): an MPI-IO call's `bytes` (from its MPI_Status),
or its `count` when it returned MPI_SUCCESS without one (MPI_STATUS_IGNORE),
fread/fwrite's `ret` items x `size`, fprintf's and getline's `ret`, else the `ret` of
calls that have a `count` arg when it is a byte count (0 < ret <= count: read, write,
pread...; not fgets' pointer). Time is the sum of
`dur` (us). The function table counts every event; the file and process tables only
events not made by another event on a file, so a call and the calls it made (fstat ->
fstatat, write -> sys_write, MPI_File_write_at -> pwrite) are not counted twice. Counter
events (profile mode) count as their `count` calls, `moved_sum` bytes (moved, by the same rule;
`size_sum`, asked, where a counter has none) and `dur_sum` time, in every table. A gzip member cut by a kill is skipped, as check_pfw.py --partial
does. Standard library only."""
import collections
import os
import sys

# the datacrumbs package: beside this script once installed, ../python in the source tree
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [p for p in (_here, os.path.join(_here, "..", "python"))
                if os.path.isdir(os.path.join(p, "datacrumbs"))]
from datacrumbs import analysis  # noqa: E402  (one rule for both tools)
from datacrumbs.analysis import counter_bytes, moved_bytes  # noqa: E402


def lines(path, state=None):
    """Yields the JSON lines of a trace (datacrumbs.analysis.records: every complete gzip
    member, a cut end tolerated); state["closed"] is set when it ends with its "]"."""
    return analysis.records(path, state)


def collect(path, recs=None, closed=None):
    """One trace's tables: (by_func, by_file, by_proc, pids, end, closed), each table
    {key: [calls, bytes, time]}. recs: its records when already read (metadata first,
    then events), closed whether it had its "]"; else the file is read."""
    files = {}
    by_func = collections.defaultdict(lambda: [0, 0, 0])
    by_file = collections.defaultdict(lambda: [0, 0, 0])
    by_proc = collections.defaultdict(lambda: [0, 0, 0])
    names = {}       # pid -> its last process_name
    pids, end = set(), None
    io_ids = set()   # (pid, tid, id) of events on a file (upstream repeats ids per thread)
    rows = []        # (pid, tid, p_idx, function key, file, bytes, dur)
    state = {}
    if recs is None:
        recs = lines(path, state)
    else:
        state["closed"] = closed
    for e in recs:
        a = e.get("args", {})
        if e.get("ph") == "M" and e.get("name") == "FH":
            files[a.get("value")] = a.get("name")
            continue
        if e.get("ph") == "M" and e.get("name") == "process_name":
            names[e.get("pid")] = a.get("name")
            continue
        if e.get("ph") == "C" and e.get("cat") not in ("datacrumbs", "dftracer"):
            n = a.get("count", 0)
            if isinstance(n, int) and n > 0:  # a profile mode counter: n calls
                pids.add(e.get("pid"))
                rows.append((e.get("pid"), e.get("tid"), None, "%s %s" % (e.get("cat"), e.get("name")),
                             files.get(a.get("fhash"), "-"), counter_bytes(a), a.get("dur_sum", 0), n))
            continue
        if e.get("ph") != "X":
            continue
        if e.get("cat") in ("datacrumbs", "dftracer"):
            if e.get("name") == "end":
                end = a
            continue
        pids.add(e.get("pid"))
        if a.get("fhash"):
            io_ids.add((e.get("pid"), e.get("tid"), e.get("id")))
        rows.append((e.get("pid"), e.get("tid"), a.get("p_idx"), "%s %s" % (e.get("cat"), e.get("name")),
                     files.get(a.get("fhash"), "-"), moved_bytes(a, e.get("name")), e.get("dur", 0), 1))
        if a.get("fhash2") in files:  # a call on two files: the bytes moved into or out of
            rows.append((e.get("pid"), e.get("tid"), a.get("p_idx"), None,  # the other too
                         files[a["fhash2"]], rows[-1][5], e.get("dur", 0), 1))
    for pid, tid, parent, func, f, moved, dur, n in rows:
        tables = [(func, by_func)] if func else []
        if (pid, tid, parent) not in io_ids:  # a call made by an I/O call counts once, in it
            tables.append((f, by_file))
            if func:  # a two-file call's second row counts on its file only: once per process
                tables.append((("%s %s" % (pid, names.get(pid, ""))).strip(), by_proc))
        for key, table in tables:
            t = table[key]
            t[0] += n
            t[1] += moved
            t[2] += dur
    if not state.get("closed") and not rows:
        raise OSError(0, "not a trace, or nothing readable in it%s" % (
            " (a killed run's: datacrumbs recover %s.spool writes it)" % path
            if os.path.isdir(path + ".spool") else ""))
    return by_func, by_file, by_proc, pids, end, state.get("closed")


def print_table(title, table, top):
    print("  %-40s %10s %14s %12s" % (title, "calls", "bytes", "time (us)"))
    rows = sorted(table.items(), key=lambda kv: (-kv[1][2], kv[0]))
    for k, (n, b, t) in rows[:top]:
        k = k if len(k) <= 40 else "..." + k[-37:]
        print("  %-40s %10d %14d %12d" % (k, n, b, t))
    if len(rows) > top:
        print("  ... %d more" % (len(rows) - top))


def summarize(path, top):
    by_func, by_file, by_proc, pids, end, closed = collect(path)
    print("%s: %d processes, %d calls%s%s" % (
        path, len(pids), sum(v[0] for v in by_func.values()),
        "" if end is None else ", %s lost" % end.get("lost", "?"),
        "" if closed else ", INCOMPLETE (no closing ']': the run was cut)"))
    for title, table in (("function", by_func), ("file", by_file), ("process", by_proc)):
        print_table(title, table, top)


def job_summary(label, paths, top):
    """One summary of a job's traces (paths): totals, per node, per rank (analysis.job_tables),
    then the function and file tables summed over the traces."""
    traces = [analysis.Trace(p) for p in paths]
    for t in traces:
        if not t.closed and not t.events:
            raise OSError(0, "%s: not a trace, or nothing readable in it" % t.path)
    total, nodes, procs = analysis.job_tables(traces)
    lost = [t.end.get("lost") for t in traces if t.end and isinstance(t.end.get("lost"), int)]
    cut = [os.path.basename(t.path) for t in traces if not t.closed]
    ranks = {(k[0], p["rank"]) for k, p in procs.items() if p["rank"] is not None}
    print("%s: %d traces, %d nodes, %d processes, %d ranks, %d calls, %s lost%s" % (
        label, len(traces), len(nodes), len(procs), len(ranks), total[0],
        sum(lost) if lost else "?",
        ", INCOMPLETE (no closing ']': the run was cut): " + " ".join(cut) if cut else ""))
    head = "%10s %14s %14s %12s" % ("calls", "bytes read", "bytes written", "time (us)")
    fmt = "%10d %14d %14d %12d"
    print("  %-40s %s" % ("job", head))
    print("  %-40s %s" % ("total", fmt % tuple(total)))
    print("  %-40s %s" % ("node", head))
    for node in sorted(nodes)[:top]:
        print("  %-40s %s" % (node if len(node) <= 40 else "..." + node[-37:],
                              fmt % tuple(nodes[node])))
    if len(nodes) > top:
        print("  ... %d more" % (len(nodes) - top))
    print("  %-6s %-24s %8s %s  %s" % ("rank", "node", "pid", head, "process"))
    order = sorted(procs.items(), key=lambda kv: (kv[1]["rank"] is None, kv[1]["rank"] or 0,
                                                  kv[0][0], kv[0][1], kv[0][2]))
    for (node, _, pid), p in order[:top]:
        node = node if len(node) <= 24 else "..." + node[-21:]
        print("  %-6s %-24s %8s %s  %s" % ("-" if p["rank"] is None else p["rank"], node, pid,
                                          fmt % tuple(p["figures"]), p["name"] or "-"))
    if len(order) > top:
        print("  ... %d more" % (len(order) - top))
    by_func, by_file = {}, {}
    for t in traces:
        f, fl = collect(t.path, t.meta + t.events, t.closed)[:2]
        for acc, table in ((by_func, f), (by_file, fl)):
            for k, v in table.items():
                a = acc.setdefault(k, [0, 0, 0])
                for i in range(3):
                    a[i] += v[i]
    print_table("function", by_func, top)
    print_table("file", by_file, top)


def main(argv):
    top = 10
    if "-h" in argv or "--help" in argv:
        print(__doc__)
        return 0
    if "--top" in argv:
        i = argv.index("--top")
        try:
            top = int(argv[i + 1])
        except (IndexError, ValueError):
            print("pfw_summary.py: --top needs a number", file=sys.stderr)
            return 2
        del argv[i:i + 2]
    jobs = []  # (label, trace paths) of each job asked for
    if "--job" in argv:
        i = argv.index("--job")
        if i + 1 >= len(argv) or not argv[i + 1].isdigit():
            print("pfw_summary.py: --job needs a job id (digits)", file=sys.stderr)
            return 2
        job = argv[i + 1]
        d = "."
        if i + 2 < len(argv) and os.path.isdir(argv[i + 2]):
            d = argv[i + 2]
            del argv[i + 2]
        del argv[i:i + 2]
        try:
            paths = analysis.job_files(job, d)
        except OSError as e:
            print("pfw_summary.py: %s: %s" % (d, e.strerror or e), file=sys.stderr)
            return 1
        if not paths:
            print("pfw_summary.py: no trace of job %s (%s.*-*.pfw.gz) in %s" % (job, job, d),
                  file=sys.stderr)
            return 1
        jobs.append(("job %s in %s" % (job, d), paths))
    bad = [a for a in argv if a.startswith("-")]
    if bad:
        print("pfw_summary.py: unknown option %s (see --help)" % bad[0], file=sys.stderr)
        return 2
    if not argv and not jobs:
        print(__doc__, file=sys.stderr)
        return 2
    rc = 0
    for p in argv:
        if os.path.isdir(p):
            paths = analysis.trace_files(p)
            if not paths:
                print("pfw_summary.py: %s: no trace (*.pfw, *.pfw.gz) in it" % p, file=sys.stderr)
                rc = 1
            else:
                jobs.append(("%s" % p, paths))
            continue
        try:
            summarize(p, top)
        except BrokenPipeError:
            raise
        except OSError as e:
            print("pfw_summary.py: %s: %s" % (p, e.strerror or e), file=sys.stderr)
            rc = 1
    for label, paths in jobs:
        try:
            job_summary(label, paths, top)
        except BrokenPipeError:
            raise
        except OSError as e:
            print("pfw_summary.py: %s: %s" % (label, e.strerror or e), file=sys.stderr)
            rc = 1
    return rc


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except BrokenPipeError:  # | head: the reader has what it wanted
        import os
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no flush error at exit
        sys.exit(0)
