"""test_status.py: `datacrumbs status --dir DIR` on status files this test writes in a
root-owned directory: a live tracer's (a real `datacrumbs run` that waits on a pipe), stale
ones (a dead pid, a live process that is no datacrumbs, a pid whose process started after
the file's `started`), a file planted by another user, a file writable by others, a
malformed one, a tracer's temporary file; the table, --json, the warnings and errors (one
line each, naming the file), an untrusted directory, no status files."""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import dctest  # noqa: E402
from dctest import check, equal  # noqa: E402

dctest.need_root()
d = dctest.workdir("status")
st = os.path.join(d, "run-datacrumbs")
os.mkdir(st)
os.chmod(st, 0o755)
NOBODY = 65534


def status(*args):
    return dctest.run_dc(["status", "--dir", st] + list(args), timeout=60)


def obj(job, step, tracer, started, tasks=(), events=0, lost=0):
    return {"job": job, "step": step, "node": "n1", "user": "alice", "uid": 1001,
            "tracer_pid": tracer, "consumer_pid": tracer + 1, "tasks": list(tasks),
            "probes": 97, "events": events, "lost": lost,
            "trace": "/home/alice/%s.%s-n1.pfw.gz" % (job, step), "started": started}


def put(name, o, mode=0o644, owner=0, text=None):
    path = os.path.join(st, name)
    with open(path, "w") as f:
        f.write(text if text is not None else json.dumps(o, separators=(",", ":")))
    os.chmod(path, mode)
    os.chown(path, owner, owner)
    return path


# nothing there yet; no directory at all
r = status()
equal((r.returncode, r.stdout, r.stderr), (0, "no traced jobs\n", ""), "empty directory")
r = status("--json")
equal((r.returncode, r.stdout), (0, "[]\n"), "empty directory, --json")
r = dctest.run_dc(["status", "--dir", os.path.join(d, "absent")])
equal((r.returncode, r.stdout, r.stderr), (0, "no traced jobs\n", ""), "no directory")

# a live tracer: datacrumbs run of cat, which waits for its stdin (this test's pipe)
trace = os.path.join(d, "live.pfw.gz")
tracer = subprocess.Popen([dctest.DATACRUMBS, "run", "-q", "-o", trace, "io_posix.lua", "--",
                           "cat"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE)
now = int(time.time())  # after the tracer's exec (Popen returns after it)
dead = subprocess.Popen(["true"])
dead.wait()
files = {
    "777.0.json": obj("777", "0", tracer.pid, now, tasks=[tracer.pid + 5, 7], events=12345,
                      lost=3),
    "777.batch.json": obj("777", "batch", dead.pid, now),
    "778.0.json": obj("778", "0", os.getpid(), now),          # alive, not datacrumbs
    "778.1.json": obj("778", "1", tracer.pid, now - 3600),    # the pid started later
    # named as datacrumbs step names its files; a user name and path that need escapes
    "800.0-n1.json": dict(obj("800", "0", tracer.pid, now), user='b"o\\b',
                          trace="/home/b/\u00e9t\u00e9/800.0-n1.pfw.gz"),
}
for name, o in files.items():
    put(name, o)
planted = put("779.0.json", obj("779", "0", tracer.pid, now), owner=NOBODY)
open_to_all = put("781.0.json", obj("781", "0", tracer.pid, now), mode=0o666)
bad = put("780.0.json", None, text='{"job":"780","step":"0",\n"uid":}\n')
put(".777.0.json.tmp", None, text="{")  # a tracer's temporary files, before their rename
put("800.0-n1.json.tmp", None, text='{"job":')
put("notes.txt", None, text="not a status file")

r = status()
equal(r.returncode, 1, "exit 1: one status file could not be parsed")
header = "%-10s %-6s %-10s %-8s %5s %6s %12s %8s %s" % (
    "JOBID", "STEP", "USER", "TRACER", "TASKS", "PROBES", "EVENTS", "LOST", "TRACE")
rows = [header] + ["%-10s %-6s %-10s %-8s %5d %6d %12d %8d %s" % (
    o["job"], o["step"], o["user"], t, len(o["tasks"]), o["probes"], o["events"], o["lost"],
    o["trace"]) for o, t in ((files["777.0.json"], str(tracer.pid)),
                             (files["777.batch.json"], "stale"), (files["778.0.json"], "stale"),
                             (files["778.1.json"], "stale"),
                             (files["800.0-n1.json"], str(tracer.pid)))]
equal(r.stdout.splitlines(), rows, "the table: the live tracer's two rows, three stale ones")
equal(sorted(r.stderr.splitlines()), sorted([
    "datacrumbs status: warning: %s is not a regular file owned by root and writable only by "
    "it: ignored" % planted,
    "datacrumbs status: warning: %s is not a regular file owned by root and writable only by "
    "it: ignored" % open_to_all,
    "datacrumbs status: %s:2: \"uid\" must be an integer >= 0" % bad]),
    "one line for the planted file, the file open to all, the malformed one")

r = status("--json")
equal(r.returncode, 1, "--json: exit 1 (the malformed file)")
try:
    got = json.loads(r.stdout)
except ValueError as e:
    got = "not JSON: %s: %r" % (e, r.stdout)
want = [dict(files[n], stale=n not in ("777.0.json", "800.0-n1.json"))
        for n in ("777.0.json", "777.batch.json", "778.0.json", "778.1.json", "800.0-n1.json")]
equal(got, want, "--json: the objects as written, with stale")

# an untrusted directory: writable by others, then not root's
os.remove(bad)
for what, change in (("writable by others", lambda: os.chmod(st, 0o757)),
                     ("owned by nobody", lambda: (os.chmod(st, 0o755), os.chown(st, NOBODY, NOBODY)))):
    change()
    r = status()
    equal((r.returncode, r.stdout, r.stderr.strip()), (1, "no traced jobs\n",
          "datacrumbs status: warning: %s is not owned by root or is writable by group or "
          "others: its status files are ignored" % st), "a directory %s: ignored" % what)
os.chown(st, 0, 0)

# the tracer ends: its file (still there) is stale now
tracer.stdin.close()
err = tracer.stderr.read().decode()
equal(tracer.wait(timeout=120), 0, "the traced cat ended, exit 0 (%s)" % err[-500:])
dctest.check_pfw(trace)
r = status()
equal([ln.split()[3] for ln in r.stdout.splitlines()[1:]], ["stale"] * 5,
      "after the tracer's end every row is stale")
r = dctest.run_dc(["status", "--help"])
check(r.returncode == 0 and r.stdout.startswith("usage: datacrumbs status"), "--help")
r = dctest.run_dc(["status", "--frobnicate"])
equal((r.returncode, r.stderr.strip()), (2, "datacrumbs status: unknown argument "
      "'--frobnicate' (see 'datacrumbs status --help')"), "a bad argument: exit 2, one line")
dctest.finish()
