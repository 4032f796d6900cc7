"""test_jobview.py: one analysis of a job's traces from several nodes (scripts/pfw_summary.py
--job and DIR, datacrumbs report on the directory). Real traces: tests/progs/prog_jobranks.c
(MPICH singletons whose rank is SLURM_PROCID, as under srun) run by `datacrumbs run` in UTS
namespaces with the host names n1 and n2, written as <jobid>.<stepid>-<node>.pfw.gz: job
4242 step 0 on n1 (ranks 0, 1) and n2 (ranks 2, 3), its batch step on n1 (a task that is
no rank), job 999 on n1 (rank 9, to be left out). A copy of n1's step 0 trace given the
site tracer's metadata records (node n4, job_id, step_id, user) stands for step 1 on n4:
the node record wins over the host name, and its pids equal n1's, so processes must be
told apart by node. Every figure is what the programs did: each rank's calls, bytes
written (its BYTES) and read (half of them); time is the sum of the events' dur, counted here from the traces."""
import gzip
import html.parser
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import dctest  # noqa: E402
from dctest import check, equal  # noqa: E402

dctest.need_root()
HERE = os.path.dirname(os.path.abspath(__file__))
SUMMARY = os.path.join(HERE, "..", "scripts", "pfw_summary.py")
SRC = os.path.join(HERE, "progs", "prog_jobranks.c")
for tool in ("mpicc.mpich", "unshare", "hostname"):
    if not shutil.which(tool):
        print("SKIP: %s absent (scripts/setup.sh installs it): test_jobview NOT RUN" % tool)
        sys.exit(77)

SCRIPT = """local dc = require "datacrumbs"
local opt = require("datacrumbs.options").parse {
  name = "ranks.lua", about = "MPI_Init, MPI_Finalize and POSIX I/O under --dir only",
  options = { { "dir", "/nonexistent/", "the directory whose files are kept" } } }
dc.probe { layer = "mpiio", functions = { "MPI_Init", "MPI_Finalize" } }
dc.probe { layer = "posix", functions = { "openat", "write", "read", "lseek", "close" } }
dc.on_event(function(ev)
  if ev.cat == "POSIX" and not (ev.path and ev.path:sub(1, #opt.dir) == opt.dir) then
    return false
  end
end)
"""

d = dctest.workdir("jobview")
traces = os.path.join(d, "traces")
data = os.path.join(d, "data")
os.makedirs(traces)
os.makedirs(data)
prog = os.path.join(d, "prog_jobranks")
subprocess.run(["mpicc.mpich", "-O0", "-o", prog, SRC], check=True)
script = os.path.join(d, "ranks.lua")
with open(script, "w") as f:
    f.write(SCRIPT)


def pieces(b):
    return (b + 4095) // 4096


def task_calls(b, rank):
    """prog_jobranks' calls for one task of b bytes: openat, the writes, lseek, the reads of
    b // 2 bytes, close; a rank adds MPI_Init and MPI_Finalize."""
    return 1 + pieces(b) + 1 + pieces(b // 2) + 1 + (2 if rank is not None else 0)


def run(host, name, tasks):
    """Traces prog_jobranks with tasks [(rank or None, bytes)] on host name `host` into
    traces/name. Returns the trace's path."""
    out = os.path.join(traces, name)
    args = ["%s:%d" % ("-" if r is None else r, b) for r, b in tasks]
    cmd = ("hostname %s && exec %s run %s --dir %s/ -o %s -- %s %s %s" % (
        host, os.path.abspath(dctest.DATACRUMBS), script, data, out, prog, data, " ".join(args)))
    r = subprocess.run(["unshare", "-u", "sh", "-c", cmd], capture_output=True, text=True,
                       timeout=300)
    equal(r.returncode, 0, "datacrumbs run on %s (%s)" % (host, r.stderr[-2000:]))
    check(os.path.exists(out), "%s written" % name)
    dctest.check_pfw(out)
    return out


def pids_of(path):
    """{rank or None: pid} of a trace's tasks (their PR rank records; the task with no
    rank: the process with events that has none), and {pid: sum of dur}."""
    events, _, meta = dctest.read_trace(path)
    ranks = {int(m["args"]["value"]): m["pid"] for m in meta
             if m["name"] == "PR" and m["args"]["name"] == "rank"}
    dur = {}
    for e in events:
        if e["cat"] != "datacrumbs":
            dur[e["pid"]] = dur.get(e["pid"], 0) + e["dur"]
    for p in dur:
        if p not in ranks.values():
            ranks[None] = p
    return ranks, dur


def with_site_records(src, dst, node, job, step, user="root"):
    """dst: src with the site tracer's PR records (job_id, step_id, node, user; pid the
    tracer's start record's) after its HH record, as `datacrumbs step` writes them."""
    with gzip.open(src, "rt", encoding="utf-8") as f:
        lines = f.read().split("\n")
    start = next(ln for ln in lines if '"name":"start","cat":"datacrumbs"' in ln)
    pid = int(start.split('"pid":')[1].split(",")[0])
    hh = lines[1].split('"hhash":"')[1].split('"')[0]
    pr = ['{"name":"PR","cat":"dftracer","pid":%d,"tid":%d,"ph":"M","args":{"hhash":"%s",'
          '"name":"%s","value":"%s"}}' % (pid, pid, hh, k, v)
          for k, v in (("job_id", job), ("step_id", step), ("node", node), ("user", user))]
    with gzip.open(dst, "wt", encoding="utf-8") as f:
        f.write("\n".join(lines[:2] + pr + lines[2:]))
    dctest.check_pfw(dst)
    return dst


JOB = {  # file: (host, tasks)
    "4242.0-n1.pfw.gz": ("n1", [(0, 10000), (1, 5000)]),
    "4242.0-n2.pfw.gz": ("n2", [(2, 7000), (3, 123)]),
    "4242.batch-n1.pfw.gz": ("n1", [(None, 3000)]),
    "999.0-n1.pfw.gz": ("n1", [(9, 4096)]),
}
want = {}  # (node, rank, pid) -> [calls, read, written, time]
for name, (host, tasks) in JOB.items():
    path = run(host, name, tasks)
    pids, dur = pids_of(path)
    equal(sorted(pids, key=str), sorted((r for r, _ in tasks), key=str), "%s: its tasks" % name)
    for r, b in tasks:
        if r in pids:
            want[(name, host, r, pids[r])] = [task_calls(b, r), b // 2, b, dur[pids[r]]]
# step 1 on n4: n1's step 0 under the site records (same pids as on n1)
n4 = with_site_records(os.path.join(traces, "4242.0-n1.pfw.gz"),
                       os.path.join(traces, "4242.1-n4.pfw.gz"), "n4", "4242", "1")
for k, v in list(want.items()):
    if k[0] == "4242.0-n1.pfw.gz":
        want[("4242.1-n4.pfw.gz", "n4") + k[2:]] = list(v)


def summary(args, cwd=None):
    r = subprocess.run([sys.executable, SUMMARY, "--top", "1000"] + args, capture_output=True,
                       text=True, cwd=cwd)
    return r


def parse(out):
    """The header line, the total, {node: figures}, {(rank, node, pid): figures}."""
    lines = out.splitlines()
    total, nodes, ranks, table = None, {}, {}, None
    for ln in lines[1:]:
        p = ln.split()
        if p[0] in ("job", "node", "rank", "function", "file"):
            table = p[0]
            continue
        if table == "job":
            total = [int(x) for x in p[1:5]]
        elif table == "node":
            nodes[p[0]] = [int(x) for x in p[1:5]]
        elif table == "rank":
            ranks[(None if p[0] == "-" else int(p[0]), p[1], int(p[2]))] = [
                int(x) for x in p[3:7]]
    return lines[0], total, nodes, ranks


def expect(files):
    """What pfw_summary must print for these trace files: total, nodes, ranks."""
    nodes, ranks = {}, {}
    for (name, node, r, pid), v in want.items():
        if name not in files:
            continue
        ranks[(r, node, pid)] = v
        n = nodes.setdefault(node, [0, 0, 0, 0])
        for i in range(4):
            n[i] += v[i]
    total = [sum(n[i] for n in nodes.values()) for i in range(4)]
    return total, nodes, ranks


job_files = ["4242.0-n1.pfw.gz", "4242.0-n2.pfw.gz", "4242.batch-n1.pfw.gz", "4242.1-n4.pfw.gz"]
w_total, w_nodes, w_ranks = expect(job_files)
equal(w_total[1:3], [20061, 40123], "the job's tasks wrote 40,123 bytes and read 20,061 "
      "(the sums of each one's bytes and half of them)")
r = summary(["--job", "4242", traces])
equal(r.returncode, 0, "pfw_summary --job 4242 DIR: exit 0 (%s)" % r.stderr)
head, total, nodes, ranks = parse(r.stdout)
equal(head, "job 4242 in %s: 4 traces, 3 nodes, 7 processes, 6 ranks, %d calls, 0 lost"
      % (traces, w_total[0]), "--job: header")
equal(total, w_total, "--job: the job's totals")
equal(nodes, w_nodes, "--job: each node's calls, bytes read, bytes written, time")
equal(ranks, w_ranks, "--job: each rank's (and the task's that is none: '-') figures")
check(not any(k[0] == 9 for k in ranks), "--job 4242: job 999's rank 9 is left out")
equal(len({k[2] for k in ranks if k[1] in ("n1", "n4")}), 3,
      "n1's and n4's processes have the same pids and are still told apart")
# the same job from its directory as the current one
r2 = summary(["--job", "4242"], cwd=traces)
equal(parse(r2.stdout)[1:], (total, nodes, ranks), "--job 4242 (DIR .): the same figures")
# the directory as a whole: job 999's trace is in it
a_total, a_nodes, a_ranks = expect(list(JOB) + ["4242.1-n4.pfw.gz"])
r = summary([traces])
equal(r.returncode, 0, "pfw_summary DIR: exit 0 (%s)" % r.stderr)
head, total, nodes, ranks = parse(r.stdout)
equal(head, "%s: 5 traces, 3 nodes, 8 processes, 7 ranks, %d calls, 0 lost"
      % (traces, a_total[0]), "DIR: header")
equal((total, nodes, ranks), (a_total, a_nodes, a_ranks), "DIR: every trace's figures")
# a job without traces here, a bad job id
r = summary(["--job", "4243", traces])
equal((r.returncode, r.stdout, r.stderr.strip()),
      (1, "", "pfw_summary.py: no trace of job 4243 (4243.*-*.pfw.gz) in %s" % traces),
      "--job of no trace: exit 1, one line")
r = summary(["--job", "x42", traces])
equal((r.returncode, r.stderr.strip()), (2, "pfw_summary.py: --job needs a job id (digits)"),
      "--job x42: exit 2, one line")
# one trace as before: its own summary, ranks by their process names
r = summary([os.path.join(traces, "4242.0-n2.pfw.gz")])
pids, _ = pids_of(os.path.join(traces, "4242.0-n2.pfw.gz"))
check(("  %d Rank 2" % pids[2]) in r.stdout, "one trace: its process table names Rank 2")


# datacrumbs report on the directory of job 4242 (without job 999's trace)
class Tables(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tables, self.cur, self.cell, self.incell = {}, None, None, False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self.cur = self.tables.setdefault(a.get("id"), [])
        elif tag == "tr" and self.cur is not None:
            self.cur.append([])
        elif tag in ("td", "th") and self.cur is not None:
            self.cell = a.get("data-v")
            self.incell = True
            self.cur[-1].append("")

    def handle_data(self, text):
        if self.incell:
            self.cur[-1][-1] += text

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self.cur is not None:
            self.incell = False
            if self.cell is not None:
                self.cur[-1][-1] = int(self.cell)
        if tag == "table":
            self.cur = None


py = os.environ.get("DATACRUMBS_PYTHON", "/usr/bin/python3")
if subprocess.run([py, "-c", "import pandas, matplotlib"], capture_output=True).returncode:
    print("SKIP: %s has no pandas/matplotlib: the report's part NOT TESTED" % py)
else:
    job_dir = os.path.join(d, "job4242")
    os.makedirs(job_dir)
    for f in job_files:
        os.link(os.path.join(traces, f), os.path.join(job_dir, f))
    page = os.path.join(d, "report.html")
    r = dctest.run_dc(["report", "--no-chrome", "-o", page, job_dir])
    equal(r.returncode, 0, "datacrumbs report DIR: exit 0 (%s)" % r.stderr)
    t = Tables()
    with open(page, encoding="utf-8") as f:
        t.feed(f.read())
    equal({row[0]: row[1:] for row in t.tables.get("nodes", [])[1:]}, w_nodes,
          "report: the per-node table")
    equal({(None if row[0] == "-" else int(row[0]), row[1], int(row[2])): row[4:]
           for row in t.tables.get("ranks", [])[1:]}, w_ranks, "report: the per-rank table")
    procs = [row[0] for row in t.tables.get("processes", [])[1:]]
    equal(len(procs), 7, "report: 7 processes (equal pids of n1 and n4 are two): %r" % procs)
    # the loader's node column (its size is the bytes moved: read + written; no event here
    # is made by another, so every row counts)
    code = ("import json, sys; sys.path.insert(0, %r); from datacrumbs import analysis; "
            "df = analysis.load(%r); g = df.groupby('node')[['calls', 'size']].sum(); "
            "print(json.dumps({n: [int(r['calls']), int(r['size'])] for n, r in g.iterrows()}), "
            "len(df.groupby(['node', 'pid'])))"
            % (os.path.join(HERE, "..", "python"), job_dir))
    r = subprocess.run([py, "-c", code], capture_output=True, text=True)
    equal(r.returncode, 0, "the loader on the job's directory (%s)" % r.stderr[-1000:])
    got, nprocs = (r.stdout.rsplit(" ", 1) + [""])[:2]
    equal((json.loads(got or "{}"), nprocs.strip()),
          ({n: [v[0], v[1] + v[2]] for n, v in w_nodes.items()}, "7"),
          "loader: calls and bytes per node; (node, pid) groups (n1's and n4's pids equal)")

# convert --chrome of the job's directory: one document, n4's pids (equal to n1's) given
# new ones, each process labelled with its node and own pid, every (pid, id) unique
job_dir = os.path.join(d, "job4242-chrome")
os.makedirs(job_dir)
for f in job_files:
    os.link(os.path.join(traces, f), os.path.join(job_dir, f))
doc_path = os.path.join(d, "job.chrome.json")
r = dctest.run_dc(["convert", "--chrome", "-o", doc_path, job_dir])
equal(r.returncode, 0, "convert --chrome DIR: exit 0 (%s)" % r.stderr)
with open(doc_path, encoding="utf-8") as f:
    doc = json.load(f)
evs = doc["traceEvents"]
labels = {e["pid"]: e["args"]["labels"] for e in evs if e["name"] == "process_labels"}
got = {}
for e in evs:
    if e["ph"] == "X" and e["cat"] != "datacrumbs":
        got[e["pid"]] = got.get(e["pid"], 0) + 1
want_chrome = {}  # label -> events: "rank R, NODE pid P" (no rank: "NODE pid P")
for (name, node, rk, pid), v in want.items():
    if name in job_files:
        lab = ("rank %d, " % rk if rk is not None else "") + "%s pid %d" % (node, pid)
        want_chrome[lab] = v[0]
equal({labels.get(p, "no label for pid %d" % p): n for p, n in got.items()}, want_chrome,
      "convert: each process (7, n1's and n4's apart) with its events, labelled by node")
ids = [(e["pid"], e["id"]) for e in evs if e["ph"] == "X" and "id" in e]
equal(len(ids), len(set(ids)), "convert: every (pid, id) of the document unique")

# the upstream DFTracer trace in a directory: one node, its host
up = dctest.upstream_trace()
if up:
    updir = os.path.join(d, "upstream")
    os.makedirs(updir)
    os.symlink(os.path.abspath(up), os.path.join(updir, os.path.basename(up)))
    events, _, meta = dctest.read_trace(up)
    calls = [e for e in events if e.get("ph") == "X" and e["cat"] not in ("dftracer", "datacrumbs")]
    on_file = {(e["pid"], e["tid"], e["id"]) for e in calls if e["args"].get("fhash")}
    top = [e for e in calls if (e["pid"], e["tid"], e["args"].get("p_idx")) not in on_file]
    hosts = {m["args"]["name"] for m in meta if m["name"] == "HH"}
    r = summary([updir])
    equal(r.returncode, 0, "upstream DIR: exit 0 (%s)" % r.stderr)
    head, total, nodes, ranks = parse(r.stdout)
    equal(head.split(": ", 1)[1].split(", ")[:3], ["1 traces", "1 nodes", "1 processes"],
          "upstream DIR: header")
    equal((total[0], total[3]), (len(top), sum(e["dur"] for e in top)),
          "upstream DIR: calls and time of the events not made by another on a file")
    equal(list(nodes), sorted(hosts), "upstream DIR: the node is its host")
dctest.finish()
