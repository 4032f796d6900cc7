"""datacrumbs.report: a self-contained HTML job report of DFTracer traces (datacrumbs' or
upstream's): the run's metadata; lost and dropped events; calls, bytes and time per layer
(with the time each layer spends in the layers below it, from the events' nesting) and per
function; a per-file table; access-size histograms; I/O over time per process (a heat map)
and bandwidth over time; the trace in the Chrome trace format, embedded for download.

usage: datacrumbs report [-o REPORT.html] [--no-chrome] TRACE|DIR...
       (python3 -m datacrumbs.report ...)
  -o FILE       the page (default report.html)
  --no-chrome   do not embed the Chrome trace format document (it is embedded up to
                64 MiB)

Plots are matplotlib PNGs embedded as base64; the page has no script and loads nothing.
Bytes are the bytes moved (pfw_summary.py's rule); time is the sum of dur (us). The layer
and function tables count every event; the file and process tables, the heat map and the
bandwidth count only events not made by another event on a file (a write and the
sys_write it made count once). Needs pandas and matplotlib (Debian python3-pandas,
python3-matplotlib)."""
import base64
import datetime
import html
import io
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from datacrumbs import analysis, chrome  # noqa: E402

CHROME_MAX = 64 << 20
READS, WRITES = analysis.READS, analysis.WRITES  # the calls that read, write


def esc(s):
    return html.escape("" if s is None else str(s))


def num(v):
    return "{:,}".format(int(v))


def png(fig):
    import matplotlib.pyplot as plt
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return '<img alt="" src="data:image/png;base64,%s">' % base64.b64encode(
        buf.getvalue()).decode()


def table(tid, head, rows, numeric_from=1):
    out = ['<table id="%s"><tr>%s</tr>' % (tid, "".join("<th>%s</th>" % esc(h) for h in head))]
    for r in rows:
        cells = []
        for i, v in enumerate(r):
            if i >= numeric_from and isinstance(v, (int, float)):
                cells.append('<td class="n" data-v="%d">%s</td>' % (v, num(v)))
            else:
                cells.append("<td>%s</td>" % esc(v))
        out.append("<tr>%s</tr>" % "".join(cells))
    out.append("</table>")
    return "\n".join(out)


def frames(traces):
    import pandas as pd
    dfs = [analysis._frame(t.rows()) for t in traces]
    df = pd.concat(dfs, ignore_index=True) if dfs else analysis._frame([])
    return df[~df["cat"].isin(analysis.TRACER_CATS)].reset_index(drop=True)


def nesting(df):
    """Columns parent_cat (the enclosing event's layer, None if outermost) and top (not made
    by another event on a file)."""
    key = list(zip(df["trace"], df["pid"], df["tid"], df["index"]))
    cat_of = dict(zip(key, df["cat"]))
    on_file = {k for k, f in zip(key, df["fhash"]) if f}
    pkey = list(zip(df["trace"], df["pid"], df["tid"], df["p_idx"]))
    counter = df["ph"] == "C"
    df["parent_cat"] = [None if c or p[3] < 0 else cat_of.get(p) for p, c in zip(pkey, counter)]
    df["top"] = [c or p not in on_file for p, c in zip(pkey, counter)]
    return df


def metadata(traces):
    rows = []
    for t in traces:
        s, e = t.start or {}, t.end or {}
        start = ("" if s.get("ts") is None else datetime.datetime.fromtimestamp(
            s["ts"] / 1e6, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"))
        span = ""
        if s.get("ts") is not None and e.get("ts") is not None:
            span = "%.3f s" % ((e["ts"] - s["ts"]) / 1e6)
        rows.append([
            os.path.basename(t.path), ", ".join(sorted(set(t.hosts.values()))),
            t.strings.get(s.get("cmd_hash"), ""), t.files.get(s.get("cwd"), s.get("cwd", "")),
            s.get("version", ""), start, span,
            len({ev.get("pid") for ev in t.events}),
            ", ".join("%d" % r for r in sorted(t.ranks.values())) or "-",
            "complete" if t.closed else "INCOMPLETE (no closing ']')"])
    return table("meta", ["trace", "host", "command", "cwd", "version", "start", "duration",
                          "processes", "ranks", "state"], rows, numeric_from=7)


LOSS_KEYS = ("num_events", "lost", "dropped", "script_errors", "too_deep", "unpaired")


def losses(traces):
    tot = {k: 0 for k in LOSS_KEYS}
    known = {k: False for k in LOSS_KEYS}
    for t in traces:
        for k in LOSS_KEYS:
            v = (t.end or {}).get(k)
            if isinstance(v, int):
                tot[k] += v
                known[k] = True
    incomplete = [os.path.basename(t.path) for t in traces if not t.closed]
    bad = tot["lost"] > 0 or tot["script_errors"] > 0 or incomplete
    cls = "bad" if bad else "warn" if tot["dropped"] else "ok"
    cells = "".join('<div class="stat" id="loss-%s"><b>%s</b><span data-v="%s">%s</span></div>'
                    % (k, k.replace("_", " "), tot[k] if known[k] else "",
                       num(tot[k]) if known[k] else "not recorded")
                    for k in LOSS_KEYS)
    msg = []
    if tot["lost"]:
        msg.append("%s events were LOST (the ring buffer was full): the trace misses calls; "
                   "rerun with a larger --buffer-size or --mode profile." % num(tot["lost"]))
    if tot["dropped"]:
        msg.append("%s events were dropped by the script's filter on purpose (the shipped "
                   "scripts drop /proc and /sys: --all keeps them)." % num(tot["dropped"]))
    if tot["script_errors"]:
        msg.append("%s errors in the script's callback." % num(tot["script_errors"]))
    if incomplete:
        msg.append("INCOMPLETE traces (the run was cut): %s." % ", ".join(incomplete))
    if not any(known.values()):
        msg.append("No end record: losses are unknown.")
    return '<div id="losses" class="%s">%s<p>%s</p></div>' % (
        cls, cells, esc(" ".join(msg) or "Nothing lost, nothing dropped."))


def layer_section(df):
    import matplotlib.pyplot as plt
    g = df.groupby("cat").agg(calls=("calls", "sum"), bytes=("size", "sum"), time=("dur", "sum"))
    below = df[df["parent_cat"].notna() & (df["parent_cat"] != df["cat"])]
    nb = below.groupby(["parent_cat", "cat"])["dur"].sum()
    cats = sorted(g.index, key=lambda c: -g.loc[c, "time"])
    rows = []
    for c in cats:
        sub = nb[c] if c in nb.index.get_level_values(0) else None
        inner = "" if sub is None else ", ".join(
            "%s %s us" % (k, num(v)) for k, v in sub.sort_values(ascending=False).items())
        ib = 0 if sub is None else int(sub.sum())
        rows.append([c, int(g.loc[c, "calls"]), int(g.loc[c, "bytes"]), int(g.loc[c, "time"]),
                     ib, inner or "-"])
    html_t = table("layers", ["layer", "calls", "bytes", "time (us)", "time in layers below (us)",
                              "of which"], rows)
    fig, ax = plt.subplots(1, 2, figsize=(11, 3.2))
    y = range(len(cats))
    own = [g.loc[c, "time"] - r[4] for c, r in zip(cats, rows)]
    ax[0].barh(y, own, color="#1f77b4", label="in the layer itself")
    ax[0].barh(y, [r[4] for r in rows], left=own, color="#ff7f0e", label="in layers below")
    ax[0].set_yticks(list(y), cats)
    ax[0].set_xlabel("time (us)")
    ax[0].legend(fontsize=8)
    ax[0].invert_yaxis()
    ax[1].barh(y, [g.loc[c, "bytes"] for c in cats], color="#2ca02c")
    ax[1].set_yticks(list(y), cats)
    ax[1].set_xlabel("bytes moved")
    ax[1].invert_yaxis()
    return html_t + png(fig)


def function_section(df, top=40):
    import matplotlib.pyplot as plt
    g = df.groupby(["cat", "name"]).agg(calls=("calls", "sum"), bytes=("size", "sum"),
                                        time=("dur", "sum")).reset_index()
    g = g.sort_values(["time", "cat", "name"], ascending=[False, True, True])
    rows = [[r.cat, r.name, int(r.calls), int(r.bytes), int(r.time)] for r in g.itertuples()]
    more = "" if len(rows) <= top else "<p>... %d more functions</p>" % (len(rows) - top)
    h = table("functions", ["layer", "function", "calls", "bytes", "time (us)"], rows[:top],
              numeric_from=2) + more
    sub = g.head(15)[::-1]
    fig, ax = plt.subplots(figsize=(11, 0.3 * len(sub) + 1))
    ax.barh(["%s %s" % (c, n) for c, n in zip(sub["cat"], sub["name"])], sub["time"])
    ax.set_xlabel("time (us)")
    return h + png(fig)


def file_section(df, top=50):
    t = df[df["top"]].copy()
    t["file"] = t["filename"].fillna("-")
    g = t.groupby("file").agg(calls=("calls", "sum"), bytes=("size", "sum"),
                              time=("dur", "sum")).reset_index()
    g = g.sort_values(["time", "file"], ascending=[False, True])
    rows = [[r.file, int(r.calls), int(r.bytes), int(r.time)] for r in g.itertuples()]
    more = "" if len(rows) <= top else "<p>... %d more files</p>" % (len(rows) - top)
    return (table("files", ["file", "calls", "bytes", "time (us)"], rows[:top]) + more +
            '<p class="note">"-" is the calls that name no file (mmap, brk, a failed open, '
            'MPI_Init, ...).</p>')


def process_section(df, traces):
    """Per process, known by (trace, pid): pids of two nodes' (or two runs') traces may be
    equal. A process's label is "PID NAME", with "@NODE" when the traces have several nodes."""
    names = {(t.path, p): n for t in traces for p, n in t.proc_names.items()}
    nodes = {t.path: t.node or "-" for t in traces}
    several = len(set(nodes.values())) > 1
    t = df[df["top"]]
    g = t.groupby(["trace", "pid"]).agg(calls=("calls", "sum"), bytes=("size", "sum"),
                                        time=("dur", "sum")).reset_index()
    g = g.sort_values(["time", "pid"], ascending=[False, True])
    rows = [["%d %s%s" % (r.pid, names.get((r.trace, r.pid), ""),
                          " @" + nodes[r.trace] if several else ""),
             int(r.calls), int(r.bytes), int(r.time)] for r in g.itertuples()]
    return table("processes", ["process", "calls", "bytes", "time (us)"], rows)


def node_rank_section(traces, top=200):
    """The job's per-node and per-rank tables (analysis.job_tables: calls, bytes read and
    written, time), shown when the traces have more than one node or an MPI rank."""
    total, nodes, procs = analysis.job_tables(traces)
    if len(nodes) < 2 and not any(p["rank"] is not None for p in procs.values()):
        return ""
    head = ["calls", "bytes read", "bytes written", "time (us)"]
    h = table("nodes", ["node"] + head, [[n] + nodes[n] for n in sorted(nodes)])
    order = sorted(procs.items(), key=lambda kv: (kv[1]["rank"] is None, kv[1]["rank"] or 0,
                                                  kv[0][0], kv[0][2]))
    rows = [["-" if p["rank"] is None else str(p["rank"]), node, str(pid), p["name"] or "-"] +
            p["figures"] for (node, _, pid), p in order[:top]]
    more = "" if len(order) <= top else "<p>... %d more processes</p>" % (len(order) - top)
    return ("<h2>Per node and rank</h2>" + h +
            table("ranks", ["rank", "node", "pid", "process"] + head, rows, numeric_from=4) +
            more + '<p class="note">A process is known by its node and pid; "-": not an '
            'MPI rank.</p>')


def size_section(df):
    """Histograms of the bytes asked (count) of reads and writes, log2 buckets, per layer;
    the table has the same figures."""
    import matplotlib.pyplot as plt
    x = df[(df["ph"] == "X") & (df["count"] >= 0)]
    fig, axes = plt.subplots(1, 2, figsize=(11, 3))
    rows = []
    for ax, (what, names) in zip(axes, (("reads", READS), ("writes", WRITES))):
        s = x[x["name"].isin(names)]
        ax.set_title("%s: bytes asked per call, by layer" % what)
        if not len(s):
            ax.text(0.5, 0.5, "none", ha="center")
            continue
        cats = sorted(s["cat"].unique())
        for j, (cat, sc) in enumerate(s.groupby("cat")):
            buckets = sc["count"].map(lambda c: int(c).bit_length()).value_counts().sort_index()
            w = 0.8 / len(cats)
            ax.bar([k - 0.4 + w * (j + 0.5) for k in buckets.index], buckets.values, width=w,
                   label=cat)
            for k, n in buckets.items():
                lo = 0 if k == 0 else 2 ** (k - 1)
                hi = 0 if k == 0 else 2 ** k - 1
                rows.append(["%s %s" % (cat, what), "%s to %s" % (human(lo), human(hi)), int(n)])
        ticks = range(0, 41, 4)
        ax.set_xticks(list(ticks), [human(2 ** (k - 1)) if k else "0" for k in ticks],
                      rotation=45, fontsize=7)
        ax.set_xlim(left=-1, right=max(s["count"].map(lambda c: int(c).bit_length())) + 1)
        ax.set_ylabel("calls")
        ax.legend(fontsize=8)
    return png(fig) + table("sizes", ["calls", "bytes asked", "count"], rows, numeric_from=2)


def human(b):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if b < 1024:
            return "%d %s" % (b, unit)
        b //= 1024
    return "%d PiB" % b


def time_section(df, traces, bins=100):
    import matplotlib.pyplot as plt
    import numpy as np
    t = df[df["top"]]
    if not len(t):
        return "<p>No events.</p>"
    t0, t1 = int(df["ts"].min()), int(max(df["te"].max(), df["ts"].max() + 1))
    width = max(1, (t1 - t0 + bins - 1) // bins)
    names = {(tr.path, p): n for tr in traces for p, n in tr.proc_names.items()}
    pids = sorted(set(zip(t["trace"], t["pid"])), key=lambda p: (names.get(p, ""), p[1], p[0]))
    heat = np.zeros((len(pids), bins))
    bw = np.zeros(bins)
    row = {p: i for i, p in enumerate(pids)}
    for tr, pid, ts, dur, size in zip(t["trace"], t["pid"], t["ts"], t["dur"], t["size"]):
        b = min(bins - 1, (ts + dur // 2 - t0) // width)
        heat[row[(tr, pid)], b] += dur
        bw[b] += size
    fig, ax = plt.subplots(figsize=(11, 0.35 * len(pids) + 1.2))
    im = ax.imshow(heat, aspect="auto", cmap="viridis", interpolation="nearest",
                   extent=[0, (t1 - t0) / 1e6, len(pids), 0])
    ax.set_yticks([i + 0.5 for i in range(len(pids))],
                  ["%s %d" % (names.get(p, ""), p[1]) for p in pids], fontsize=7)
    ax.set_xlabel("seconds since the first event")
    fig.colorbar(im, ax=ax, label="I/O time (us) per bin")
    h = png(fig)
    fig, ax = plt.subplots(figsize=(11, 2.6))
    ax.plot([(i + 0.5) * width / 1e6 for i in range(bins)], bw / (width / 1e6) / 2 ** 20)
    ax.set_xlabel("seconds since the first event")
    ax.set_ylabel("MiB/s")
    ax.set_title("bandwidth (bytes moved per %s us bin)" % num(width))
    return h + png(fig)


def chrome_link(paths):
    doc = chrome.convert(paths)
    text = json.dumps(doc, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    data = text.encode("utf-8")
    if len(data) > CHROME_MAX:
        return ("<p>The Chrome trace format document is %s bytes, over the %s embedded at "
                "most: <code>datacrumbs convert --chrome</code> writes it.</p>"
                % (num(len(data)), num(CHROME_MAX)))
    return ('<p><a id="chrome" download="trace.chrome.json" href="data:application/json;'
            'base64,%s">The trace in the Chrome trace format</a> (%s bytes: open it in '
            'Perfetto, chrome://tracing or the DevTools Performance panel).</p>'
            % (base64.b64encode(data).decode(), num(len(data))))


CSS = """body{font:13px/1.4 sans-serif;margin:16px;max-width:1200px}
table{border-collapse:collapse;margin:6px 0}td,th{border:1px solid #ccc;padding:2px 6px}
td.n{text-align:right;font-variant-numeric:tabular-nums}th{background:#eee}
#losses{padding:8px;margin:8px 0;border-radius:4px}#losses.bad{background:#fdd;
border:2px solid #c00}#losses.warn{background:#ffc;border:2px solid #c90}#losses.ok{background:#efe;border:1px solid #6a6}
.stat{display:inline-block;margin-right:18px}.stat b{display:block;font-size:11px}
.stat span{font-size:18px}.note{color:#555}h2{margin-top:24px}img{max-width:100%}"""


def report(paths, out, embed_chrome=True):
    import matplotlib
    matplotlib.use("Agg")
    files = analysis.trace_files(paths)
    traces = [analysis.Trace(p) for p in files]
    df = nesting(frames(traces))
    total = [int(df["calls"].sum()), int(df["size"].sum()), int(df["dur"].sum())]
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>datacrumbs report</title>",
        "<link rel='icon' href='data:,'><style>%s</style></head><body>" % CSS,
        "<h1>datacrumbs report</h1>",
        "<h2>Run</h2>", metadata(traces),
        "<h2>Lost and dropped events</h2>", losses(traces),
        "<h2>Totals</h2>",
        table("totals", ["traces", "calls", "bytes", "time (us)"], [[len(traces)] + total],
              numeric_from=0),
        "<h2>Per layer</h2>", layer_section(df),
        "<h2>Per function</h2>", function_section(df),
        "<h2>Per file</h2>", file_section(df),
        "<h2>Per process</h2>", process_section(df, traces),
        node_rank_section(traces),
        "<h2>Access sizes</h2>", size_section(df),
        "<h2>I/O over time</h2>", time_section(df, traces),
        "<h2>Chrome trace format</h2>",
        chrome_link(files) if embed_chrome else "<p>Not embedded (--no-chrome).</p>",
        "</body></html>"]
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n".join(parts))


def main(argv):
    if "-h" in argv or "--help" in argv:
        print(__doc__)
        return 0
    out, embed = "report.html", True
    if "--no-chrome" in argv:
        argv = [a for a in argv if a != "--no-chrome"]
        embed = False
    if "-o" in argv:
        i = argv.index("-o")
        if i + 1 >= len(argv):
            print("datacrumbs report: -o needs a file name", file=sys.stderr)
            return 2
        out = argv[i + 1]
        del argv[i:i + 2]
    bad = [a for a in argv if a.startswith("-")]
    if bad:
        print("datacrumbs report: unknown option %s (usage: datacrumbs report "
              "[-o REPORT.html] [--no-chrome] TRACE|DIR...)" % bad[0], file=sys.stderr)
        return 2
    if not argv:
        print("usage: datacrumbs report [-o REPORT.html] [--no-chrome] TRACE|DIR...",
              file=sys.stderr)
        return 2
    for p in argv:
        if not os.path.exists(p):
            print("datacrumbs report: %s: no such file or directory" % p, file=sys.stderr)
            return 1
    if not analysis.trace_files(argv):
        print("datacrumbs report: no trace (*.pfw, *.pfw.gz) in %s" % " ".join(argv),
              file=sys.stderr)
        return 1
    try:
        import matplotlib  # noqa: F401
        import pandas  # noqa: F401
    except ImportError as e:
        print("datacrumbs report: %s (Debian: apt-get install python3-pandas "
              "python3-matplotlib; or set DATACRUMBS_PYTHON)" % e, file=sys.stderr)
        return 1
    report(argv, out, embed)
    print("datacrumbs report: %s" % out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
