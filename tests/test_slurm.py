"""test_slurm.py: SLURM site mode end to end: a real two-node cluster (tests/slurmlab.py: munged,
slurmctld, two slurmd in their own UTS and network namespaces) with the SPANK plugin
(datacrumbs_spank.so) starting the real `datacrumbs step` per job step per node; jobs run as
the non-root test user. Checks the per-node traces byte for byte, job facts, ownership, another
job on the same node left alone, a user's script running with the user's rights only, a broken
script (job untraced, one line on its stderr), scancel (trace finished, nothing attached)."""
import json
import os
import re
import shutil
import subprocess
import tempfile
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dctest  # noqa: E402
from dctest import check, equal  # noqa: E402
import slurmlab  # noqa: E402

BLOCK = 65536
SPANK = os.environ.get("DATACRUMBS_SPANK", "")
PROG = os.environ.get("PROG_RANKS", "")
SCRIPTS = os.environ.get("DATACRUMBS_SCRIPT_PATH", "")
WAIT = 120   # seconds a job may take in this lab before the test gives up on it


TRACER = None  # main(): the tracer the plugin runs, a copy in the lab's root-only directory


def skip(why):
    print("SKIP: test_slurm: %s: SLURM site mode NOT TESTED" % why, flush=True)
    sys.exit(77)


def user_dir(name):
    """A fresh directory under TEST_OUT owned by the test user (the jobs' cwd)."""
    d = dctest.workdir(name)
    os.chown(d, slurmlab.UID, slurmlab.UID)
    return d


def tasks_of(stdout, tag="rank"):
    """prog_ranks' lines -> {rank: (host, pid, jobid)}."""
    out = {}
    for line in stdout.splitlines():
        w = line.split()
        if len(w) == 5 and w[0] == tag:
            out[int(w[1])] = (w[2], int(w[3]), w[4])
    return out


def meta_of(meta, name):
    """Values of the PR records named name, in order."""
    return [m["args"]["value"] for m in meta if m["name"] == "PR" and m["args"]["name"] == name]


def writes_by_file(events):
    """{(pid, path basename): [ret of each write]} of the POSIX write events."""
    out = {}
    for e in dctest.calls(events):
        if e["name"] == "write" and e["path"]:
            out.setdefault((e["pid"], os.path.basename(e["path"])), []).append(e["args"]["ret"])
    return out


def trace_done(lab, node, job, step):
    """Whether the plugin logged on node that the tracer of job.step finished its trace."""
    return ("datacrumbs: job %s step %s on %s: trace finished" % (job, step, node)
            in lab.node_log(node))


def wait_trace_done(lab, node, job, step):
    slurmlab._wait_for("the trace of %s.%s on %s" % (job, step, node),
                       lambda: trace_done(lab, node, job, step), timeout=WAIT)


def tracer_pid(lab, node, job, step):
    m = re.search(r"datacrumbs: job %s step %s on %s: tracer (\d+) ready" % (job, step, node),
                  lab.node_log(node))
    return int(m.group(1)) if m else None


def check_owned_trace(path, what):
    """The trace exists, is the test user's, mode 0600, and passes both validators."""
    if not os.path.exists(path):
        check(False, "%s: no trace %s" % (what, path))
        return False
    s = os.stat(path)
    equal(s.st_uid, slurmlab.UID, what + ": trace owner")
    equal(s.st_mode & 0o7777, 0o600, what + ": trace mode")
    return dctest.check_pfw(path)


def orphan_programs():
    """Ids of loaded BPF programs named dc_* that no live process holds."""
    r = subprocess.run(["bpftool", "-j", "prog", "list"], capture_output=True, text=True)
    held = dctest.held_ids("prog_id")
    return [p["id"] for p in json.loads(r.stdout or "[]")
            if p.get("name", "").startswith("dc_") and p["id"] not in held]


# --- the tests -------------------------------------------------------------------------

def test_two_nodes(lab):
    """srun -N2 -n4: one trace per node, each holding exactly its tasks, exact bytes."""
    d = user_dir("slurm-two-nodes")
    r = lab.run_as_user(["srun", "-Q", "-N2", "-n4", "--datacrumbs=io_posix.lua", PROG, d], cwd=d,
                        timeout=WAIT)
    equal(r.returncode, 0, "srun -N2 -n4 exit status (stderr %r)" % r.stderr)
    equal(r.stderr, "", "srun -N2 -n4: nothing on stderr")
    tasks = tasks_of(r.stdout)
    equal(sorted(tasks), [0, 1, 2, 3], "ranks that ran")
    if sorted(tasks) != [0, 1, 2, 3]:
        return
    job = tasks[0][2]
    nodes = sorted({h for h, _, _ in tasks.values()})
    equal(nodes, ["n1", "n2"], "the nodes the four tasks ran on (hostname in each UTS namespace)")
    names = sorted(f for f in os.listdir(d) if f.endswith(".pfw.gz"))
    equal(names, ["%s.0-%s.pfw.gz" % (job, n) for n in ["n1", "n2"]], "trace files")
    for n in nodes:
        path = os.path.join(d, "%s.0-%s.pfw.gz" % (job, n))
        if not check_owned_trace(path, "node " + n):
            continue
        events, _, meta = dctest.read_trace(path)
        mine = {rank: pid for rank, (h, pid, _) in tasks.items() if h == n}
        equal(meta_of(meta, "job_id"), [job], n + ": job_id")
        equal(meta_of(meta, "step_id"), ["0"], n + ": step_id")
        equal(meta_of(meta, "node"), [n], n + ": node")
        equal(meta_of(meta, "user"), [slurmlab.USER], n + ": user")
        ranks = {m["pid"]: m["args"]["value"] for m in meta
                 if m["name"] == "PR" and m["args"]["name"] == "rank"}
        equal(ranks, {pid: str(rank) for rank, pid in mine.items()}, n + ": rank records")
        pnames = {m["pid"]: m["args"]["name"] for m in meta if m["name"] == "process_name"
                  and m["pid"] in mine.values()}
        equal(pnames, {pid: "Rank %d" % rank for rank, pid in mine.items()},
              n + ": process_name of each task")
        w = writes_by_file(events)
        for rank, pid in mine.items():
            equal(w.get((pid, "rank%d.dat" % rank)), [BLOCK] * (rank + 1),
                  "%s: rank %d's writes to rank%d.dat" % (n, rank, rank))
        others = {pid for rank, (h, pid, _) in tasks.items() if h != n}
        equal(sorted({e["pid"] for e in events if e["pid"] in others}), [],
              n + ": events of the other node's tasks")
        # every task's first call is traced: each task's own open of its file is there
        # (the task was held before its exec until the tracer had it)
        for rank, pid in mine.items():
            opens = [e for e in dctest.calls(events) if e["pid"] == pid and e["path"]
                     and os.path.basename(e["path"]) == "rank%d.dat" % rank
                     and e["name"] in ("open", "openat", "open64")]
            equal(len(opens), 1, "%s: rank %d's open of its file" % (n, rank))
    for rank in range(4):
        equal(os.path.getsize(os.path.join(d, "rank%d.dat" % rank)), (rank + 1) * BLOCK,
              "rank%d.dat's size" % rank)


def test_other_job_untraced(lab):
    """Two jobs at once on n1, one traced: no event of the other in the trace."""
    d = user_dir("slurm-two-jobs")
    a = lab.popen_as_user(["srun", "-Q", "-w", "n1", "-N1", "-n1", "--datacrumbs=io_posix.lua", PROG,
                           d, "A", "hold"], cwd=d, stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        first = a.stdout.readline()
        held = a.stdout.readline()
        equal(held.strip(), "held A 0", "job A holding")
        b = lab.run_as_user(["srun", "-Q", "-w", "n1", "-N1", "-n1", PROG, d, "B"], cwd=d,
                            timeout=WAIT)
        equal(b.returncode, 0, "untraced job B's exit status (stderr %r)" % b.stderr)
        tb = tasks_of(b.stdout, "B")
    finally:
        out, err = a.communicate(input="", timeout=WAIT)  # EOF on its stdin: it ends
    equal(a.returncode, 0, "traced job A's exit status (stderr %r)" % err)
    ta = tasks_of(first, "A")
    if 0 not in ta or 0 not in tb:
        check(False, "jobs A and B printed their tasks: %r %r" % (ta, tb))
        return
    equal(ta[0][0], "n1", "job A's node")
    equal(tb[0][0], "n1", "job B's node")
    ja, jb = ta[0][2], tb[0][2]
    wait_trace_done(lab, "n1", ja, 0)
    equal(sorted(f for f in os.listdir(d) if f.endswith(".pfw.gz")), ["%s.0-n1.pfw.gz" % ja],
          "trace files (job B asked for none)")
    path = os.path.join(d, "%s.0-n1.pfw.gz" % ja)
    if not check_owned_trace(path, "job A"):
        return
    events, files, meta = dctest.read_trace(path)
    equal(writes_by_file(events).get((ta[0][1], "A0.dat")), [BLOCK], "job A's writes")
    equal([e for e in events if e["pid"] == tb[0][1]], [], "events of job B's task")
    equal([p for p in files.values() if os.path.basename(p) == "B0.dat"], [],
          "job B's file in job A's trace")
    equal(meta_of(meta, "job_id"), [ja], "job A's trace: job_id")


def run_user_script(lab, d, name, text):
    """Runs a one-task job on n1 traced by the user's own script d/name (text); returns
    (CompletedProcess, job id)."""
    s = os.path.join(d, name)
    with open(s, "w") as f:
        f.write(text)
    os.chown(s, slurmlab.UID, slurmlab.UID)
    r = lab.run_as_user(["srun", "-Q", "-w", "n1", "-N1", "-n1", "--datacrumbs=" + s, PROG, d],
                        cwd=d, timeout=WAIT)
    t = tasks_of(r.stdout)
    return r, (t[0][2] if 0 in t else "?")


def test_user_script_rights(lab):
    """The user's own script runs with the user's rights only: a root-only file is refused
    to it as to the user; os.execute is not there in site mode. Each job runs untraced with
    the script's error as its one stderr line."""
    d = user_dir("slurm-user-script")
    secret = os.path.join(os.environ.get("TEST_OUT", "/tmp"), "slurm-root-only")
    with open(secret, "w") as f:
        f.write("root's\n")
    os.chmod(secret, 0o600)
    r, job = run_user_script(lab, d, "peek.lua",
                             'local f, err = io.open("%s", "r")\n'
                             'if not f then error("cannot read: " .. err, 0) end\n' % secret)
    equal(r.returncode, 0, "job with a script reading a root-only file: exit status")
    equal(r.stderr.splitlines(),
          ["datacrumbs: not tracing job %s step 0 on n1: cannot read: %s: Permission denied"
           % (job, secret)], "the job's stderr: the script's error, as the user")
    equal(os.path.getsize(os.path.join(d, "rank0.dat")), BLOCK, "the job ran: rank0.dat")
    os.unlink(os.path.join(d, "rank0.dat"))
    r, job = run_user_script(lab, d, "shell.lua", 'os.execute("id -u > %s/who.txt")\n' % d)
    equal(r.returncode, 0, "job with a script calling os.execute: exit status")
    equal(r.stderr.splitlines(),
          ["datacrumbs: not tracing job %s step 0 on n1: %s/shell.lua:1: os.execute is not "
           "available without --unsafe (it would start a program or load native code with the "
           "tracer's privileges)" % (job, d)], "the job's stderr: os.execute refused")
    equal(os.path.exists(os.path.join(d, "who.txt")), False, "os.execute ran nothing")
    equal(os.path.getsize(os.path.join(d, "rank0.dat")), BLOCK, "the job ran: rank0.dat")
    equal([f for f in os.listdir(d) if ".pfw" in f], [], "no trace")


def test_batch_and_env(lab):
    """sbatch --datacrumbs: the option reaches the batch step and the script's srun step (one
    trace each); DATACRUMBS_SCRIPT and DATACRUMBS_OUTPUT in the job's environment instead."""
    d = user_dir("slurm-batch")
    job_sh = os.path.join(d, "job.sh")
    with open(job_sh, "w") as f:
        f.write("#!/bin/sh\nsrun -Q -n2 %s %s\n" % (PROG, d))
    os.chmod(job_sh, 0o755)
    os.chown(job_sh, slurmlab.UID, slurmlab.UID)
    r = lab.run_as_user(["sbatch", "--parsable", "--wait", "-w", "n2", "-N1", "-n2",
                         "-o", os.path.join(d, "out.txt"), "--datacrumbs=io_posix.lua", job_sh],
                        cwd=d, timeout=WAIT)
    equal(r.returncode, 0, "sbatch --wait exit status (stderr %r)" % r.stderr)
    job = r.stdout.strip().split(";")[0]
    with open(os.path.join(d, "out.txt")) as f:
        tasks = tasks_of(f.read())
    equal(sorted(tasks), [0, 1], "the batch job's srun step: ranks that ran")
    for step in ["batch", "0"]:
        wait_trace_done(lab, "n2", job, step)
    equal(sorted(f for f in os.listdir(d) if f.endswith(".pfw.gz")),
          sorted(["%s.batch-n2.pfw.gz" % job, "%s.0-n2.pfw.gz" % job]), "batch job's traces")
    path = os.path.join(d, "%s.batch-n2.pfw.gz" % job)
    if check_owned_trace(path, "batch step"):
        events, _, meta = dctest.read_trace(path)
        equal((meta_of(meta, "job_id"), meta_of(meta, "step_id"), meta_of(meta, "node")),
              ([job], ["batch"], ["n2"]), "batch step's job facts")
        equal(meta_of(meta, "rank"), [], "batch step: its task, the job's script, is no rank")
        equal([k for k in writes_by_file(events) if k[1].startswith("rank")], [],
              "batch step: the srun step's writes are not in it")
    path = os.path.join(d, "%s.0-n2.pfw.gz" % job)
    if check_owned_trace(path, "batch job's step 0") and len(tasks) == 2:
        events, _, meta = dctest.read_trace(path)
        equal((meta_of(meta, "job_id"), meta_of(meta, "step_id")), ([job], ["0"]),
              "step 0's job facts")
        w = writes_by_file(events)
        for rank, (_, pid, _) in tasks.items():
            equal(w.get((pid, "rank%d.dat" % rank)), [BLOCK] * (rank + 1),
                  "batch job's step 0: rank %d's writes" % rank)

    e = user_dir("slurm-env")
    out = os.path.join(e, "traces")
    os.mkdir(out)
    os.chown(out, slurmlab.UID, slurmlab.UID)
    r = lab.run_as_user(["srun", "-Q", "-w", "n1", "-N1", "-n1", PROG, e], cwd=e, timeout=WAIT,
                        env={"DATACRUMBS_SCRIPT": "io_posix.lua", "DATACRUMBS_OUTPUT": out})
    equal(r.returncode, 0, "srun with DATACRUMBS_SCRIPT: exit status (stderr %r)" % r.stderr)
    t = tasks_of(r.stdout)
    job = t[0][2] if 0 in t else "?"
    wait_trace_done(lab, "n1", job, 0)
    equal(sorted(os.listdir(out)), ["%s.0-n1.log" % job, "%s.0-n1.pfw.gz" % job],
          "DATACRUMBS_OUTPUT holds the trace and the consumer's log")
    try:
        st = os.stat(os.path.join(out, "%s.0-n1.log" % job))
        equal((st.st_uid, st.st_mode & 0o7777), (slurmlab.UID, 0o600), "the log's owner, mode")
    except OSError as e:
        check(False, "the consumer's log: %s" % e)
    path = os.path.join(out, "%s.0-n1.pfw.gz" % job)
    if check_owned_trace(path, "DATACRUMBS_SCRIPT job") and 0 in t:
        events, _, meta = dctest.read_trace(path)
        equal(writes_by_file(events).get((t[0][1], "rank0.dat")), [BLOCK],
              "DATACRUMBS_SCRIPT job: rank 0's writes")


def test_broken_script(lab):
    """A script with a syntax error: the job runs, exit 0, one line on its stderr."""
    d = user_dir("slurm-broken")
    s = os.path.join(d, "broken.lua")
    with open(s, "w") as f:
        f.write("dc.on(\n")
    os.chown(s, slurmlab.UID, slurmlab.UID)
    r = lab.run_as_user(["srun", "-Q", "-N2", "-n2", "--datacrumbs=" + s, PROG, d], cwd=d,
                        timeout=WAIT)
    equal(r.returncode, 0, "job with a broken script: exit status (stderr %r)" % r.stderr)
    t = tasks_of(r.stdout)
    equal(sorted(t), [0, 1], "ranks that ran")
    job = t[0][2] if 0 in t else "?"
    lines = sorted(r.stderr.splitlines())
    equal(len(lines), 2, "one stderr line per node: %r" % lines)
    for n, l in zip(["n1", "n2"], lines):
        check(l.startswith("datacrumbs: not tracing job %s step 0 on %s: %s:" % (job, n, s)),
              "%s's line names job, step, node and the script: %r" % (n, l))
    equal(lines[0].split(": ", 2)[2] if lines else None,
          lines[1].split(": ", 2)[2] if len(lines) > 1 else None,
          "both nodes give the same reason")
    for rank in range(2):
        equal(os.path.getsize(os.path.join(d, "rank%d.dat" % rank)), (rank + 1) * BLOCK,
              "rank%d.dat's size" % rank)
    equal([f for f in os.listdir(d) if ".pfw" in f], [], "no trace")


def test_scancel(lab):
    """scancel of a traced job mid-run: the trace is finished and valid, nothing attached."""
    d = user_dir("slurm-scancel")
    p = lab.popen_as_user(["srun", "-Q", "-w", "n2", "-N1", "-n1", "--datacrumbs=io_posix.lua", PROG,
                           d, "C", "hold"], cwd=d, stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        first = p.stdout.readline()
        held = p.stdout.readline()
        equal(held.strip(), "held C 0", "job C holding")
        t = tasks_of(first, "C")
        job = t[0][2] if 0 in t else None
        check(job is not None, "job C printed its task: %r" % first)
        if job is None:
            return
        pid = tracer_pid(lab, "n2", job, 0)
        check(pid is not None, "the plugin logged job C's tracer")
        r = lab.slurm(["scancel", job])
        equal(r.returncode, 0, "scancel: %s" % r.stderr)
        p.wait(timeout=WAIT)
    finally:
        if p.poll() is None:
            p.kill()
        p.communicate(input="")
    check(p.returncode != 0, "srun of a cancelled job fails (got %r)" % p.returncode)
    wait_trace_done(lab, "n2", job, 0)
    path = os.path.join(d, "%s.0-n2.pfw.gz" % job)
    if check_owned_trace(path, "cancelled job"):
        events, _, meta = dctest.read_trace(path)
        equal(writes_by_file(events).get((t[0][1], "C0.dat")), [BLOCK], "job C's writes")
        equal(meta_of(meta, "job_id"), [job], "cancelled job: job_id")
    if pid:
        slurmlab._wait_for("tracer %d's exit" % pid, lambda: not os.path.exists("/proc/%d" % pid),
                           timeout=WAIT)
    equal(dctest.orphan_links(), [], "BPF links left attached after the cancelled job")


def test_refused_tracer(base, site):
    """The plugin refuses to start a tracer it cannot trust or find, or when its own
    plugstack.conf line is wrong: the job runs untraced, one line on its stderr says why, no
    tracer starts. Each case a lab of its own (the plugstack.conf line differs): the user's
    own copy of datacrumbs (another user could swap it), a path that does not exist, an
    argument the plugin does not know."""
    d = user_dir("slurm-refused")
    copy = os.path.join(d, "datacrumbs")
    shutil.copy(dctest.DATACRUMBS, copy)
    os.chmod(copy, 0o755)
    os.chown(copy, slurmlab.UID, slurmlab.UID)
    real = TRACER
    cases = [
        ("datacrumbs=" + copy, "tracer %s: %s is not root's alone (owner %d, mode 0755): refused"
         % (copy, copy, slurmlab.UID)),
        ("datacrumbs=/nonexistent/datacrumbs",
         "tracer /nonexistent/datacrumbs: No such file or directory"),
        ("datacrumbs=%s bogus=1" % real, 'plugstack.conf: argument "bogus=1" not understood'),
    ]
    for args, reason in cases:
        line = "required %s %s site={dir}/site.conf" % (os.path.realpath(SPANK), args)
        for f in os.listdir(d):
            if f.endswith(".dat"):
                os.unlink(os.path.join(d, f))
        with slurmlab.Lab(plugstack=line, files={"site.conf": site}, base=base) as lab:
            r = lab.run_as_user(["srun", "-Q", "-w", "n1", "-N1", "-n1",
                                 "--datacrumbs=io_posix.lua", PROG, d], cwd=d, timeout=WAIT)
            t = tasks_of(r.stdout)
            job = t[0][2] if 0 in t else "?"
            equal(r.returncode, 0, "%s: the job's exit status" % args)
            equal(r.stderr.splitlines(),
                  ["datacrumbs: not tracing job %s step 0 on n1: %s" % (job, reason)],
                  "%s: the job's stderr" % args)
            equal(os.path.getsize(os.path.join(d, "rank0.dat")), BLOCK,
                  "%s: the job ran: rank0.dat" % args)
            equal([f for f in os.listdir(d) if ".pfw" in f], [], "%s: no trace" % args)
            equal(tracer_pid(lab, "n1", job, 0), None, "%s: no tracer started" % args)


def start_time_limit(lab):
    """Starts a traced job with a 1-minute time limit (SLURM's shortest) that holds until
    SLURM ends it; the other tests run meanwhile. Returns (dir, Popen, task line)."""
    d = user_dir("slurm-time-limit")
    p = lab.popen_as_user(["srun", "-Q", "-t", "1", "-w", "n2", "-N1", "-n1",
                           "--datacrumbs=io_posix.lua", PROG, d, "T", "hold"], cwd=d,
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE)
    first = p.stdout.readline()
    equal(p.stdout.readline().strip(), "held T 0", "time-limited job holding")
    return d, p, first


def finish_time_limit(lab, d, p, first):
    """The time-limited job: SLURM ended it, its trace is finished and valid."""
    try:
        p.wait(timeout=240)  # SLURM checks time limits about every 30 s
    finally:
        if p.poll() is None:
            p.kill()
        p.stdin.close()
        err = p.stderr.read()
    check("CANCELLED AT" in err and "DUE TO TIME LIMIT" in err,
          "the time-limited job was ended by its time limit: %r" % err)
    t = tasks_of(first, "T")
    if 0 not in t:
        check(False, "the time-limited job printed its task: %r" % first)
        return
    job = t[0][2]
    wait_trace_done(lab, "n2", job, 0)
    path = os.path.join(d, "%s.0-n2.pfw.gz" % job)
    if check_owned_trace(path, "time-limited job"):
        events, _, meta = dctest.read_trace(path)
        equal(writes_by_file(events).get((t[0][1], "T0.dat")), [BLOCK],
              "time-limited job's writes")
        equal(meta_of(meta, "job_id"), [job], "time-limited job: job_id")


def main():
    dctest.need_root()
    missing = slurmlab.missing_programs()
    if missing:
        skip("%s not installed (scripts/setup.sh: munge slurmd slurmctld slurm-client)"
             % " ".join(missing))
    if not SPANK or not os.path.exists(SPANK):
        skip("datacrumbs_spank.so not built (spank.h from libslurm-dev missing)")
    if not PROG or not SCRIPTS:
        skip("PROG_RANKS or DATACRUMBS_SCRIPT_PATH not set (run through ctest)")
    # the jobs run as the test user: it must reach the program, the scripts and TEST_OUT
    # (a checkout under a 0700 home, or a umask of 077, hides them)
    slurmlab.ensure_user()
    probe = user_dir("slurm-reach")
    for what, test in [(PROG, "-x"), (os.path.join(SCRIPTS, "io_posix.lua"), "-r"),
                       (probe, "-w")]:
        r = subprocess.run(["test", test, what], user=slurmlab.UID, group=slurmlab.UID,
                           extra_groups=[])
        if r.returncode != 0:
            skip("%s is out of the test user %s's reach (test %s fails as uid %d)"
                 % (what, slurmlab.USER, test, slurmlab.UID))
    site = ("# the SLURM test's site policy\nscripts = %s\nuser_scripts = yes\n"
            "user_uprobes = yes\n" % os.path.realpath(SCRIPTS))
    # the lab's own directory: root's alone up to / (the plugin runs only a tracer no other
    # user could have replaced: a checkout under /tmp would not do), and short (munged's
    # socket path must fit a unix socket's 108 bytes, unix(7)); the tracer is a copy there
    base = tempfile.mkdtemp(prefix="dcslurm-", dir="/run")
    os.chmod(base, 0o755)
    global TRACER
    TRACER = os.path.join(base, "datacrumbs")
    shutil.copy(os.path.realpath(dctest.DATACRUMBS), TRACER)
    os.chmod(TRACER, 0o755)
    line = ("required %s datacrumbs=%s site={dir}/site.conf timeout=60"
            % (os.path.realpath(SPANK), TRACER))
    times = {}
    lab = slurmlab.Lab(plugstack=line, files={"site.conf": site}, base=base)
    try:
        lab.up()
        times["setup"] = lab.times["setup"]
        t0 = time.monotonic()
        tl = start_time_limit(lab)
        for t in [test_two_nodes, test_other_job_untraced, test_batch_and_env,
                  test_user_script_rights, test_broken_script, test_scancel]:
            t0 = time.monotonic()
            before = dctest.failed
            try:
                t(lab)
            except Exception as e:  # one test's crash fails it, the others still run
                check(False, "%s: %s: %s" % (t.__name__, type(e).__name__, e))
            times[t.__name__] = time.monotonic() - t0
            if dctest.failed != before:
                for n in slurmlab.NODES:
                    print("--- slurmd log of %s (datacrumbs lines) ---" % n)
                    print("\n".join(l for l in lab.node_log(n).splitlines()
                                    if "datacrumbs" in l)[-4000:])
        try:
            finish_time_limit(lab, *tl)
        except Exception as e:
            check(False, "test_time_limit: %s: %s" % (type(e).__name__, e))
        times["test_time_limit (beside the others)"] = time.monotonic() - t0
    finally:
        lab.down()
        times["teardown"] = lab.times["teardown"]
    t0 = time.monotonic()
    try:
        test_refused_tracer(base, site)
    except Exception as e:
        check(False, "test_refused_tracer: %s: %s" % (type(e).__name__, e))
    times["test_refused_tracer (3 labs of its own)"] = time.monotonic() - t0
    shutil.rmtree(base, ignore_errors=True)
    # the kernel frees a finished tracer's programs a moment after its last link and fd
    # closed: wait for that (at most 10 s, no assertion: another tree's tracer may be
    # exiting too), so that e2e_nothing_left after this test sees the machine settled
    t0 = time.monotonic()
    while time.monotonic() - t0 < 10 and orphan_programs():
        time.sleep(0.1)
    left = [ns for ns in subprocess.run(["ip", "netns", "list"], capture_output=True,
                                        text=True).stdout.split() if ns.startswith("dclab-")]
    equal(left, [], "network namespaces left after teardown")
    print("test_slurm: seconds: " + ", ".join("%s %.1f" % kv for kv in times.items()),
          flush=True)
    dctest.finish()


if __name__ == "__main__":
    main()
