"""ior_summary.py: the table of bench/ior.sh from its results.txt (one run per line,
key=value): per transfer size and variant, IOR's own time (write + read totals, median of
the rounds), its ratio to the bare run of the same round (median over rounds, and each
round's), the whole wall time (the launcher's start to the trace or log closed), events and
loss of datacrumbs' traces, peak RSS; then the paired differences that issue 32 bounds
(datacrumbs minus Darshan or DXT, in units of the bare run, median over rounds) and the
wall-time ratios to them. Usage: ior_summary.py RESULTS"""
import statistics
import sys

runs = []
for line in open(sys.argv[1]):
    kv = dict(f.split("=", 1) for f in line.split() if "=" in f)
    if "ior_s" in kv:
        runs.append(kv)
for x in dict.fromkeys(r["xfer"] for r in runs):
    rs = [r for r in runs if r["xfer"] == x]
    bare = {r["round"]: float(r["ior_s"]) for r in rs if r["variant"] == "bare"}
    print("\nIOR -t %s, %d rounds (ratio: IOR's time / the bare run's of the same round)" % (
        x, len(bare)))
    print("  %-9s %9s %7s  %-34s %8s %9s %8s %9s" % ("variant", "IOR s", "ratio", "per round",
                                                     "wall s", "events", "lost", "peak MiB"))
    for v in dict.fromkeys(r["variant"] for r in rs):
        vr = [r for r in rs if r["variant"] == v]
        rat = [float(r["ior_s"]) / bare[r["round"]] for r in vr if bare.get(r["round"])]
        ev = [r["events"] for r in vr]
        lost = [r["lost"] for r in vr]
        print("  %-9s %9.4f %7.2f  %-34s %8.3f %9s %8s %9.1f" % (
            v, statistics.median(float(r["ior_s"]) for r in vr),
            statistics.median(rat) if rat else float("nan"),
            " ".join("%.2f" % q for q in rat),
            statistics.median(float(r.get("wall_s", "nan")) for r in vr),
            ev[0] if len(set(ev)) == 1 else "/".join(ev),
            lost[0] if len(set(lost)) == 1 else "/".join(lost),
            statistics.median(int(r["maxrss_kb"]) for r in vr) / 1024))
    by = {(r["variant"], r["round"]): r for r in rs}
    print("  paired (median over rounds of (A - B) / bare; wall: median of A's / B's):")
    for a_, b_ in (("dc_posix", "dxt"), ("dc_live", "dxt"), ("dc_prof", "darshan"),
                   ("dc_posix", "darshan")):
        d, w = [], []
        for rd, bt in bare.items():
            ra, rb = by.get((a_, rd)), by.get((b_, rd))
            if ra and rb and bt:
                d.append((float(ra["ior_s"]) - float(rb["ior_s"])) / bt)
                if "wall_s" in ra and "wall_s" in rb:
                    w.append(float(ra["wall_s"]) / float(rb["wall_s"]))
        if d:
            print("    %-8s - %-8s %+.3f   wall %.3f" % (a_, b_, statistics.median(d),
                                                        statistics.median(w) if w else
                                                        float("nan")))
    busy = [r for r in rs if r.get("tracers", "none") != "none"]
    if busy:
        print("  warning: %d runs started with another tracer's process running: %s" % (
            len(busy), " ".join(sorted({r["tracers"] for r in busy}))))
