"""test_vfs.py: the VFS layer (io_vfs.lua). On a kernel that allows fentry or kprobes, dd's
vfs_read, vfs_write and vfs_open calls are traced exactly under their system calls, with
each mechanism the kernel allows (DATACRUMBS_NO_FENTRY forces kprobes where both are;
tests/test_kernels.py runs this on Debian's 6.1 and 6.12); on one that allows neither (this VM: ftrace locked
down, CONFIG_KPROBES off), the run stops before the command starts with one line that
names both reasons and points at io_syscalls.lua. `datacrumbs features --json` says which
case this kernel is; unit_kmech covers the per-function choice itself."""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
import dctest  # noqa: E402
from dctest import check, equal  # noqa: E402

dctest.need_root()
r = dctest.run_dc(["features", "--json"])
equal(r.returncode, 0, "features --json exit status")
feats = json.loads(r.stdout)["mechanisms"]
fentry, kprobe = feats["fentry"], feats["kprobe"]
d = dctest.workdir("vfs")
out = os.path.join(d, "out")
marker = os.path.join(d, "marker")

if not fentry["ok"] and not kprobe["ok"]:
    print("this kernel allows neither fentry nor kprobes: checking the refusal")
    r = dctest.run_dc(["run", "-o", d, "io_vfs.lua", "--", "touch", marker])
    equal(r.returncode, 125, "exit status")
    err = r.stderr.splitlines()
    equal(len(err), 1, "one line on stderr: %r" % err)
    line = err[0] if err else ""
    check(re.match(r"^datacrumbs: \S+/vfs\.yaml: this layer probes kernel functions with "
                   r"fentry/fexit or kprobes, and this kernel allows neither \(fentry: (.+); "
                   r"kprobe: (.+)\): io_syscalls\.lua traces the same I/O at the system calls "
                   r"\(datacrumbs features shows what this kernel allows\)$", line),
          "the message: %r" % line)
    check(fentry["reason"] in line and kprobe["reason"] in line,
          "the message carries features' reasons: %r" % line)
    check(not os.path.exists(marker), "the command did not start")
    equal(os.listdir(d), [], "no trace file")
else:
    def dd_under_vfs(label, env_extra):
        """dd of 100 x 64 KiB from a file of the test's own under io_vfs.lua: each read,
        write and open at the VFS layer, exact, under the system call that made it."""
        dd = dctest.workdir("vfs_" + label)
        src, dst = os.path.join(dd, "src"), os.path.join(dd, "dst")
        with open(src, "wb") as f:
            f.write(b"x" * (100 * 65536))
        r = dctest.run_dc(["run", "-o", dd, "io_vfs.lua", "--", "dd", "if=" + src,
                           "of=" + dst, "bs=64k", "count=100", "status=none"],
                          env=dict(os.environ, **env_extra))
        equal(r.returncode, 0, "%s: dd under io_vfs.lua (stderr %s)" % (label, r.stderr))
        t = dctest.find_trace(dd)
        dctest.check_pfw(t)
        events, _, _ = dctest.read_trace(t)
        vfs = dctest.calls(events, "VFS")
        sysc = {(e["pid"], e["id"]): e for e in dctest.calls(events, "SYSCALL")}
        for name, path, sysname in (("vfs_write", dst, "sys_write"),
                                    ("vfs_read", src, "sys_read")):
            got = [e for e in vfs if e["name"] == name and e["path"] == path]
            equal([(e["args"]["count"], e["args"]["ret"]) for e in got], [(65536, 65536)] * 100,
                  "%s: dd's %s calls on %s" % (label, name, os.path.basename(path)))
            equal({sysc.get((e["pid"], e["args"]["p_idx"]), {}).get("name") for e in got},
                  {sysname}, "%s: each %s nests under a %s" % (label, name, sysname))
        # each openat of the two files made one vfs_open (named by the inode, which the
        # open's own return teaches the tracer: after it)
        for path in (src, dst):
            op = [e for e in sysc.values() if e["name"] == "sys_openat" and e["path"] == path]
            under = [e for e in vfs if e["name"] == "vfs_open" and
                     any((e["pid"], e["args"]["p_idx"]) == (o["pid"], o["id"]) for o in op)]
            equal((len(op), len(under)), (1, 1), "%s: one sys_openat of %s, one vfs_open "
                  "under it" % (label, os.path.basename(path)))
        return r.stderr

    mechs = [m for m in ("fentry", "kprobe") if feats[m]["ok"]]
    print("this kernel allows %s: the VFS layer through each" % " and ".join(mechs))
    err = dd_under_vfs("default", {})
    check("DATACRUMBS_NO_FENTRY" not in err, "default: no forced mechanism")
    if len(mechs) == 2:
        err = dd_under_vfs("kprobe", {"DATACRUMBS_NO_FENTRY": "1"})
        check("DATACRUMBS_NO_FENTRY is set: layer VFS uses kprobes" in err,
              "kprobe: the note says the layer uses kprobes: %r" % err)
equal(dctest.orphan_links(), [], "nothing left attached")
dctest.finish()
