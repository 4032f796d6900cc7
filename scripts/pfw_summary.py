#!/usr/bin/env python3
"""pfw_summary.py: a short summary of a DFTracer trace (.pfw or .pfw.gz, ours or
upstream's, complete or cut): calls, bytes and time per function, per file and per
process (MPI ranks by their "Rank N" names).

usage: pfw_summary.py [--top N] TRACE...
  --top N   rows per table (default 10)
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
import json
import os
import sys
import zlib

# the datacrumbs package: beside this script once installed, ../python in the source tree
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [p for p in (_here, os.path.join(_here, "..", "python"))
                if os.path.isdir(os.path.join(p, "datacrumbs"))]
from datacrumbs.analysis import counter_bytes, moved_bytes  # noqa: E402  (one rule for both)


def lines(path, state=None):
    """Yields the JSON lines of a trace; reads every gzip member, tolerates a cut end.
    state["closed"] is set when the trace ends with its "]"."""
    raw = open(path, "rb").read()
    if raw[:2] == b"\x1f\x8b":  # gzip members, whatever the file is called
        chunks, pos = [], 0
        while pos < len(raw):
            d = zlib.decompressobj(31)
            try:
                data = d.decompress(raw[pos:])
            except zlib.error:
                break
            if not d.eof:
                break  # a member cut by a kill: what it holds is not trusted
            chunks.append(data)
            pos = len(raw) - len(d.unused_data)
        raw = b"".join(chunks)
    text = raw.decode("utf-8", "replace")
    if state is not None:
        state["closed"] = text.endswith("\n]")
    for ln in text.split("\n"):
        ln = ln.strip()
        if ln.startswith("{"):
            try:
                yield json.loads(ln)
            except ValueError:
                pass  # a line cut by a kill


def summarize(path, top):
    files = {}
    by_func = collections.defaultdict(lambda: [0, 0, 0])
    by_file = collections.defaultdict(lambda: [0, 0, 0])
    by_proc = collections.defaultdict(lambda: [0, 0, 0])
    names = {}       # pid -> its last process_name
    pids, end = set(), None
    io_ids = set()   # (pid, tid, id) of events on a file (upstream repeats ids per thread)
    rows = []        # (pid, tid, p_idx, function key, file, bytes, dur)
    state = {}
    for e in lines(path, state):
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
            proc = "%s %s" % (pid, names.get(pid, ""))
            tables += [(f, by_file), (proc.strip(), by_proc)]
        for key, table in tables:
            t = table[key]
            t[0] += n
            t[1] += moved
            t[2] += dur
    print("%s: %d processes, %d calls%s%s" % (
        path, len(pids), sum(v[0] for v in by_func.values()),
        "" if end is None else ", %s lost" % end.get("lost", "?"),
        "" if state.get("closed") else ", INCOMPLETE (no closing ']': the run was cut)"))
    if not state.get("closed") and not rows:
        raise OSError(0, "not a trace, or nothing readable in it")
    for title, table in (("function", by_func), ("file", by_file), ("process", by_proc)):
        print("  %-40s %10s %14s %12s" % (title, "calls", "bytes", "time (us)"))
        rows = sorted(table.items(), key=lambda kv: (-kv[1][2], kv[0]))
        for k, (n, b, t) in rows[:top]:
            k = k if len(k) <= 40 else "..." + k[-37:]
            print("  %-40s %10d %14d %12d" % (k, n, b, t))
        if len(rows) > top:
            print("  ... %d more" % (len(rows) - top))


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
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    rc = 0
    for p in argv:
        try:
            summarize(p, top)
        except BrokenPipeError:
            raise
        except OSError as e:
            print("pfw_summary.py: %s: %s" % (p, e.strerror or e), file=sys.stderr)
            rc = 1
    return rc


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except BrokenPipeError:  # | head: the reader has what it wanted
        import os
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no flush error at exit
        sys.exit(0)
