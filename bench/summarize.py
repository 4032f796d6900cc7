#!/usr/bin/env python3
"""summarize.py: the tables of bench/run.sh from its raw results (one run per line,
key=value pairs). usage: summarize.py results.txt. Standard library only.
Figures are compared within one invocation only: bare and traced runs side by side."""
import statistics
import sys


# ring buffer bytes per call record without a path: 8 bytes of header + struct dc_event
# (bpf/datacrumbs.h, 128 bytes since its flags field; 120 before)
RECORD = 136


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


# overhead variants in table order, and the peer each is compared with ("vs peer"): the
# POSIX layer (write and pread served by the raw_syscalls tracepoints) and the SYSCALL
# layer against bpftrace's syscall-tracepoint pair on the same calls; the POSIX layer by
# uprobes (mechanism = "uprobe") against bpftrace's uprobe + uretprobe pair (a reference
# row: what the uprobe way costs); the STDIO layer (session uprobes) against bpftrace's
# pair on fwrite
VARIANTS = ("bpftrace", "dc_nocb_uprobe", "bpftrace_tp", "dc_nocb", "dc_io_posix", "dc_prof",
            "dc_sys", "dc_prof_sys", "bpftrace_fw", "dc_stdio")
PEER = {"dc_nocb_uprobe": "bpftrace", "dc_nocb": "bpftrace_tp", "dc_io_posix": "bpftrace_tp",
        "dc_prof": "bpftrace_tp", "dc_sys": "bpftrace_tp", "dc_prof_sys": "bpftrace_tp",
        "dc_stdio": "bpftrace_fw"}
# the most datacrumbs' added time may be, as a multiple of its peer's: issue 11 (POSIX
# write+pread <= 1.3x bpftrace's syscall-tracepoint pair, STDIO fwrite <= 1.2x bpftrace's
# uprobe pair); the bench's earlier target, 1.2, for the uprobe POSIX and SYSCALL rows
TARGET = {"dc_nocb": 1.3, "dc_io_posix": 1.3, "dc_stdio": 1.2, "dc_nocb_uprobe": 1.2,
          "dc_sys": 1.2}
PROFILE = {"dc_prof": "dc_nocb", "dc_prof_sys": "dc_sys"}  # profile mode -> its trace mode
# other per-round ratios of added time: (numerator, denominator, what it says)
FRACTIONS = (("dc_nocb", "dc_nocb_uprobe",
              "datacrumbs: POSIX layer on the syscall tracepoints / by uprobes"),
             ("bpftrace_tp", "bpftrace", "bpftrace: syscall tracepoints / uprobes"),
             ("dc_sys", "dc_nocb", "datacrumbs: SYSCALL layer / POSIX layer (both tracepoints)"),
             ("dc_prof", "dc_nocb", "datacrumbs: profile / trace mode, POSIX layer"),
             ("dc_prof_sys", "dc_sys", "datacrumbs: profile / trace mode, SYSCALL layer"))


def check_events(r):
    """Warns when a datacrumbs run wrote fewer events than the loop made calls: calls that
    were attached but never recorded make a variant look cheaper than it is."""
    if r["variant"] in PROFILE:  # counters, not an event per call
        return
    if "events" in r and r["events"] + r["lost"] < r["calls"]:
        print("WARNING: %s round %s: %d events (+%d lost) for %d calls: calls were missed, "
              "its figures are not comparable" % (r["variant"], r["round"], r["events"],
                                                   r["lost"], r["calls"]))


def bpf_stats(stats):
    """The table of BPF_STATS=1: per tracer run, each of its programs' run count and run time
    (kernel.bpf_stats_enabled) during the loop's timed part (between snapshots just before
    and just after it), and since the program was loaded."""
    order = {v: i for i, v in enumerate(VARIANTS)}
    progs = {}  # (tracer, prog) -> per-round records
    for r in stats:
        progs.setdefault((r["tracer"], r["prog"]), []).append(r)
    rounds = len({r["round"] for r in stats})
    print("\nBPF programs' run time (BPF_STATS=1: kernel.bpf_stats_enabled, bpftool prog show "
          "run_cnt and run_time_ns of each tracer's programs, read while they were loaded just "
          "before and just after the loop's timed part), median of %d rounds. runs: how often "
          "the program ran during the timed part, for every process of the machine: a uprobe "
          "runs in every process that calls the function, a syscalls: tracepoint program on "
          "every such syscall, and dc_sys_enter/dc_sys_exit (raw_syscalls) on every system "
          "call of every process (the tracer's own and other processes' included, most of "
          "them an early exit), so runs differ from the loop's calls and ns per run is the "
          "figure to compare; since load: from the program's load to the loop's end "
          "(attach, the loop's start-up)" % rounds)
    print("  %-15s %-34s %11s %9s %10s %12s %10s" % (
        "tracer", "program", "loop calls", "runs", "ns per run", "runs (load)", "ns (load)"))
    for (t, p), rs in sorted(progs.items(), key=lambda kv: (order.get(kv[0][0], 99), kv[0][1])):
        ran = [r for r in rs if r["runs"]]
        tran = [r for r in rs if r["total_runs"]]
        print("  %-15s %-34s %11.0f %9.0f %10s %12.0f %10s" % (
            t, p, med([r["loop_calls"] for r in rs]), med([r["runs"] for r in rs]),
            "%.0f" % med([r["run_ns"] / r["runs"] for r in ran]) if ran else "-",
            med([r["total_runs"] for r in rs]),
            "%.0f" % med([r["total_ns"] / r["total_runs"] for r in tran]) if tran else "-"))
    per = {}  # tracer -> median over rounds of its programs' run time in the timed part / calls
    for t in {r["tracer"] for r in stats}:
        byround = {}
        for r in stats:
            if r["tracer"] == t:
                byround.setdefault(r["round"], [0, r["loop_calls"]])[0] += r["run_ns"]
        per[t] = med([ns / calls for ns, calls in byround.values() if calls])
    print("  BPF run time per traced call: all the tracer's programs' run time during the "
          "timed part / the loop's calls (includes the runs for other processes meanwhile: an "
          "upper bound, close on an idle machine), and vs peer (ratio of the medians"
          "):")
    for t in sorted(per, key=lambda t: order.get(t, 99)):
        peer = PEER.get(t)
        print("    %-15s %8.0f ns%s" % (t, per[t], "  %s/%s %.2f" % (t, peer, per[t] / per[peer])
                                         if peer in per and per[peer] else ""))


def main(path):
    runs = load(path)
    others = [r for r in runs if r["variant"] == "others"]
    stats = [r for r in runs if r["variant"] == "bpfstat"]
    runs = [r for r in runs if r["variant"] not in ("others", "bpfstat")]
    for r in runs:
        r.setdefault("kind", "io")  # results of before the fwrite loop
    for r in others:
        if r["uprobes"] or r["syscall_tps"]:
            print("WARNING: round %s: other tracers attached between its runs: uprobes=%d "
                  "syscall_tps=%d; this round's figures are off" % (
                      r["round"], r["uprobes"], r["syscall_tps"]))
        cpu = float(r.get("other_cpu_s", 0))
        if cpu > 0.1 * r.get("round_ms", 1e9) / 1e3:
            print("WARNING: round %s: other processes used %.1f s of CPU during its %.1f s: "
                  "they competed for the cores; this round is noisy" % (
                      r["round"], cpu, r["round_ms"] / 1e3))
    if others:
        print("other processes' CPU per round (s): %s" % " ".join(
            "%s" % r.get("other_cpu_s", "?") for r in others))
    for r in runs:
        check_events(r)
    rounds = sorted({r["round"] for r in runs if r["round"] != "tp"})
    rows = {}  # variant -> list of per-round dicts
    for rd in rounds:
        this = [r for r in runs if r["round"] == rd]
        # per loop (kind, size), the faster of the round's two bare runs: another tracer's
        # uprobes on the same libc functions (a test running meanwhile) slow every process,
        # traced or not
        base, cbase = {}, {}
        for c in {(r["kind"], r["calls"]) for r in this if r["variant"] == "bare"}:
            same = [r for r in this if r["variant"] == "bare" and (r["kind"], r["calls"]) == c]
            bare = [r["elapsed_ns"] / r["calls"] for r in same]
            base[c] = min(bare)
            # the loop's own CPU time per call: the same without the time it waited for a core
            cbase[c] = min(r["cpu_ns"] / r["calls"] for r in same)
            if max(bare) > 2000:
                print("WARNING: round %s: a bare loop took %.1f us per call: another tracer's "
                      "uprobes were attached to libc meanwhile; this round is noisy" % (
                          rd, max(bare) / 1e3))
        added, cadded = {}, {}
        for r in this:
            if r["variant"] == "bare":
                continue
            b, cb = base[r["kind"], r["calls"]], cbase[r["kind"], r["calls"]]
            per, cper = r["elapsed_ns"] / r["calls"], r["cpu_ns"] / r["calls"]
            added[r["variant"]] = per - b
            cadded[r["variant"]] = cper - cb
            d = {"round": rd, "bare": b, "per": per, "added": per - b, "calls": r["calls"],
                 "cbare": cb, "cper": cper, "cadded": cper - cb, "oncpu": r["cpu_ns"] / r["elapsed_ns"],
                 # less the time the loop waited for the BPF_STATS=1 snapshot before its start
                 "attach": (r["start_ns"] - r["t0"] - r.get("pause", 0)) / 1e9,
                 # from the loop's end, or (BPF_STATS=1) from its release after the hold
                 "detach": (r["t1"] - (r.get("rel") or r["end_ns"]) - r.get("settle_ns", 0)) / 1e9,
                "settle": r.get("settle_ns", 0) / 1e9,
                 "rss": r["maxrss_kb"] / 1024}
            if "events" in r and r["variant"] not in PROFILE:
                # with the loop's -D: up to the moment the tracer settled (backlog included)
                d["cpu_ev"] = r.get("settled_cpu_ns", r["parent_cpu_ns"]) / max(r["events"], 1)
                w = r.get("settled_writer_cpu_ns", r.get("writer_cpu_ns", -1))
                if w >= 0:
                    d["wcpu_ev"] = w / max(r["events"], 1)
            if "events" in r:
                d["lost"] = r["lost"]
                d["cpu_call"] = r["parent_cpu_ns"] / r["calls"]  # the tracer's, per call
            rows.setdefault(r["variant"], []).append(d)
        for v, peer in PEER.items():
            if v in added and added.get(peer):
                rows[v][-1]["ratio"] = added[v] / added[peer]
            if v in cadded and cadded.get(peer):
                rows[v][-1]["cratio"] = cadded[v] / cadded[peer]
        for num, den, _ in FRACTIONS:
            if num in added and added.get(den):
                rows[num][-1]["frac"] = added[num] / added[den]
            if num in cadded and cadded.get(den):
                rows[num][-1]["cfrac"] = cadded[num] / cadded[den]

    print("\nper-call overhead (loop of write(/dev/null, 64 B) + pread(file, 64 B, 0); "
          "bpftrace_fw, dc_stdio: loop of fwrite(64 B) to /dev/null); median of %d rounds; "
          "vs peer: added time / that of %s" % (
              len(rounds), ", ".join("%s's: %s" % (v, p) for v, p in PEER.items())))
    print("  %-14s %8s %10s %10s %10s %8s %9s %9s %9s %5s" % (
        "variant", "calls", "bare us", "traced us", "added us", "vs peer", "attach s",
        "detach s", "peak MiB", "lost"))
    for v in VARIANTS:
        rs = rows.get(v, [])
        if not rs:
            continue
        ratio = med([r["ratio"] for r in rs if "ratio" in r])
        print("  %-14s %8d %10.2f %10.2f %10.2f %8s %9.1f %9.1f %9.1f %5s" % (
            v, rs[0]["calls"], med([r["bare"] for r in rs]) / 1e3,
            med([r["per"] for r in rs]) / 1e3, med([r["added"] for r in rs]) / 1e3,
            "%.2f" % ratio if v in PEER else "1.00",
            med([r["attach"] for r in rs]), med([r["detach"] for r in rs]),
            max(r["rss"] for r in rs),
            str(max(r["lost"] for r in rs)) if "lost" in rs[0] else "-"))
    for v, peer in PEER.items():
        rs = rows.get(v, [])
        rt = [r["ratio"] for r in rs if "ratio" in r]
        if rt:
            t = TARGET.get(v)
            print("  %s/%s added time per round: %s -> median %.2f%s" % (
                v, peer, " ".join("%.2f" % x for x in rt), med(rt),
                " (target <= %.1f: %s)" % (t, "met" if med(rt) <= t else "NOT met") if t else ""))
    for num, den, what in FRACTIONS:
        rt = [r["frac"] for r in rows.get(num, []) if "frac" in r]
        if rt:
            print("  %s: %s/%s added time per round: %s -> median %.3f (1/%.0f)" % (
                what, num, den, " ".join("%.3f" % x for x in rt), med(rt),
                1 / med(rt) if med(rt) > 0 else float("inf")))

    print("\nthe same in the loop's own CPU time per call (user + system, traps and BPF programs "
          "included; not the time it waited for a core while other processes or the tracer's "
          "consumer ran): median of %d rounds" % len(rounds))
    print("  %-14s %8s %11s %12s %11s %8s %8s" % (
        "variant", "calls", "bare CPU us", "traced CPU us", "added CPU us", "vs peer",
        "on CPU"))
    for v in VARIANTS:
        rs = rows.get(v, [])
        if not rs:
            continue
        ratio = med([r["cratio"] for r in rs if "cratio" in r])
        print("  %-14s %8d %11.2f %12.2f %11.2f %8s %7.0f%%" % (
            v, rs[0]["calls"], med([r["cbare"] for r in rs]) / 1e3,
            med([r["cper"] for r in rs]) / 1e3, med([r["cadded"] for r in rs]) / 1e3,
            "%.2f" % ratio if v in PEER else "1.00", 100 * med([r["oncpu"] for r in rs])))
    for v, peer in PEER.items():
        rt = [r["cratio"] for r in rows.get(v, []) if "cratio" in r]
        if rt:
            print("  %s/%s added CPU per round: %s -> median %.2f" % (
                v, peer, " ".join("%.2f" % x for x in rt), med(rt)))
    for num, den, what in FRACTIONS:
        rt = [r["cfrac"] for r in rows.get(num, []) if "cfrac" in r]
        if rt:
            print("  %s: %s/%s added CPU per round: %s -> median %.3f (1/%.0f)" % (
                what, num, den, " ".join("%.3f" % x for x in rt), med(rt),
                1 / med(rt) if med(rt) > 0 else float("inf")))

    cpu = {v: med([r["cpu_ev"] for r in rows.get(v, []) if "cpu_ev" in r])
           for v in ("dc_nocb_uprobe", "dc_nocb", "dc_io_posix", "dc_sys", "dc_stdio")}
    print("  tracer CPU per event, user side (ring buffer -> [Lua] -> gzip): %s; the Lua "
          "callback (io_posix) adds %.2f us per event" % (
              ", ".join("%s %.2f us" % (v[3:], c / 1e3) for v, c in cpu.items()),
              (cpu["dc_io_posix"] - cpu["dc_nocb"]) / 1e3))
    wcpu = {v: med([r["wcpu_ev"] for r in rows.get(v, []) if "wcpu_ev" in r])
            for v in ("dc_nocb", "dc_io_posix", "dc_sys")}
    if any(rows.get(v) and any("wcpu_ev" in r for r in rows[v]) for v in wcpu):
        print("  of which the writer thread (dc-writer: gzip members, write(2)): %s" % (
            ", ".join("%s %.2f us" % (v[3:], c / 1e3) for v, c in wcpu.items())))
    st = {v: med([r["settle"] for r in rows.get(v, []) if r.get("settle")])
          for v in ("dc_nocb", "dc_io_posix", "dc_sys")}
    print("  drain time (the loop's last call to the tracer's CPU settling, -D): %s" % (
        ", ".join("%s %.2f s" % (v[3:], c) for v, c in st.items())))
    for prof, trace in PROFILE.items():
        a = med([r["cpu_call"] for r in rows.get(prof, []) if "cpu_call" in r])
        b = med([r["cpu_call"] for r in rows.get(trace, []) if "cpu_call" in r])
        if rows.get(prof):
            print("  tracer CPU per traced call: %s %.3f us vs %s %.3f us (profile mode sends "
                  "no record per call)" % (prof, a / 1e3, trace, b / 1e3))
            # what the machine pays per call: the loop's added CPU plus the tracer's own
            ta = med([r["cadded"] + r["cpu_call"] for r in rows.get(prof, []) if "cpu_call" in r])
            tb = med([r["cadded"] + r["cpu_call"] for r in rows.get(trace, []) if "cpu_call" in r])
            print("  total CPU added per call (loop + tracer): %s %.2f us vs %s %.2f us: "
                  "profile/trace %.2f" % (prof, ta / 1e3, trace, tb / 1e3, ta / tb))

    if stats:
        bpf_stats(stats)

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
                r.get("settled_cpu_ns", r["parent_cpu_ns"]) / max(r["events"], 1) / 1e3,
                r["maxrss_kb"] / 1024))
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
