"""test_security.py: datacrumbs run as root on a shared node, and as a plain user with
CAP_BPF + CAP_PERFMON, against what a hostile ordinary user (uid 65534, via setpriv) can
plant: symlinks and files where the trace goes, scripts in the current directory or in
writable places, a FIFO as the output; scripts that try to start programs; setuid
programs; signals during set-up; a full disk and a removed output directory."""
import os
import re
import shutil
import signal
import stat
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import dctest  # noqa: E402
from dctest import check, equal  # noqa: E402

dctest.need_root()
DC = dctest.DATACRUMBS
NOBODY = 65534
SAFETY = 120
AS_NOBODY = ["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY, "--clear-groups"]
POSIX = ('local dc = require "datacrumbs"\n'
         'dc.probe { layer = "posix", functions = { "open", "write", "read", "close" } }\n')


def write(path, text, mode=0o644):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)
    return path


def run(args, **kw):
    kw.setdefault("timeout", SAFETY)
    return dctest.run_dc(args, **kw)


def one_line(r, want, what):
    """r failed with exit 125 and one stderr line containing want."""
    lines = r.stderr.strip().splitlines()
    equal(r.returncode, 125, what + ": exit status (%s)" % r.stderr.strip())
    check(len(lines) == 1 and want in lines[0], "%s: one line with %r: %r" % (what, want, lines))


def nothing_attached(what):
    equal(dctest.orphan_links(), [], what + ": BPF links left attached")


def file_state(p):
    st = os.lstat(p)
    with open(p, "rb") as f:
        return (f.read(), stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid)


# 1. the trace file: planted symlinks, existing files, mode and owner ------------------
script = write(os.path.join(dctest.workdir("sec-script"), "s.lua"), POSIX)
d = dctest.workdir("sec-out")
os.chmod(d, 0o777)  # world-writable, no sticky bit: anyone may plant or replace names
victim = write(os.path.join(d, "victim"), "SECRET\n", 0o600)
before = file_state(victim)
subprocess.run(AS_NOBODY + ["ln", "-s", victim, os.path.join(d, "t.pfw.gz")], check=True)
subprocess.run(AS_NOBODY + ["ln", "-s", os.path.join(d, "created"),
                            os.path.join(d, "dangling.pfw.gz")], check=True)
r = run(["run", "-o", os.path.join(d, "t.pfw.gz"), script, "--", "/bin/true"])
one_line(r, "is a symbolic link, not a trace file", "symlink to a root file as -o")
equal(file_state(victim), before, "the symlink's target is unchanged (content, mode, owner)")
r = run(["run", "-o", os.path.join(d, "dangling.pfw.gz"), script, "--", "/bin/true"])
one_line(r, "is a symbolic link", "dangling symlink as -o")
check(not os.path.lexists(os.path.join(d, "created")), "the dangling symlink's target is not created")
r = run(["run", "-o", os.path.join(d, "t.pfw.gz"), "--force", script, "--", "/bin/true"])
one_line(r, "is a symbolic link", "--force does not follow a symlink")
equal(file_state(victim), before, "--force: the symlink's target is unchanged")

# a directory symlink nobody planted in the -o path: root does not follow it to create the
# trace in a directory of root's (0700, empty afterwards)
rootdir = os.path.join(d, "rootonly")
os.makedirs(rootdir)
os.chmod(rootdir, 0o700)
subprocess.run(AS_NOBODY + ["ln", "-s", rootdir, os.path.join(d, "sub")], check=True)
marker = os.path.join(d, "ran")
for o in (os.path.join(d, "sub", "a.pfw.gz"), os.path.join(d, "sub")):
    r = run(["run", "-o", o, script, "--", "/bin/sh", "-c", "touch " + marker])
    one_line(r, "%s/sub is a symbolic link of uid %d (neither root nor you): not followed "
             "as root" % (d, NOBODY), "-o %s through nobody's directory symlink" % o)
equal(os.listdir(rootdir), [], "nothing created through nobody's directory symlink")
check(not os.path.exists(marker), "the command did not start")

old = write(os.path.join(d, "old.pfw.gz"), "KEEP", 0o600)
r = run(["run", "-o", old, script, "--", "/bin/true"])
one_line(r, "old.pfw.gz exists: not overwritten (give --force", "existing trace without --force")
equal(file_state(old)[0], b"KEEP", "the existing trace is kept")
r = run(["run", "-q", "-o", old, "--force", script, "--", "/bin/true"])
equal(r.returncode, 0, "--force on the user's own trace: exit status (%s)" % r.stderr)
dctest.check_pfw(old)
equal(file_state(old)[1:], (0o600, 0, 0), "--force: the new trace's mode and owner")
theirs = write(os.path.join(d, "theirs.pfw.gz"), "THEIRS", 0o644)
os.chown(theirs, NOBODY, NOBODY)
r = run(["run", "-o", theirs, "--force", script, "--", "/bin/true"])
one_line(r, "is another user's: --force replaces only your own", "--force on another's file")
equal(file_state(theirs)[0], b"THEIRS", "another user's file is kept")
linked = write(os.path.join(d, "linked.pfw.gz"), "LINKED", 0o600)
os.link(linked, os.path.join(d, "hardlink"))
r = run(["run", "-o", linked, "--force", script, "--", "/bin/true"])
one_line(r, "has other hard links", "--force on a file with two links")
equal(file_state(linked)[0], b"LINKED", "a hard-linked file is kept")

# new traces: 0600 and the invoking user's; 0640 on request; the sudo caller's under sudo
for args, env, mode, owner, note in (
        ([], {}, 0o600, (0, 0), None),
        (["--group-readable"], {}, 0o640, (0, 0), None),
        ([], {"SUDO_UID": str(NOBODY), "SUDO_GID": str(NOBODY), "SUDO_USER": "nobody"},
         0o600, (NOBODY, NOBODY), "datacrumbs: note: under sudo /bin/true runs as root "
         "(give -u nobody to run it as you)"),
        (["-u", "nobody"], {"SUDO_UID": str(NOBODY), "SUDO_GID": str(NOBODY),
                            "SUDO_USER": "nobody"}, 0o600, (NOBODY, NOBODY), None)):
    od = dctest.workdir("sec-mode")
    r = run(["run", "-q", "-o", od] + args + [script, "--", "/bin/true"],
            env=dict(os.environ, **env))
    what = "new trace %s %s" % (args, env)
    equal(r.returncode, 0, what + ": exit status (%s)" % r.stderr)
    equal([ln for ln in r.stderr.splitlines() if "note:" in ln], [note] if note else [],
          what + ": the sudo note")
    t = dctest.find_trace(od)
    dctest.check_pfw(t)
    st = os.stat(t)
    equal((stat.S_IMODE(st.st_mode), (st.st_uid, st.st_gid)), (mode, owner), what + ": mode, owner")

# -u USER: the command runs as that user, with that user's groups
od = dctest.workdir("sec-user")
r = run(["run", "-q", "-o", od, "-u", "nobody", script, "--", "/usr/bin/id"])
equal(r.returncode, 0, "-u nobody: exit status (%s)" % r.stderr)
check(r.stdout.startswith("uid=%d(nobody) gid=%d(nogroup)" % (NOBODY, NOBODY)), "-u: id says %r" % r.stdout)
r = run(["run", "-u", "nosuchuserxyz", script, "--", "/bin/true"])
one_line(r, "-u nosuchuserxyz: no such user", "-u of a missing user")

# 2. scripts: never from the current directory; as root only trusted files ---------------
d = dctest.workdir("sec-cwd")
write(os.path.join(d, "io_posix.lua"), 'io.open("MARKER", "w"):write("planted ran")\n')
write(os.path.join(d, "evil.lua"), 'io.open("MARKER", "w"):write("planted ran")\n')
r = run(["run", "-q", "-o", d, "io_posix.lua", "--", "/bin/true"], cwd=d)
equal(r.returncode, 0, "io_posix.lua with a planted one in the cwd: exit status (%s)" % r.stderr)
check(not os.path.exists(os.path.join(d, "MARKER")), "the planted io_posix.lua did not run")
t = dctest.find_trace(d)
dctest.check_pfw(t)
check(len(dctest.calls(dctest.read_trace(t)[0])) > 0, "the shipped io_posix.lua traced /bin/true")
r = run(["run", "evil.lua", "--", "/bin/true"], cwd=d)
one_line(r, "script 'evil.lua' not found", "a bare name only in the cwd")
check("never in the current directory: for a file there, say ./evil.lua" in r.stderr,
      "the message says how to run it: %r" % r.stderr)
check(not os.path.exists(os.path.join(d, "MARKER")), "evil.lua did not run")
r = run(["run", "./evil.lua", "--", "/bin/true"], cwd=d)
check(os.path.exists(os.path.join(d, "MARKER")), "./evil.lua, said as a path, runs")

d = dctest.workdir("sec-trust")
gw = write(os.path.join(d, "gw.lua"), POSIX, 0o664)
r = run(["run", gw, "--", "/bin/true"])
one_line(r, "script %s: refused as root: writable by its group (chmod go-w %s)" % (gw, gw),
         "a group-writable script")
ow = write(os.path.join(d, "ow.lua"), POSIX, 0o644)
os.chown(ow, NOBODY, NOBODY)
r = run(["run", ow, "--", "/bin/true"])
one_line(r, "script %s: refused as root: owned by uid %d, not by root" % (ow, NOBODY),
         "another user's script")
sub = os.path.join(d, "theirdir")
os.mkdir(sub)
os.chown(sub, NOBODY, NOBODY)
inner = write(os.path.join(sub, "x.lua"), POSIX)
r = run(["run", inner, "--", "/bin/true"])
one_line(r, "refused as root: directory %s is owned by uid %d" % (sub, NOBODY),
         "a root-owned script in another user's directory")
open_dir = os.path.join(d, "open")
os.mkdir(open_dir)
os.chmod(open_dir, 0o777)
write(os.path.join(open_dir, "found.lua"), POSIX)
r = run(["run", "found.lua", "--", "/bin/true"],
        env=dict(os.environ, DATACRUMBS_SCRIPT_PATH=open_dir))
one_line(r, "directory %s is writable by others" % open_dir, "a world-writable script search dir")
pdir = os.path.join(d, "probes")
os.mkdir(pdir)
src_probes = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "probes")
shutil.copy(os.path.join(src_probes, "posix.yaml"), pdir)
os.chmod(os.path.join(pdir, "posix.yaml"), 0o666)
ok = write(os.path.join(d, "ok.lua"), POSIX)
r = run(["run", ok, "--", "/bin/true"],
        env=dict(os.environ, DATACRUMBS_PROBE_PATH=pdir))
check(r.returncode == 125 and "ok.lua:2:" in r.stderr and "probe description %s/posix.yaml: refused as "
      "root: writable by others" % pdir in r.stderr, "a world-writable probe description: %r" % r.stderr)

# 3. the sandbox: no programs started, no native code, without --unsafe ----------------
d = dctest.workdir("sec-sandbox")
marker = os.path.join(d, "M")
for call, name in (('os.execute("touch %s")' % marker, "os.execute"),
                   ('io.popen("touch %s")' % marker, "io.popen"),
                   ('package.loadlib("libc.so.6", "*")', "package.loadlib"),
                   ('require("luv").spawn("touch", { args = { "%s" } }, function() end)' % marker,
                    "uv.spawn"),
                   ('require("luv").new_thread(function() end)', "uv.new_thread")):
    s = write(os.path.join(d, "box.lua"), POSIX + call + "\n")
    for cmd in (["run", s, "--", "/bin/true"], ["check", s]):
        r = run(cmd)
        one_line(r, "box.lua:3: %s is not available without --unsafe" % name, "%s %s" % (cmd[0], name))
    check(not os.path.exists(marker), "%s started nothing" % name)
s = write(os.path.join(d, "env.lua"), POSIX + 'require("luv").os_setenv("LD_PRELOAD", "/x.so")\n')
r = run(["run", s, "--", "/bin/true"])
one_line(r, "env.lua:3: uv.os_setenv is not available without --unsafe", "uv.os_setenv")
# under sudo a script opens files with the sudo caller's rights (setfsuid): not the
# tracer's own memory (/proc/self/mem: how native code could be written in), not root's files
rootonly = os.path.join(d, "rootonly")
os.mkdir(rootonly, 0o700)
sudo_env = dict(os.environ, SUDO_UID=str(NOBODY), SUDO_GID=str(NOBODY), SUDO_USER="nobody")
for target, line in (("/proc/self/mem", 'assert(io.open("/proc/self/mem", "r+b"))'),
                     (rootonly + "/x", 'assert(io.open("%s/x", "w"))' % rootonly)):
    s = write(os.path.join(d, "fs.lua"), POSIX + line + "\n")
    r = run(["run", "-o", d, s, "--", "/bin/true"], env=sudo_env)
    one_line(r, "fs.lua:3: %s: Permission denied" % target, "under sudo, io.open of %s" % target)
check(not os.path.exists(rootonly + "/x"), "under sudo the script created nothing in root's directory")
# the event callbacks of one drain keep the sudo caller's fs ids between them (no switch
# per event): each of them is still refused root's directory, while the processes' records
# between them (sh's fork and cat's exec) are read with root's, and the trace is written
s = write(os.path.join(d, "cbfs.lua"), POSIX +
          'local calls, ok = 0, 0\n'
          'dc.on_event(function(ev)\n'
          '  calls = calls + 1\n'
          '  local f = io.open("%s/y", "w")\n'
          '  if f then ok = ok + 1; f:close() end\n'
          'end)\n'
          'dc.on_end(function() io.stderr:write(("cbfs %%d %%d\\n"):format(calls, ok)) end)\n'
          % rootonly)
od = dctest.workdir("sec-cbfs")
r = run(["run", "-o", od, s, "--", "/bin/sh", "-c", "cat /etc/hostname >/dev/null; /bin/true"],
        env=sudo_env)
equal(r.returncode, 0, "under sudo, callbacks: exit status (%s)" % r.stderr)
t = dctest.find_trace(od)
dctest.check_pfw(t)
events, _, _ = dctest.read_trace(t)
got = [ln.split()[1:] for ln in r.stderr.splitlines() if ln.startswith("cbfs ")]
calls = [e for e in events if e.get("ph") == "X" and e.get("cat") == "POSIX"]
check(len(got) == 1 and int(got[0][0]) >= len(calls) > 0 and got[0][1] == "0",
      "under sudo every callback (%s; %d calls written) was refused root's directory"
      % (got, len(calls)))
check(not os.path.exists(rootonly + "/y"), "under sudo no callback created a file in root's directory")
equal(sorted({e["name"] for e in calls if e.get("path") == "/etc/hostname"} & {"openat", "read"}),
      ["openat", "read"], "under sudo, callbacks: cat's exec'd calls on /etc/hostname are there")
equal(os.stat(t).st_uid, NOBODY, "under sudo, callbacks: the trace is the sudo caller's")
# under sudo luv's calls that act with root's real and effective ids are refused
for call in ("uv.kill(1, 0)", "uv.new_pipe(false)", "uv.new_tcp()", "uv.os_setpriority(1, 0)"):
    s = write(os.path.join(d, "asroot.lua"), POSIX + 'local uv = require "luv"\n' + call + "\n")
    r = run(["run", "-o", d, s, "--", "/bin/true"], env=sudo_env)
    one_line(r, "asroot.lua:4: %s is not available without --unsafe (it would signal, renice "
             "or open sockets as root, not as the sudo caller," % call.split("(")[0],
             "under sudo, " + call)
r = run(["run", "-q", "-o", d, s, "--", "/bin/true"])
equal(r.returncode, 0, "as root itself uv.os_setpriority is there (%s)" % r.stderr)
# a finalizer (__gc) is script code too: never run with root's fs ids, neither in a
# collection the tracer's own Lua calls cause (300,000 finalizable objects from the top
# level, then events) nor at the Lua state's close (one kept until the end)
s = write(os.path.join(d, "gc.lua"), POSIX +
          'local hits, ended = 0, false\n'
          'local mt = { __gc = function()\n'
          '  if ended then return end\n'
          '  local f = io.open("%s/gc", "a")\n'
          '  if f then hits = hits + 1; f:close() end\n'
          'end }\n'
          'for i = 1, 300000 do setmetatable({}, mt) end\n'
          'KEEP = setmetatable({}, { __gc = function()\n'
          '  local f = io.open("%s/gc-close", "w")\n'
          '  io.stderr:write(f and "gc-close-escaped\\n" or "")\n'
          '  if f then f:close() end\n'
          'end })\n'
          'dc.on_event(function(ev) local t = { ev.name, ev.path } end)\n'
          'dc.on_process(function(p) local t = { p.event } end)\n'
          'dc.on_end(function() ended = true; io.stderr:write(("gc-hits %%d\\n"):format(hits)) end)\n'
          % (rootonly, rootonly))
od = dctest.workdir("sec-gc")
r = run(["run", "-o", od, s, "--", "/bin/sh", "-c", "for i in 1 2 3 4 5 6 7 8; do cat /etc/hostname; done >/dev/null"],
        env=sudo_env)
equal(r.returncode, 0, "under sudo, finalizers: exit status (%s)" % r.stderr)
dctest.check_pfw(dctest.find_trace(od))
check(not os.path.exists(rootonly + "/gc") and not os.path.exists(rootonly + "/gc-close") and
      "gc-hits 0" in r.stderr.splitlines() and "escaped" not in r.stderr,
      "under sudo no finalizer opened a file in root's directory (%r)" % r.stderr[-300:])
r = run(["run", "-q", "-o", d, write(os.path.join(d, "ok.lua"), POSIX + 'assert(io.open("%s/x", "w"))\n'
         % rootonly), "--", "/bin/true"])
equal(r.returncode, 0, "as root itself the same script writes there (%s)" % r.stderr)
s = write(os.path.join(d, "dump.lua"), POSIX + 'assert(load(string.dump(function() end)))\n')
r = run(["run", s, "--", "/bin/true"])
one_line(r, "load: binary chunks are not available without --unsafe", "a binary chunk")
s = write(os.path.join(d, "cmod.lua"), POSIX + 'package.loaded.luv = nil\npackage.preload.luv = nil\n'
          'require "luv"\n')
r = run(["run", s, "--", "/bin/true"])
check(r.returncode == 125 and "cmod.lua:5: module 'luv' not found" in r.stderr,
      "a C module from package.cpath: %r" % r.stderr)
r = run(["run", "-q", "--unsafe", "-o", d, s, "--", "/bin/true"])
equal(r.returncode, 0, "--unsafe: C modules load (%s)" % r.stderr)
s = write(os.path.join(d, "exec.lua"), POSIX + 'os.execute("touch %s")\n' % marker)
r = run(["run", "-q", "--unsafe", "-o", d, s, "--", "/bin/true"])
equal(r.returncode, 0, "--unsafe os.execute: exit status (%s)" % r.stderr)
check(os.path.exists(marker), "--unsafe: os.execute ran")

# 4. output targets that are not files: refused before anything starts -------------------
d = dctest.workdir("sec-fifo")
fifo = os.path.join(d, "f.pfw.gz")
os.mkfifo(fifo)
os.mkfifo(os.path.join(d, "plain"))
ran = os.path.join(d, "ran")
for target, want in ((fifo, "is a FIFO, not a trace file"),
                     (os.path.join(d, "plain"), "exists and is a FIFO"),
                     ("/dev/null", "exists and is a character device")):
    r = run(["run", "-o", target, script, "--", "/usr/bin/touch", ran], timeout=10)
    one_line(r, want, "-o %s" % target)
check(not os.path.exists(ran), "the command never started")
nothing_attached("FIFO")

# 5. SIGTERM while the script sets up: the run ends at once, nothing attached ----------
d = dctest.workdir("sec-sigterm")
ready = os.path.join(d, "ready")
os.mkfifo(ready)
s = write(os.path.join(d, "loop.lua"), POSIX + 'local f = io.open(arg[1], "w")\n'
          'f:write("ready\\n")\nf:close()\nwhile true do end\n')
p = subprocess.Popen([DC, "run", "-o", d, s, ready, "--", "/usr/bin/touch", ran],
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
with open(ready) as f:
    equal(f.read(), "ready\n", "the script reached its loop")
p.send_signal(signal.SIGTERM)
out, err = p.communicate(timeout=SAFETY)
equal(p.returncode, 128 + signal.SIGTERM, "SIGTERM during set-up: exit status")
equal(err.strip().splitlines(), ["datacrumbs: Terminated while the script ran: stopped, nothing "
                                 "was traced"], "SIGTERM during set-up: stderr")
equal(sorted(os.listdir(d)), ["loop.lua", "ready"], "no trace, the command never ran")
nothing_attached("SIGTERM during set-up")

# 6. write errors: a full disk, a removed directory ------------------------------------
d = dctest.workdir("sec-enospc")
small = os.path.join(d, "small")
os.mkdir(small)
subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", small], check=True)
try:
    r = run(["run", "-o", small, script, "--", "dd", "if=/dev/zero", "of=/dev/null", "bs=1",
             "count=100000"])
    equal(r.returncode, 125, "ENOSPC: exit status 125 (%s)" % r.stderr)
    check("100000+0 records out" in r.stderr, "ENOSPC: dd ran to its end unharmed")
    cut = [ln for ln in r.stderr.splitlines() if "cannot write" in ln]
    check(len(cut) == 1 and "No space left on device: the trace is cut here (dd goes on, "
          "untraced from now)" in cut[0], "ENOSPC: one line naming it: %r" % cut)
    m = re.search(r"datacrumbs: (\d+) events written, (\d+) not written, 0 lost, trace (\S+) "
                  r"\(INCOMPLETE: cut short\)", r.stderr)
    check(m is not None, "ENOSPC: the summary line: %r" % r.stderr)
    if m:
        t = m.group(3)
        dctest.check_pfw(t, partial=True)
        events, _, _ = dctest.read_trace(t)
        traced = [e for e in events if e.get("cat") != "datacrumbs"]
        equal(len(traced), int(m.group(1)), "ENOSPC: events in the file = events written")
        check(int(m.group(1)) + int(m.group(2)) >= 200000,
              "ENOSPC: written + not written cover dd's 200,000 calls: %s + %s"
              % (m.group(1), m.group(2)))
        check(not [e for e in events if e.get("name") == "end"], "ENOSPC: no end record")
finally:
    subprocess.run(["umount", small], check=True)

d = dctest.workdir("sec-removed")
gone = os.path.join(d, "gone")
os.mkdir(gone)
go, rdy = os.path.join(d, "go"), os.path.join(d, "rdy")
os.mkfifo(go)
os.mkfifo(rdy)
p = subprocess.Popen([DC, "run", "-o", gone, script, "--", os.environ["PROG_WAIT"], "after",
                      os.path.join(d, "after.out"), "100"], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
check(p.stdout.readline().decode().startswith("ready "), "prog_wait runs, traced")
shutil.rmtree(gone)
p.stdin.write(b"g")
p.stdin.close()
p.wait(timeout=SAFETY)
err = p.stderr.read().decode()
equal(p.returncode, 125, "directory removed: exit status (%s)" % err)
check("the file was removed (or its directory): the trace is cut here" in err,
      "directory removed: said: %r" % err)
equal(os.path.getsize(os.path.join(d, "after.out")), 100, "directory removed: the program finished its write")

# 7. capability mode: no root, setuid programs, other users' processes --------------------
if not shutil.which("setcap"):
    print("SKIP: setcap (libcap2-bin) missing: capability mode NOT TESTED", flush=True)
else:
    d = dctest.workdir("sec-caps")
    os.chmod(d, 0o755)
    capdc = os.path.join(d, "datacrumbs")
    shutil.copy(DC, capdc)
    subprocess.run(["setcap", "cap_bpf,cap_perfmon+ep", capdc], check=True)
    prog = os.path.join(d, "prog")
    shutil.copy(os.environ["PROG_PRIVEXEC"], prog)
    helper = os.path.join(d, "helper")
    shutil.copy(os.environ["PROG_PRIVEXEC"], helper)
    os.chmod(helper, 0o4755)  # setuid root: a program that gains privileges at exec
    secret = write(os.path.join(d, "secret"), "TOPSECRET", 0o600)
    out_d = os.path.join(d, "out")
    os.mkdir(out_d)
    os.chmod(out_d, 0o777)
    hello = os.path.join(out_d, "hello")
    s = write(os.path.join(d, "s.lua"), POSIX)
    r = subprocess.run(AS_NOBODY + [capdc, "run", "-o", out_d, s, "--", prog, "exec", hello,
                                    helper, secret], capture_output=True, text=True, timeout=SAFETY)
    equal(r.returncode, 0, "caps: exit status (%s)" % r.stderr)
    equal(r.stdout, "read 9 euid 0\n", "caps: the setuid helper ran with its privileges")
    check("exec'd helper, which gains privileges (setuid, setgid or file capabilities): not "
          "traced from here on" in r.stderr, "caps: stderr says tracing stopped: %r" % r.stderr)
    t = dctest.find_trace(out_d)
    dctest.check_pfw(t)
    st = os.stat(t)
    equal((st.st_uid, stat.S_IMODE(st.st_mode)), (NOBODY, 0o600), "caps: the trace is the user's, 0600")
    events, _, meta = dctest.read_trace(t)
    posix = dctest.calls(events)
    equal([(e["name"], e["args"].get("ret")) for e in posix if e["path"] == hello],
          [("openat", 3), ("write", 6), ("close", 0)], "caps: the program's own calls are traced")
    equal([e for e in posix if e["path"] == secret], [], "caps: nothing of the setuid program")
    unt = [e for e in events if e.get("name") == "untraced" and e.get("cat") == "datacrumbs"]
    equal([e["args"]["reason"] for e in unt], ["privileged exec"], "caps: the untraced record")
    sh = {m["args"]["value"]: m["args"]["name"] for m in meta if m["name"] == "SH"}
    equal([sh.get(e["args"]["exec_hash"]) for e in unt], ["helper"], "caps: it names the program")
    check(all(e["ts"] <= unt[0]["ts"] for e in posix) if unt else False,
          "caps: no call traced after the privileged exec")

    # -p of a process that is not the user's
    w = subprocess.Popen([os.environ["PROG_WAIT"], "after", os.path.join(d, "w.out"), "1"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    pid = int(w.stdout.readline().split()[1])
    r = subprocess.run(AS_NOBODY + [capdc, "run", "-o", out_d, s, "-p", str(pid)],
                       capture_output=True, text=True, timeout=SAFETY)
    one_line(r, "-p %d: refused: the process is not yours" % pid, "caps: -p of root's process")
    w.stdin.close()
    w.wait(timeout=SAFETY)

    # features: the uprobe layers work through uprobe_multi links
    r = subprocess.run(AS_NOBODY + [capdc, "features"], capture_output=True, text=True,
                       timeout=SAFETY)
    lay = [ln for ln in r.stdout.splitlines() if ln.startswith("layers")]
    check(len(lay) == 1 and "POSIX, STDIO, MPI-IO yes" in lay[0], "caps: features: %r" % lay)
    nothing_attached("capability mode")

dctest.finish()
