#!/usr/bin/env python3
"""test_step.py: site mode's node tracer, `datacrumbs step`, driven through its control
protocol exactly as the SPANK plugin drives it (docs/site.md): this test plays slurmstepd,
forking each task held before its exec and naming it to the tracer. The real SLURM path
(munged, slurmctld, two slurmd) is test_slurm.py's. As root; the job's user is nobody."""
import json
import os
import pwd
import signal
import socket
import stat
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dctest as t  # noqa: E402

t.need_root()
NOBODY = pwd.getpwnam("nobody")
DC = os.path.abspath(t.DATACRUMBS)


def site_conf(d, text):
    """A site.conf root owns, mode 0644, in a root-owned directory."""
    p = os.path.join(d, "site.conf")
    with open(p, "w") as f:
        f.write(text)
    os.chmod(p, 0o644)
    return p


def user_dir(name):
    """A directory nobody owns (the job's cwd and trace directory)."""
    d = t.workdir(name)
    os.chown(d, NOBODY.pw_uid, NOBODY.pw_gid)
    os.chmod(d, 0o755)
    return d


class Step:
    """One tracer: `datacrumbs step` with its control socket, as the plugin starts it."""

    def __init__(self, cwd, script, job="41", step="0", node="n1", exe="dd", site=None,
                 status_dir=None):
        self.sock, theirs = socket.socketpair()
        args = [DC, "step", "--job", job, "--step", step, "--node", node,
                "--uid", str(NOBODY.pw_uid), "--gid", str(NOBODY.pw_gid), "--cwd", cwd,
                "--exe", exe, "--path", "/usr/bin:/bin", "--control", str(theirs.fileno())]
        if site:
            args += ["--site", site]
        if status_dir:
            args += ["--status-dir", status_dir]
        self.p = subprocess.Popen(args + ["--"] + script, pass_fds=[theirs.fileno()],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        theirs.close()
        self.f = self.sock.makefile("rw")

    def line(self):
        return self.f.readline().rstrip("\n")

    def send(self, text):
        self.f.write(text + "\n")
        self.f.flush()

    def wait(self):
        out, err = self.p.communicate(timeout=120)
        return self.p.returncode, err


def held_task(cwd, argv):
    """Forks a task held before its exec (as slurmstepd holds it), which becomes nobody and
    execs argv once released. Returns (pid, release function)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(w)
        if os.read(r, 1) != b"x":
            os._exit(99)
        os.setgroups([])
        os.setgid(NOBODY.pw_gid)
        os.setuid(NOBODY.pw_uid)
        os.chdir(cwd)
        os.execv(argv[0], argv)
    os.close(r)

    def release():
        os.write(w, b"x")
        os.close(w)
    return pid, release


def run_task(s, cwd, argv, rank):
    """Names a held task to the tracer, releases it once the tracer says ok, waits for it.
    Returns (pid, the tracer's answer, exit status)."""
    pid, release = held_task(cwd, argv)
    s.send("task %d %d %d" % (pid, rank, rank))
    answer = s.line()
    release()
    _, st = os.waitpid(pid, 0)
    return pid, answer, os.waitstatus_to_exitcode(st)


def read(path):
    """Every record of a trace, metadata included, in file order."""
    events, _, metas = t.read_trace(path)
    return metas + events


def meta(events, pid=None):
    return {e["args"]["name"]: e["args"]["value"] for e in events
            if e.get("name") == "PR" and (pid is None or e["pid"] == pid)}


def writes_of(events, pid, fh):
    return [e for e in events if e.get("pid") == pid and e.get("name") == "write" and
            e.get("args", {}).get("fhash") == fh]


def consumer_fds(cpid):
    """The consumer runs as the user, is not dumpable (its /proc/PID/fd stays root's: the
    user cannot ptrace it or reach its fds) and holds no BPF program or link, only the
    ring buffer, aggs, and read-only stats and traced maps."""
    uids = [line.split()[1:4] for line in open("/proc/%d/status" % cpid)
            if line.startswith("Uid:")][0]
    t.equal(uids, [str(NOBODY.pw_uid)] * 3, "consumer's uids")
    t.equal(os.stat("/proc/%d/fd" % cpid).st_uid, 0, "consumer not dumpable")
    names = {m["id"]: m.get("name") for m in json.loads(subprocess.run(
        ["bpftool", "-j", "map", "show"], capture_output=True, text=True).stdout or "[]")}
    kinds, maps = [], []
    for fd in os.listdir("/proc/%d/fd" % cpid):
        target = os.readlink("/proc/%d/fd/%s" % (cpid, fd))
        if target.startswith("anon_inode:bpf"):
            kinds.append(target)
        info = dict(line.split(":", 1) for line in
                    open("/proc/%d/fdinfo/%s" % (cpid, fd)).read().splitlines() if ":" in line)
        if "map_id" in info:
            maps.append((names.get(int(info["map_id"])), int(info["flags"], 8) & 3))
    rings = [m for m in maps if m[0] == "dc_ring"]
    t.check(len(rings) >= 1 and all(m[1] == 2 for m in rings),
            "consumer's ring buffers (shards), O_RDWR: %r" % rings)
    t.equal(sorted(m for m in maps if m[0] != "dc_ring"),
            [("aggs", 2), ("stats", 0), ("traced", 0)],
            "consumer's other maps, O_RDWR 2 / O_RDONLY 0")
    t.equal(kinds, ["anon_inode:bpf-map"] * len(maps), "consumer's BPF fds: maps only")


def links_of(pid):
    """The BPF link ids process pid holds (its fdinfo's link_id)."""
    ids = set()
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            for line in open("/proc/%d/fdinfo/%s" % (pid, fd)):
                if line.startswith("link_id:"):
                    ids.add(int(line.split()[1]))
        except OSError:
            pass
    return ids


def live_links():
    r = subprocess.run(["bpftool", "-j", "link", "list"], capture_output=True, text=True)
    return {link["id"] for link in json.loads(r.stdout or "[]")}


def none_left(ids, what):
    """Every link the tracer held is gone once it exited (exactly its own, whatever other
    tracers on the machine hold)."""
    t.check(len(ids) > 0, "%s: the tracer held links" % what)
    t.equal(sorted(ids & live_links()), [], "%s: nothing left attached" % what)

# --- a traced step of two tasks, and a process of the same user that is no task ---------
cwd = user_dir("step_basic")
statusd = t.workdir("step_status")
s = Step(cwd, ["io_posix.lua"], status_dir=statusd)
ready = s.line()
t.check(ready.startswith("ready ") and int(ready.split()[1]) > 0, "ready line: %r" % ready)
held = links_of(s.p.pid)
# a process of nobody's that is not a task of the step, running meanwhile
other, release_other = held_task(cwd, ["/usr/bin/dd", "if=/dev/zero", "of=other.out",
                                       "bs=4096", "count=7", "status=none"])
release_other()
pids = []
for rank, blocks in ((0, 1), (1, 2)):
    pid, answer, code = run_task(s, cwd, ["/usr/bin/dd", "if=/dev/zero",
                                          "of=rank%d.out" % rank, "bs=65536",
                                          "count=%d" % blocks, "status=none"], rank)
    t.equal(answer, "ok", "task %d answered" % rank)
    t.equal(code, 0, "task %d exit status" % rank)
    pids.append(pid)
    if rank == 0:
        st = json.load(open(os.path.join(statusd, "41.0-n1.json")))
        t.equal((st["job"], st["step"], st["node"], st["user"], st["uid"], st["tasks"]),
                ("41", "0", "n1", "nobody", NOBODY.pw_uid, [pid]), "status file facts")
        t.equal(st["trace"], os.path.join(cwd, "41.0-n1.pfw.gz"), "status file's trace")
        t.check(st["consumer_pid"] > 0 and st["tracer_pid"] == s.p.pid, "status pids %r" % st)
        consumer_fds(st["consumer_pid"])
        # `datacrumbs status` lists the step, live
        r = t.run_dc(["status", "--dir", statusd, "--json"])
        rows = json.loads(r.stdout) if r.returncode == 0 else []
        t.equal([(x["job"], x["step"], x["user"], x["tasks"], x["stale"]) for x in rows],
                [("41", "0", "nobody", [pid], False)], "datacrumbs status (%s)" % r.stderr)
os.waitpid(other, 0)
s.send("end")
done = s.line().split()
rc, err = s.wait()
t.equal(rc, 0, "tracer exit status (%s)" % err)
trace = os.path.join(cwd, "41.0-n1.pfw.gz")
t.equal(done[:1] + done[3:], ["done", trace], "done line %r" % done)
t.equal(done[2], "0", "nothing lost")
t.equal(os.listdir(statusd), [], "status file removed at the end")
sb = os.stat(trace)
t.equal((sb.st_uid, sb.st_gid, stat.S_IMODE(sb.st_mode)),
        (NOBODY.pw_uid, NOBODY.pw_gid, 0o600), "trace owned by the user, mode 0600")
t.check_pfw(trace)
ev = read(trace)
complete = [e for e in ev if e.get("ph") == "X" and e.get("cat") != "datacrumbs"]
t.equal(int(done[1]), len(complete), "done's event count = the trace's complete events")
own = [e for e in ev if e.get("name") == "start"][0]["pid"]
t.equal(own, s.p.pid, "the tracer's own records carry its pid")
t.equal(meta(ev, own), {"job_id": "41", "step_id": "0", "node": "n1", "user": "nobody"},
        "job facts")
fh = {e["args"]["name"]: e["args"]["value"] for e in ev if e.get("name") == "FH"}
for rank, pid in enumerate(pids):
    t.equal(meta(ev, pid), {"rank": str(rank)}, "rank record of task %d" % rank)
    names = [e["args"]["name"] for e in ev if e.get("name") == "process_name" and
             e["pid"] == pid]
    t.equal(names, ["Rank %d" % rank], "task %d named once, kept across its exec" % rank)
    w = writes_of(ev, pid, fh.get(os.path.join(cwd, "rank%d.out" % rank)))
    t.equal([e["args"]["ret"] for e in w], [65536] * (rank + 1), "task %d's writes" % rank)
    # its first calls after the exec are the dynamic loader's: nothing was missed
    opens = [e["args"].get("fhash") for e in ev if e.get("pid") == pid and
             e.get("name") == "openat"]
    t.equal(opens[:1], [fh.get("/etc/ld.so.cache")], "task %d's first openat: ld.so's cache"
            % rank)
t.equal([e for e in ev if e.get("pid") == other], [], "no record of the untraced process")
t.check(os.path.join(cwd, "other.out") not in fh, "the untraced process's file unnamed")
none_left(held, "basic")


def refused(name, script, want, site=None, exe="dd"):
    """A step that cannot trace: one 'fail' line naming why, exit 125, no trace file (it
    fails before anything is attached: e2e_nothing_left checks the machine after all)."""
    cwd = user_dir("step_" + name)
    s = Step(cwd, script, site=site, exe=exe)
    first = s.line()
    rc, err = s.wait()
    t.check(first.startswith("fail ") and want in first, "%s: fail line %r has %r" %
            (name, first, want))
    t.equal(rc, 125, "%s: exit status" % name)
    t.equal([x for x in os.listdir(cwd) if x.endswith(".pfw.gz")], [],
            "%s: no trace file" % name)
    return cwd


def user_script(cwd, name, text):
    p = os.path.join(cwd, name)
    with open(p, "w") as f:
        f.write(text)
    os.chown(p, NOBODY.pw_uid, NOBODY.pw_gid)
    return p


confd = t.workdir("step_site")
strict = site_conf(confd, "# the defaults, said\nuser_scripts = no\nuser_uprobes = no\n")
open_site = site_conf(t.workdir("step_site_open"), "user_scripts = yes\nuser_uprobes = no\n")

# a user's own script where the site allows none
cwd = refused("noscripts", ["./mine.lua"], "refused: this site runs only its own scripts",
              site=strict)
# a user's script runs as the user: root-only files are not readable, programs not started
def user_fails(d, name, text, wants, what):
    """A user's script (in d, nobody's) that the site allows: its run as the user fails
    with one 'fail' line holding each of wants, exit 125."""
    user_script(d, name, 'local dc = require "datacrumbs"\n' + text)
    s = Step(d, ["./" + name], site=open_site)
    first = s.line()
    rc, _ = s.wait()
    t.check(first.startswith("fail ") and all(w in first for w in wants),
            "%s: %r has %r" % (what, first, wants))
    t.equal(rc, 125, "%s: exit status" % what)


d = user_dir("step_as_user")
user_fails(d, "shadow.lua", 'dc.probe "posix"\nassert(io.open("/etc/shadow"))\n',
           ["shadow.lua:3:", "/etc/shadow: Permission denied"], "root-only file")
user_fails(d, "exec.lua", 'dc.probe "posix"\nos.execute("id > /tmp/dc_step_exec")\n',
           ["exec.lua:3:", "os.execute"], "os.execute")
t.check(not os.path.exists("/tmp/dc_step_exec"), "os.execute ran nothing")
# dc.uprobe where the site says no; a probe description of the user's own; a syntax error
user_fails(d, "up.lua", 'dc.uprobe { file = "CMD", functions = "main" }\n',
           ["up.lua:2:", "user_uprobes = no"], "dc.uprobe refused")
user_script(d, "my.yaml", "layer: MINE\nlibrary: libc.so\nfunctions:\n  - name: write\n")
user_fails(d, "yaml.lua", 'dc.probe "%s"\n' % os.path.join(d, "my.yaml"),
           ["yaml.lua:2:", "site mode loads descriptions only from"],
           "own probe description refused")
user_fails(d, "bad.lua", "dc.probe(\n", ["bad.lua:"], "syntax error")
# no fd of root's is adopted by number and passed on (luv's pipe:open, write2)
user_fails(d, "adopt.lua", 'dc.probe "posix"\nrequire("luv").new_pipe(false):open(3)\n',
           ["adopt.lua:3:", "pipe:open is not available"], "an fd adopted by number")
# the program not found, a bad site.conf, one others can write
refused("noexe", ["io_posix.lua"], "no_such_program_here", exe="no_such_program_here")
bad = site_conf(t.workdir("step_site_bad"), "scripts = /usr/share\nuser_script = yes\n")
refused("badconf", ["io_posix.lua"], "site.conf:2: unknown key 'user_script'", site=bad)
loose = site_conf(t.workdir("step_site_loose"), "user_scripts = yes\n")
os.chmod(loose, 0o666)
refused("looseconf", ["io_posix.lua"], "site.conf", site=loose)

# --- what the user's script can reach: the declare run holds no fd of root's; a consumer
# that forges "done" to root is not believed before the end; the step's real end is said
d = user_dir("step_reach")
user_script(d, "reach.lua", """local dc = require "datacrumbs"
local uv = require "luv"
dc.probe "posix"
local mine, sock = {}, nil
for fd = 0, 64 do
  local l = uv.fs_readlink("/proc/self/fd/" .. fd)
  if l then mine[#mine + 1] = fd .. " " .. l end
  if l and l:match("^socket:") then sock = fd end
end
local f = assert(io.open("fds." .. uv.os_getpid(), "w"))
f:write(table.concat(mine, "\\n"), "\\n")
f:close()
if sock then
  local t = uv.new_timer()
  t:start(1, 0, function() uv.fs_write(sock, "done 7 0 /forged\\nevents 99\\n") end)
end
""")
s = Step(d, ["./reach.lua"], site=open_site)
t.check(s.line().startswith("ready "), "reach: ready")
pid, answer, code = run_task(s, d, ["/usr/bin/dd", "if=/dev/zero", "of=x.out", "bs=100",
                                    "count=3", "status=none"], 0)
t.equal(answer, "ok", "reach: task answered after a forged done")
s.send("end")
done = s.line().split()
rc, err = s.wait()
trace = os.path.join(d, "41.0-n1.pfw.gz")
t.equal((rc, done[0], done[3:]), (0, "done", [trace]), "reach: the real done (%s)" % err)
t.check_pfw(trace)
ev = read(trace)
fh = {e["args"]["name"]: e["args"]["value"] for e in ev if e.get("name") == "FH"}
t.equal([e["args"]["ret"] for e in writes_of(ev, pid, fh.get(os.path.join(d, "x.out")))],
        [100] * 3, "reach: the task traced to its end")
lists = {}
for name in os.listdir(d):
    if name.startswith("fds."):
        lists[name] = open(os.path.join(d, name)).read().split("\n")
declare = [v for v in lists.values() if not any("bpf-map" in x for x in v)]
t.equal(len(lists), 2, "reach: the script ran twice (declare, consumer)")
t.equal(len(declare), 1, "reach: one run held no BPF map (the declare run)")
for v in declare:
    t.equal([x for x in v if "socket:" in x or "bpf" in x or "signalfd" in x], [],
            "reach: the declare run holds no socket, BPF object or signalfd of root's")

# --- a task root cannot hand over (the consumer does not answer in 10 s: a script's timer
# blocks its loop): the plugin hears fail, the task runs untraced, the trace says so
d = user_dir("step_untraced")
user_script(d, "block.lua", 'local dc = require "datacrumbs"\nlocal uv = require "luv"\n'
            'dc.probe "posix"\nlocal t = uv.new_timer()\n'
            't:start(1, 0, function() uv.sleep(12000) end)\n')
s = Step(d, ["./block.lua"], site=open_site)
t.check(s.line().startswith("ready "), "untraced: ready")
pid, answer, code = run_task(s, d, ["/usr/bin/true"], 3)
t.check(answer.startswith("fail ") and "did not answer" in answer,
        "untraced: the plugin hears fail: %r" % answer)
s.send("end")
done = s.line().split()
rc, err = s.wait()
trace = os.path.join(d, "41.0-n1.pfw.gz")
t.equal((rc, done[0], done[3:]), (0, "done", [trace]), "untraced: done (%s)" % err)
t.check_pfw(trace)
ev = read(trace)
t.equal([(e["pid"], e["args"].get("reason"), e["args"].get("rank")) for e in ev
         if e.get("name") == "untraced"], [(pid, "task not handed over", 3)],
        "untraced: the trace names the task it misses")
# (calls it was inside while still traced, the held child's read of its pipe, may end
# after; nothing of the program it execs is traced: not the loader's first openat)
t.equal([e for e in ev if e.get("pid") == pid and e.get("name") == "openat"], [],
        "untraced: nothing of its program")

# --- root killed (SIGKILL) mid-step: its consumer finishes the trace and exits ----------
d = user_dir("step_rootkill")
statusd2 = t.workdir("step_status2")
s = Step(d, ["io_posix.lua"], status_dir=statusd2)
t.check(s.line().startswith("ready "), "rootkill: ready")
held = links_of(s.p.pid)
pid, answer, code = run_task(s, d, ["/usr/bin/dd", "if=/dev/zero", "of=x.out", "bs=10",
                                    "count=4", "status=none"], 0)
cpid = json.load(open(os.path.join(statusd2, "41.0-n1.json")))["consumer_pid"]
pfd = os.pidfd_open(cpid)
s.p.kill()
s.wait()
import select  # noqa: E402
t.check(select.select([pfd], [], [], 30)[0] == [pfd], "rootkill: the consumer ended")
os.close(pfd)
trace = os.path.join(d, "41.0-n1.pfw.gz")
t.check_pfw(trace)
ev = read(trace)
fh = {e["args"]["name"]: e["args"]["value"] for e in ev if e.get("name") == "FH"}
t.equal([e["args"]["ret"] for e in writes_of(ev, pid, fh.get(os.path.join(d, "x.out")))],
        [10] * 4, "rootkill: the task's writes")
t.equal(len([e for e in ev if e.get("name") == "end"]), 1, "rootkill: end record")
none_left(held, "rootkill")

# --- the plugin goes away, or SIGTERM comes, while the declare run still runs ------------
d = user_dir("step_slowdeclare")
# the declare run says it runs through a FIFO (the test waits on it: no sleep), then sleeps
user_script(d, "slow.lua", 'local dc = require "datacrumbs"\ndc.probe "posix"\n'
            'local f = assert(io.open("sync.fifo", "w"))\nf:write("x")\nf:close()\n'
            'require("luv").sleep(600000)\n')
fifo = os.path.join(d, "sync.fifo")
os.mkfifo(fifo)
os.chown(fifo, NOBODY.pw_uid, NOBODY.pw_gid)
for how in ("eof", "sigterm"):
    s = Step(d, ["./slow.lua"], site=open_site)
    with open(fifo, "rb") as f:
        t.equal(f.read(1), b"x", "slow declare, %s: it runs" % how)
    if how == "eof":
        s.f.close()
        s.sock.close()
    else:
        s.p.send_signal(signal.SIGTERM)
    try:
        rc, err = s.wait()
    except subprocess.TimeoutExpired:
        s.p.kill()
        rc, err = None, "still running after 120 s"
    t.equal(rc, 125, "slow declare, %s: the tracer gives up (%s)" % (how, err.strip()))
    t.check(not [x for x in os.listdir(d) if x.endswith(".pfw.gz")], "slow declare: no trace")

# --- the plugin's socket closes without "end" (slurmstepd gone), and SIGTERM mid-step ---
for how in ("eof", "sigterm"):
    cwd = user_dir("step_" + how)
    s = Step(cwd, ["io_posix.lua"], job="42", step="batch")
    t.check(s.line().startswith("ready "), "%s: ready" % how)
    held = links_of(s.p.pid)
    pid, answer, code = run_task(s, cwd, ["/usr/bin/dd", "if=/dev/zero", "of=x.out",
                                          "bs=1000", "count=5", "status=none"], 0)
    t.equal(answer, "ok", "%s: task answered" % how)
    if how == "eof":
        s.f.close()
        s.sock.close()
    else:
        s.p.send_signal(signal.SIGTERM)
    rc, err = s.wait()
    t.equal(rc, 0, "%s: tracer exit status (%s)" % (how, err))
    trace = os.path.join(cwd, "42.batch-n1.pfw.gz")
    t.check_pfw(trace)
    ev = read(trace)
    fh = {e["args"]["name"]: e["args"]["value"] for e in ev if e.get("name") == "FH"}
    t.equal([e["args"]["ret"] for e in writes_of(ev, pid, fh.get(os.path.join(cwd, "x.out")))],
            [1000] * 5, "%s: the task's writes" % how)
    end = [e for e in ev if e.get("name") == "end"]
    t.equal(len(end), 1, "%s: the trace has its end record" % how)
    none_left(held, how)

t.finish()
