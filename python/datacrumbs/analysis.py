"""datacrumbs.analysis: reads DFTracer traces (.pfw, .pfw.gz; datacrumbs' and the upstream
DFTracer writer's, complete or cut by a kill) with paths, hosts and names resolved.

    from datacrumbs import analysis
    df = analysis.load(["a.pfw.gz", "b.pfw.gz"])          # a pandas DataFrame
    ddf = analysis.load_dask("traces/", client=client)   # a Dask DataFrame, one part a file

The columns follow the upstream DFTracer analyzer's where it has one (name, cat, pid, tid,
ts, dur, te, trange, hostname, filename, size, fhash, hhash, index), plus ph, level,
p_idx, count, offset, ret, proc_name (the last process_name of the pid), rank (-1 when
not an MPI rank), calls (1 for a complete event, count for a profile mode counter) and
trace (the file the row came from), node (the trace's node: its `node` PR record, else
its host). `size` is the bytes the call moved
(pfw_summary.py's rule); for a counter, size_sum. The tracer's own records (start, end)
are not rows: Trace.start and Trace.end hold them.

The record reader (records(), Trace) needs only the standard library; load() needs
pandas, load_dask() dask and distributed."""
import json
import os
import re
import zlib

TRACER_CATS = ("datacrumbs", "dftracer")
# calls without a count whose ret is the bytes they moved (printf(3), getline(3))
RET_IS_BYTES = {"fprintf", "vfprintf", "getline", "getdelim"}
# the calls whose bytes moved are read, and written, by the layers' names (probes/*.yaml);
# a call on two files (`fhash2`: copy_file_range, sendfile, splice) reads and writes them
READS = frozenset((
    "read", "pread", "pread64", "readv", "preadv", "preadv2", "fread", "fgets", "getline",
    "getdelim", "fgetc", "getc", "__read", "__libc_read", "__pread64", "__read_nocancel",
    "sys_read", "sys_pread64", "sys_readv", "sys_preadv", "sys_preadv2", "vfs_read",
    "MPI_File_read", "MPI_File_read_at", "MPI_File_read_all", "MPI_File_read_at_all",
    "MPI_File_iread", "MPI_File_iread_at", "MPI_File_read_shared", "MPI_File_read_ordered",
    "MPI_File_iread_all", "MPI_File_iread_at_all", "preadv64", "__pread64_nocancel",
    "vfs_readv", "vfs_iter_read", "io_uring_read", "io_uring_readv", "io_uring_read_fixed",
    "io_uring_readv_fixed", "aio_pread", "aio_preadv"))
WRITES = frozenset((
    "write", "pwrite", "pwrite64", "writev", "pwritev", "pwritev2", "fwrite", "fputs",
    "fprintf", "vfprintf", "fputc", "putc", "__write", "__libc_write", "__pwrite64",
    "__write_nocancel", "sys_write", "sys_pwrite64", "sys_writev", "sys_pwritev",
    "sys_pwritev2", "vfs_write", "MPI_File_write", "MPI_File_write_at",
    "MPI_File_write_all", "MPI_File_write_at_all", "MPI_File_iwrite", "MPI_File_iwrite_at",
    "MPI_File_write_shared", "MPI_File_write_ordered", "io_uring_write", "io_uring_writev",
    "MPI_File_iwrite_all", "MPI_File_iwrite_at_all", "pwritev64", "vfs_writev",
    "vfs_iter_write", "io_uring_write_fixed", "io_uring_writev_fixed", "aio_pwrite",
    "aio_pwritev"))
# the tracer's metadata records of a site trace (datacrumbs step): PR records, once a trace
SITE_KEYS = ("job_id", "step_id", "node", "user")
# a job step's trace as the site tracer names it: <jobid>.<stepid>-<node>.pfw.gz
JOB_FILE = re.compile(r"^(?P<job>[0-9]+)\.(?P<step>[0-9]+|batch)-(?P<node>.+)\.pfw\.gz$")


def raw_text(path, state=None):
    """The decompressed text of a trace: every complete gzip member (a member cut by a kill
    is not trusted), or the plain file. state["closed"]: it ends with its "]"."""
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        chunks, pos = [], 0
        while pos < len(raw):
            d = zlib.decompressobj(31)
            try:
                data = d.decompress(raw[pos:])
            except zlib.error:
                break
            if not d.eof:
                break
            chunks.append(data)
            pos = len(raw) - len(d.unused_data)
        raw = b"".join(chunks)
    text = raw.decode("utf-8", "replace")
    if state is not None:
        state["closed"] = text.endswith("\n]") or text.endswith("\n]\n")
    return text


def records(path, state=None):
    """Yields the JSON objects of a trace, one a line. Lines that are not JSON (a line cut
    by a kill) are skipped and counted in state["bad_lines"]. A trailing comma (a trace
    some other tool made strict) is accepted."""
    if state is None:
        state = {}
    state.setdefault("bad_lines", 0)
    for ln in raw_text(path, state).split("\n"):
        ln = ln.strip()
        if ln.endswith(","):
            ln = ln[:-1]
        if not ln.startswith("{"):
            continue
        try:
            yield json.loads(ln)
        except ValueError:
            state["bad_lines"] += 1


def moved_bytes(a, name=None):
    """The bytes a complete event's call moved, 0 when unknown: an MPI-IO call's `bytes`,
    fread/fwrite's ret x size, fprintf's and getline's ret, else ret when 0 < ret <= count."""
    ret = a.get("ret")
    if isinstance(a.get("bytes"), int):
        return max(a["bytes"], 0)
    if not isinstance(ret, int) or ret <= 0:
        return 0
    if isinstance(a.get("nmemb"), int) and isinstance(a.get("size"), int):
        return ret * a["size"]
    if name in RET_IS_BYTES:
        return ret
    count = a.get("count")
    return ret if isinstance(count, int) and ret <= count else 0


class Trace:
    """One trace read whole: hosts, files and strings by hash, process names and ranks by
    pid, events (complete and counter, file order, the tracer's own excluded), start and
    end (the tracer's records' args, or None), closed (has its "]"), bad_lines, site (the
    site tracer's job_id, step_id, node, user records: {key: value}, docs/trace-format.md)
    and node (site["node"], else the host name of the start record, else the only host)."""

    def __init__(self, path):
        self.path = path
        self.hosts, self.files, self.strings = {}, {}, {}
        self.proc_names, self.thread_names, self.ranks = {}, {}, {}
        self.events, self.start, self.end = [], None, None
        self.meta, self.site = [], {}
        state = {}
        for e in records(path, state):
            a = e.get("args") or {}
            ph = e.get("ph")
            if ph == "M":
                self.meta.append(e)
                n = e.get("name")
                table = {"HH": self.hosts, "FH": self.files, "SH": self.strings}.get(n)
                if table is not None:
                    table[a.get("value")] = a.get("name")
                elif n == "process_name":
                    self.proc_names[e.get("pid")] = a.get("name")
                elif n == "thread_name":
                    self.thread_names[(e.get("pid"), e.get("tid"))] = a.get("name")
                elif n == "PR" and a.get("name") == "rank":
                    try:
                        self.ranks[e.get("pid")] = int(a.get("value"))
                    except (TypeError, ValueError):
                        pass
                elif n == "PR" and a.get("name") in SITE_KEYS:
                    self.site[a["name"]] = a.get("value")
                continue
            if e.get("cat") in TRACER_CATS and e.get("name") in ("start", "end"):
                setattr(self, e["name"], dict(a, ts=e.get("ts"), pid=e.get("pid")))
                continue
            if ph in ("X", "C"):
                self.events.append(e)
        self.closed = state.get("closed", False)
        self.bad_lines = state["bad_lines"]
        # the node: the site tracer's `node` record, else the host of the tracer's start
        # record, else the one host the trace names (None when it names none or several)
        hosts = set(self.hosts.values())
        self.node = (self.site.get("node") or self.hosts.get((self.start or {}).get("hhash"))
                     or (hosts.pop() if len(hosts) == 1 else None))

    def file(self, a):
        return self.files.get(a.get("fhash")) if a.get("fhash") else None

    def host(self, a):
        return self.hosts.get(a.get("hhash"))

    def rows(self, time_granularity=1e6):
        """One dict per event, the loader's columns (module doc)."""
        out = []
        for e in self.events:
            a = e.get("args") or {}
            pid = e.get("pid")
            ts = int(e.get("ts", 0))
            counter = e.get("ph") == "C"
            dur = int(a.get("dur_sum", 0)) if counter else int(e.get("dur", 0))
            out.append({
                "index": e.get("id", -1) if not counter else -1,
                "name": e.get("name"), "cat": e.get("cat"), "ph": e.get("ph"),
                "pid": pid, "tid": e.get("tid"), "ts": ts, "dur": dur, "te": ts + dur,
                "trange": int((ts + dur / 2.0) / time_granularity),
                "hostname": self.host(a), "filename": self.file(a),
                "size": int(a.get("size_sum", 0)) if counter else moved_bytes(a, e.get("name")),
                "calls": int(a.get("count", 0)) if counter else 1,
                "count": a.get("count", -1) if not counter else -1,
                "offset": a.get("offset", -1), "ret": a.get("ret", -1),
                "level": a.get("level", -1), "p_idx": a.get("p_idx", -1),
                "fhash": a.get("fhash"), "hhash": a.get("hhash"),
                "proc_name": self.proc_names.get(pid), "rank": self.ranks.get(pid, -1),
                "trace": self.path, "node": self.node,
            })
        return out


COLUMNS = {"index": "int64", "name": "object", "cat": "object", "ph": "object",
           "pid": "int64", "tid": "int64", "ts": "int64", "dur": "int64", "te": "int64",
           "trange": "int64", "hostname": "object", "filename": "object", "size": "int64",
           "calls": "int64", "count": "int64", "offset": "int64", "ret": "int64",
           "level": "int64", "p_idx": "int64", "fhash": "object", "hhash": "object",
           "proc_name": "object", "rank": "int64", "trace": "object", "node": "object"}


def trace_files(paths):
    """Trace paths from files and directories (their *.pfw and *.pfw.gz, sorted)."""
    if isinstance(paths, str):
        paths = [paths]
    out = []
    for p in paths:
        if os.path.isdir(p):
            out += sorted(os.path.join(p, f) for f in os.listdir(p)
                          if f.endswith(".pfw") or f.endswith(".pfw.gz"))
        else:
            out.append(p)
    return out


def job_files(job, directory="."):
    """The traces of job `job` (a job id, digits) in `directory`: the files named
    <job>.<step>-<node>.pfw.gz (step a number or "batch", JOB_FILE), sorted by name. Files
    of other jobs are not included. Raises ValueError when job is not a job id, OSError
    when the directory cannot be read."""
    if not re.fullmatch(r"[0-9]+", str(job)):
        raise ValueError("not a job id (digits): %r" % (job,))
    out = []
    for f in sorted(os.listdir(directory)):
        m = JOB_FILE.match(f)
        if m and m.group("job") == str(job) and os.path.isfile(os.path.join(directory, f)):
            out.append(os.path.join(directory, f))
    return out


def direction(name, args):
    """(reads, writes): whether a complete event's moved bytes were read, written (both
    for a call on two files, args["fhash2"])."""
    if args.get("fhash2"):
        return True, True
    return name in READS, name in WRITES


def top_level(trace):
    """The trace's events not made by another event on a file (a write and the sys_write
    under it count once; the rule of pfw_summary.py's file and process tables): counters
    and events whose parent (pid, tid, p_idx) is no event with a file. Yields events."""
    on_file = {(e.get("pid"), e.get("tid"), e.get("id")) for e in trace.events
               if e.get("ph") == "X" and (e.get("args") or {}).get("fhash")}
    for e in trace.events:
        a = e.get("args") or {}
        if e.get("ph") == "C" or (e.get("pid"), e.get("tid"), a.get("p_idx")) not in on_file:
            yield e


def job_tables(traces):
    """A job's figures from its traces (Trace objects, one per node and job step):
    (total, nodes, procs). Each is [calls, bytes read, bytes written, time (us)] of the
    events top_level() keeps (a counter: its `count` calls, `size_sum` bytes asked, dur_sum).
    total is one list; nodes {node: list}; procs {(node, trace path, pid): dict(rank=N or
    None, name=process_name, figures=list)}: a process is known by its node and trace, as
    pids of different nodes (and ids, which are unique per pid per trace) may be equal."""
    total = [0, 0, 0, 0]
    nodes, procs = {}, {}
    for t in traces:
        node = t.node or "-"
        nodes.setdefault(node, [0, 0, 0, 0])
        for e in top_level(t):
            a = e.get("args") or {}
            pid = e.get("pid")
            if e.get("ph") == "C":
                n, b, dur = int(a.get("count", 0)), int(a.get("size_sum", 0)), int(a.get("dur_sum", 0))
            else:
                n, b, dur = 1, moved_bytes(a, e.get("name")), int(e.get("dur", 0))
            r, w = direction(e.get("name"), a)
            key = (node, t.path, pid)
            if key not in procs:
                procs[key] = {"rank": t.ranks.get(pid), "name": t.proc_names.get(pid),
                              "figures": [0, 0, 0, 0]}
            for fig in (total, nodes[node], procs[key]["figures"]):
                fig[0] += n
                fig[1] += b if r else 0
                fig[2] += b if w else 0
                fig[3] += dur
    return total, nodes, procs


def _frame(rows):
    import pandas as pd
    df = pd.DataFrame(rows, columns=list(COLUMNS))
    for c, t in COLUMNS.items():
        if t == "int64":
            df[c] = pd.to_numeric(df[c], errors="coerce").fillna(-1).astype("int64")
    return df


def load_one(path, time_granularity=1e6):
    """One trace as a pandas DataFrame."""
    return _frame(Trace(path).rows(time_granularity))


def load(paths, time_granularity=1e6):
    """Traces (files, directories) as one pandas DataFrame, in file order."""
    import pandas as pd
    frames = [load_one(p, time_granularity) for p in trace_files(paths)]
    if not frames:
        return _frame([])
    return pd.concat(frames, ignore_index=True)


def load_dask(paths, client=None, time_granularity=1e6):
    """Traces as a Dask DataFrame, one partition per file, read in parallel by the
    workers of `client` (a dask.distributed Client; without one, Dask's default
    scheduler)."""
    import dask
    import dask.dataframe as dd
    files = trace_files(paths)
    meta = _frame([])
    parts = [dask.delayed(load_one)(p, time_granularity) for p in files]
    ddf = dd.from_delayed(parts, meta=meta) if parts else dd.from_pandas(meta, npartitions=1)
    return ddf
