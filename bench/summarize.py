#!/usr/bin/env python3
"""summarize.py: the tables of bench/run.sh from its raw results (one run per line,
key=value pairs). usage: summarize.py results.txt. Standard library only.
Figures are compared within one invocation only: bare and traced runs side by side."""
import statistics
import sys


# ring buffer bytes per call record without a path: 8 bytes of header + struct dc_event
# (bpf/datacrumbs.h, 120 bytes)
RECORD = 128


def parse_size(s):
    return int(s[:-1]) << {"K": 10, "M": 20, "G": 30}[s[-1]] if s[-1] in "KMG" else int(s)


def load(path):
    runs = []
    for line in open(path):
        kv = dict(p.split("=", 1) for p in line.split())
        for k, v in kv.items():
            try:
                kv[k] = int(v)
            except ValueError:
                pass
        runs.append(kv)
    return runs


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def main(path):
    runs = load(path)
    rounds = sorted({r["round"] for r in runs if r["round"] != "tp"})
    rows = {}  # variant -> list of per-round dicts
    for rd in rounds:
        this = [r for r in runs if r["round"] == rd]
        # the faster of the round's two bare runs: another tracer's uprobes on the same libc
        # functions (a test running meanwhile) slow every process, traced or not
        bare = [r["elapsed_ns"] / r["calls"] for r in this if r["variant"] == "bare"]
        base = min(bare)
        if max(bare) > 2000:
            print("WARNING: round %s: a bare loop took %.1f us per call: another tracer's "
                  "uprobes were attached to libc meanwhile; this round is noisy" % (rd, max(bare) / 1e3))
        added = {}
        for r in this:
            if r["variant"] == "bare":
                continue
            per = r["elapsed_ns"] / r["calls"]
            added[r["variant"]] = per - base
            d = {"round": rd, "bare": base, "per": per, "added": per - base,
                 "attach": (r["start_ns"] - r["t0"]) / 1e9, "detach": (r["t1"] - r["end_ns"]) / 1e9,
                 "rss": r["maxrss_kb"] / 1024}
            if "events" in r:
                d["cpu_ev"] = r["parent_cpu_ns"] / max(r["events"], 1)
                d["lost"] = r["lost"]
            rows.setdefault(r["variant"], []).append(d)
        bt = added.get("bpftrace")
        for v in ("dc_nocb", "dc_io_posix"):
            if v in added and bt:
                rows[v][-1]["ratio"] = added[v] / bt

    print("\nper-call overhead (loop of write(/dev/null, 64 B) + pread(file, 64 B, 0)); "
          "median of %d rounds" % len(rounds))
    print("  %-12s %10s %10s %10s %12s %9s %9s %9s %5s" % (
        "variant", "bare us", "traced us", "added us", "vs bpftrace", "attach s", "detach s",
        "peak MiB", "lost"))
    for v in ("bpftrace", "dc_nocb", "dc_io_posix"):
        rs = rows.get(v, [])
        if not rs:
            continue
        ratio = med([r["ratio"] for r in rs if "ratio" in r])
        print("  %-12s %10.2f %10.2f %10.2f %12s %9.1f %9.1f %9.1f %5s" % (
            v, med([r["bare"] for r in rs]) / 1e3, med([r["per"] for r in rs]) / 1e3,
            med([r["added"] for r in rs]) / 1e3,
            "1.00" if v == "bpftrace" else "%.2f" % ratio,
            med([r["attach"] for r in rs]), med([r["detach"] for r in rs]),
            max(r["rss"] for r in rs),
            "-" if v == "bpftrace" else str(max(r["lost"] for r in rs))))
    for v in ("dc_nocb", "dc_io_posix"):
        rs = rows.get(v, [])
        if rs:
            rt = [r["ratio"] for r in rs if "ratio" in r]
            print("  %s/bpftrace added time per round: %s -> median %.2f (target <= 1.2: %s)" % (
                v, " ".join("%.2f" % x for x in rt), med(rt),
                "met" if med(rt) <= 1.2 else "NOT met"))
    cpu = {v: med([r["cpu_ev"] for r in rows.get(v, []) if "cpu_ev" in r])
           for v in ("dc_nocb", "dc_io_posix")}
    print("  tracer CPU per event, user side (ring buffer -> [Lua] -> gzip): nocb %.2f us, "
          "io_posix %.2f us; the Lua callback adds %.2f us per event" % (
              cpu["dc_nocb"] / 1e3, cpu["dc_io_posix"] / 1e3,
              (cpu["dc_io_posix"] - cpu["dc_nocb"]) / 1e3))

    tp = [r for r in runs if r["round"] == "tp"]
    if tp:
        print("\nthroughput of the user side (cb.lua: write+pread with a Lua callback), "
              "loop of %d iterations per process" % (tp[0]["calls"] // 2 // tp[0]["procs"]))
        print("  %5s %7s %11s %11s %13s %8s %8s %12s %9s" % (
            "procs", "buffer", "offered/s", "written/s", "sustained>=/s", "lost", "lost %",
            "CPU us/event", "peak MiB"))
        for r in tp:
            s = r["elapsed_ns"] / 1e9
            # with no loss, the consumer took at least (events - what the buffer holds) while
            # the loop ran: a write or pread record is RECORD bytes of ring buffer
            cap = parse_size(r["buffer"]) // RECORD
            sus = "%.0f" % (max(r["events"] - cap, 0) / s) if r["lost"] == 0 else "-"
            print("  %5d %7s %11.0f %11.0f %13s %8d %7.1f%% %12.2f %9.1f" % (
                r["procs"], r["buffer"], r["calls"] / s, r["events"] / s, sus, r["lost"],
                100.0 * r["lost"] / max(r["events"] + r["lost"], 1),
                r["parent_cpu_ns"] / max(r["events"], 1) / 1e3, r["maxrss_kb"] / 1024))
        ok = [r for r in tp if r["lost"] == 0]
        if ok:
            best = max(ok, key=lambda r: r["events"] / r["elapsed_ns"])
            print("  highest rate with no loss: %.0f events/s (procs=%d, buffer=%s)" % (
                best["events"] / best["elapsed_ns"] * 1e9, best["procs"], best["buffer"]))
        for buf in sorted({r["buffer"] for r in tp}, key=lambda b: [r["buffer"] for r in tp].index(b)):
            rs = [r for r in tp if r["buffer"] == buf]
            rate = lambda r: r["calls"] / r["elapsed_ns"] * 1e9  # noqa: E731
            lossy = [rate(r) for r in rs if r["lost"] > 0]
            clean = [rate(r) for r in rs if r["lost"] == 0]
            print("  buffer %5s: %s" % (buf, (
                "loss at %.0f events/s offered" % min(lossy) if lossy else
                "no loss up to %.0f events/s offered" % max(clean))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
