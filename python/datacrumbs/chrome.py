"""datacrumbs.chrome: converts DFTracer traces (.pfw, .pfw.gz: datacrumbs' or upstream's)
to the Chrome trace format's JSON object form, which Perfetto, Catapult's trace viewer,
the DevTools Performance panel and speedscope open.

usage: datacrumbs convert --chrome [-o OUT.json] TRACE...
       (python3 -m datacrumbs.chrome [-o OUT.json] TRACE...)

A .pfw.gz holds one JSON object a line with no commas between them (the format contract
of DFTracer's line readers), which the Chrome viewers refuse; the output here is one
strict JSON document {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}:
- complete events keep name, cat, pid, tid, ts, dur and args; fhash and hhash are
  replaced by `file` and `host` (the FH and HH records' strings); a call's end is cut to
  its parent's (p_idx) where the rounding to microseconds put it up to 2 us later, so that
  viewers building stacks from times see the nesting the trace has; and where rounding
  to microseconds made a call start at its parent's end or with its sibling, its start and
  end move by nanoseconds so that the nesting by time is the nesting by p_idx
  (exact_nesting); times are microseconds since otherData.ts_origin_us (the first event:
  a double holds nanoseconds only that close to its origin);
- process_name and thread_name become the Chrome metadata records (args {"name": ...});
  an MPI rank's process is sorted by its rank (process_sort_index);
- profile mode counters carry numbers only: the file goes into the counter's name
  ("write /path/x"), the args keep count, dur_*, size_*;
- the tracer's start and end records stay as events (dur 0), their figures (num_events,
  lost, dropped, ...) are also in otherData, with the host and the command line.
Several traces go into one document (one job's traces, one per node and job step). A
trace whose pids or tids were already used by an earlier trace of the document (the same
pid on two nodes) gets new ones, from PID_BASE up (above any Linux pid: pid_max is at most
2^22, proc(5)), for all its processes and threads; when the traces have more than one
node, each process is labelled with its node and its own pid ("n4 pid 3895", process_labels).
Output to stdout without -o. Standard library only."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from datacrumbs import analysis  # noqa: E402

NUMERIC = (int, float)
PID_BASE = 1 << 22  # PID_MAX_LIMIT (include/linux/threads.h): no real pid is this high


def clamped_ends(events):
    """(pid, tid, id) -> the end (ts + dur) of each complete event, cut to its parent's end
    (p_idx) where rounding put it later: ts and dur are each rounded down from nanoseconds,
    so a child can seem to end up to 2 us after its parent, which viewers that build call
    stacks from times alone (speedscope, the DevTools engine) read as a broken stack.
    Upstream's ids repeat, so its p_idx is not followed (their events are kept as they are)."""
    by = {}
    for e in events:
        if e.get("ph") == "X" and "id" in e:
            by[(e.get("pid"), e.get("tid"), e["id"])] = e
    ends = {}

    def end(k, depth=0):
        if k in ends:
            return ends[k]
        e = by[k]
        a = e.get("args") or {}
        v = e.get("ts", 0) + e.get("dur", 0)
        pk = (k[0], k[1], a.get("p_idx"))
        p = by.get(pk)
        if p is not None and depth < 64 and (p.get("args") or {}).get("level", 0) + 1 == a.get("level"):
            v = min(v, end(pk, depth + 1))
        ends[k] = v
        return v

    for k in by:
        end(k)
    return ends


def exact_nesting(xs):
    """Makes the nesting by time equal the nesting by p_idx, for the viewers that only have
    times: ts and dur are whole microseconds, each rounded down, so a call can seem to start
    at its parent's end or together with its sibling. Per thread whose every p_idx names an
    event one level up (datacrumbs' traces; not upstream's, whose parents are often not
    written), the call tree is walked in order and each start and end gets a time in
    nanoseconds: its own microsecond, or 1 ns after the previous boundary, whichever is
    later. Events of other threads keep their times. Sorts xs by start."""
    threads = {}
    for e in xs:
        threads.setdefault((e["pid"], e["tid"]), []).append(e)
    for evs in threads.values():
        by = {e["id"]: e for e in evs if "id" in e}
        kids, roots, ok = {}, [], True
        for e in evs:
            a = e["args"]
            pi = a.get("p_idx", -1)
            if not isinstance(pi, int) or pi < 0:
                roots.append(e)
                continue
            p = by.get(pi)
            if p is None or p["args"].get("level", 0) + 1 != a.get("level"):
                ok = False
                break
            kids.setdefault(pi, []).append(e)
        if not ok:
            continue
        order = lambda e: (e["ts"], -e["dur"], e.get("id", 0))  # noqa: E731
        last = [None]

        def at(us):
            v = us * 1000
            if last[0] is not None and v <= last[0]:
                v = last[0] + 1
            last[0] = v
            return v

        stack = [(e, False) for e in sorted(roots, key=order, reverse=True)]
        starts = {}
        while stack:
            e, done = stack.pop()
            if done:
                b = starts[id(e)]
                end = at(e["ts"] + e["dur"])
                e["ts"], e["dur"] = b / 1000.0, (end - b) / 1000.0
                continue
            starts[id(e)] = at(e["ts"])
            stack.append((e, True))
            for c in sorted(kids.get(e.get("id"), []), key=order, reverse=True):
                stack.append((c, False))
    xs.sort(key=lambda e: (e["ts"], -e["dur"]))


def ids_of(t):
    """Every pid and tid a trace's records name."""
    ids = set()
    for e in t.meta + t.events + [r for r in (t.start, t.end) if r]:
        for k in ("pid", "tid"):
            if isinstance(e.get(k), int):
                ids.add(e[k])
    return ids


def id_maps(traces):
    """Per trace, {pid or tid: the one in the document}: the identity, or, for a trace that
    shares a pid or tid with an earlier one, new ids from PID_BASE up for all of its ids."""
    used, maps, nxt = set(), [], PID_BASE
    for t in traces:
        ids = ids_of(t)
        if ids & used:
            m = {}
            for i in sorted(ids):
                m[i] = nxt
                nxt += 1
        else:
            m = {i: i for i in ids}
        used |= set(m.values())
        maps.append(m)
    return maps


def convert(paths):
    """The Chrome trace document (a dict) of the traces at `paths`."""
    out, other = [], {"source": "datacrumbs", "traces": []}
    traces = [analysis.Trace(p) for p in analysis.trace_files(paths)]
    maps = id_maps(traces)
    several = len({t.node for t in traces}) > 1
    for t, idmap in zip(traces, maps):
        path = t.path
        first = len(out)
        info = {"file": path, "complete": t.closed, "hosts": sorted(set(t.hosts.values()))}
        for rec, key in ((t.start, "start"), (t.end, "end")):
            if rec is not None:
                r = {}
                for k, v in rec.items():
                    if k in ("cmd_hash", "exec_hash"):
                        r[k[:-5]] = t.strings.get(v, v)
                    elif k == "cwd":
                        r[k] = t.files.get(v, v)
                    elif k != "hhash":
                        r[k] = v
                info[key] = r
        other["traces"].append(info)
        for m in t.meta:
            n = m.get("name")
            if n in ("process_name", "thread_name"):
                out.append({"name": n, "ph": "M", "pid": m.get("pid"), "tid": m.get("tid"),
                            "args": {"name": (m.get("args") or {}).get("name")}})
        for pid, rank in sorted(t.ranks.items()):
            out.append({"name": "process_sort_index", "ph": "M", "pid": pid, "tid": pid,
                        "args": {"sort_index": rank}})
        pids = sorted({e.get("pid") for e in t.meta + t.events if isinstance(e.get("pid"), int)}
                      | set(t.ranks))
        for pid in pids:
            labels = (["rank %d" % t.ranks[pid]] if pid in t.ranks else []) + (
                ["%s pid %d" % (t.node or "-", pid)] if several else [])
            if labels:
                out.append({"name": "process_labels", "ph": "M", "pid": pid, "tid": pid,
                            "args": {"labels": ", ".join(labels)}})
        for tag, rec in (("start", t.start), ("end", t.end)):
            if rec is not None:
                out.append({"name": tag, "cat": "datacrumbs", "ph": "X", "pid": rec["pid"],
                            "tid": rec["pid"], "ts": rec["ts"], "dur": 0,
                            "args": {k: v for k, v in info[tag].items() if k not in ("ts", "pid")}})
        ends = clamped_ends(t.events)
        for e in t.events:
            a = e.get("args") or {}
            if e.get("ph") == "C":
                f = t.file(a)
                out.append({"name": e.get("name") + (" " + f if f else ""), "cat": e.get("cat"),
                            "ph": "C", "pid": e.get("pid"), "tid": e.get("tid"),
                            "ts": e.get("ts"),
                            "args": {k: v for k, v in a.items()
                                     if isinstance(v, NUMERIC) and not isinstance(v, bool)
                                     and k not in ("hhash", "fhash")}})
                continue
            args = {}
            for k, v in a.items():
                if k == "hhash":
                    continue
                if k == "fhash":
                    args["file"] = t.files.get(v, v)
                else:
                    args[k] = v
            ts = e.get("ts", 0)
            end = ends.get((e.get("pid"), e.get("tid"), e.get("id")), ts + e.get("dur", 0))
            ev = {"name": e.get("name"), "cat": e.get("cat"), "ph": "X", "pid": e.get("pid"),
                  "tid": e.get("tid"), "ts": ts, "dur": max(0, end - ts), "args": args}
            if "id" in e:
                ev["id"] = e["id"]
            out.append(ev)
        for e in out[first:]:  # this trace's records: its pids and tids in the document
            for k in ("pid", "tid"):
                if e.get(k) in idmap:
                    e[k] = idmap[e[k]]
    xs = [e for e in out if e["ph"] == "X"]
    origin = min([e["ts"] for e in out if isinstance(e.get("ts"), int)] or [0])
    other["ts_origin_us"] = origin
    for e in out:
        if isinstance(e.get("ts"), int):
            e["ts"] -= origin  # whole microseconds still: exact
    exact_nesting(xs)
    for e in xs:
        e["ts"], e["dur"] = round(e["ts"], 3), round(e["dur"], 3)
    return {"traceEvents": [e for e in out if e["ph"] != "X"] + xs, "displayTimeUnit": "ms",
            "otherData": other}


def dump(doc, f):
    json.dump(doc, f, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


USAGE = "usage: datacrumbs convert --chrome [-o OUT.json] TRACE...  (see --help)"


def main(argv):
    if "-h" in argv or "--help" in argv:
        print(__doc__)
        return 0
    if "--chrome" not in argv:
        print(USAGE + "\n(--chrome: the only output format so far)", file=sys.stderr)
        return 2
    argv = [a for a in argv if a != "--chrome"]
    out = None
    if "-o" in argv:
        i = argv.index("-o")
        if i + 1 >= len(argv):
            print(USAGE, file=sys.stderr)
            return 2
        out = argv[i + 1]
        del argv[i:i + 2]
    if not argv or any(a.startswith("-") for a in argv):
        print(USAGE, file=sys.stderr)
        return 2
    for p in argv:
        if not os.path.exists(p):
            print("datacrumbs convert: %s: no such file or directory" % p, file=sys.stderr)
            return 1
    doc = convert(argv)
    if out:
        with open(out, "w", encoding="utf-8") as f:
            dump(doc, f)
    else:
        dump(doc, sys.stdout)
        sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
