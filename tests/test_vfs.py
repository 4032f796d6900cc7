"""test_vfs.py: the VFS layer (io_vfs.lua). On a kernel that allows fentry or kprobes, dd's
vfs_write calls are traced exactly; on one that allows neither (this VM: ftrace locked
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
    r = dctest.run_dc(["run", "-o", d, "io_vfs.lua", "--", "dd", "if=/dev/zero", "of=" + out,
                       "bs=64k", "count=100", "status=none"])
    equal(r.returncode, 0, "dd under io_vfs.lua (stderr %s)" % r.stderr)
    t = dctest.find_trace(d)
    dctest.check_pfw(t)
    events, _, _ = dctest.read_trace(t)
    w = [e for e in dctest.calls(events, "VFS") if e["name"] == "vfs_write" and e["path"] == out]
    equal([(e["args"]["count"], e["args"]["ret"]) for e in w], [(65536, 65536)] * 100,
          "dd's vfs_write calls on out")
    sysw = {(e["pid"], e["id"]) for e in dctest.calls(events, "SYSCALL") if e["name"] == "sys_write"}
    check(all((e["pid"], e["args"]["p_idx"]) in sysw for e in w), "vfs_write nests under sys_write")
equal(dctest.orphan_links(), [], "nothing left attached")
dctest.finish()
