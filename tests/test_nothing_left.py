"""test_nothing_left.py: after the BPF tests, nothing of datacrumbs may be left on the machine:
no BPF program of any of the project's objects (bpf/*.bpf.o: their program names, as the
kernel truncates them to 15 characters), no link or perf_event uprobe attached to one, no
legacy uprobe_events entry, no test program running. A program is a leak when no live
process holds it, or when the one holding it is this build's datacrumbs (the tests are
over: none of ours may still run). Another tree's tracer running at the same time holds its
own programs: those are named in a NOTE, not counted."""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import dctest  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
BPF_OBJ_DIR = os.environ.get("BPF_OBJ_DIR") or os.path.join(HERE, "..", "build", "bpf")
ours_exe = os.path.realpath(dctest.DATACRUMBS)


def program_names(d):
    """Kernel names of the BPF programs in every .bpf.o under d: global functions outside
    .text (in their SEC() sections), cut to 15 characters (BPF_OBJ_NAME_LEN - 1)."""
    names = {}
    for f in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        if not f.endswith(".bpf.o"):
            continue
        p = os.path.join(d, f)
        secs = subprocess.run(["readelf", "-SW", p], capture_output=True, text=True).stdout
        text = {m.group(1) for m in re.finditer(r"^\s*\[\s*(\d+)\]\s+\.text\s", secs, re.M)}
        syms = subprocess.run(["readelf", "-sW", p], capture_output=True, text=True).stdout
        for ln in syms.splitlines():
            c = ln.split()
            if len(c) >= 8 and c[3] == "FUNC" and c[4] == "GLOBAL" and c[6] not in text \
                    and c[6] != "UND":
                names[c[7][:15]] = f
    return names


holders = dctest.holders


def exe(pid):
    try:
        return os.path.realpath("/proc/%d/exe" % pid)
    except OSError:
        return None


def bpftool(*what):
    r = subprocess.run(["bpftool", "-j"] + list(what), capture_output=True, text=True)
    dctest.equal(r.returncode, 0, "bpftool %s exit status (%s)" % (" ".join(what), r.stderr))
    return json.loads(r.stdout or "[]") if r.returncode == 0 else []


def leaked(objs, key):
    """Of objs (id -> description), those no live process holds or this build's datacrumbs
    holds; NOTEs for the ones other live processes hold. Read twice: a holder seen in
    either reading counts (a process starting or ending between the readings)."""
    h1, h2 = holders(key), holders(key)
    out = []
    for i, what in sorted(objs.items()):
        pids = h1.get(i, set()) | h2.get(i, set())
        live = {p: exe(p) for p in pids}
        mine = sorted(p for p, e in live.items() if e == ours_exe)
        if not pids:
            out.append("%s (no process holds it)" % what)
        elif mine:
            out.append("%s (held by this build's datacrumbs, pid %s)" % (what, mine))
        else:
            print("NOTE: %s held by another live process: %s" % (what, live), flush=True)
    return out


dctest.need_root()
names = program_names(BPF_OBJ_DIR)
dctest.check(len(names) >= 4, "BPF program names from %s: %d" % (BPF_OBJ_DIR, len(names)))
progs = {p["id"]: "program %d %s (%s)" % (p["id"], p.get("name"), names[p.get("name")])
         for p in bpftool("prog", "list") if p.get("name") in names}
dctest.equal(leaked(progs, "prog_id"), [], "datacrumbs BPF programs left loaded")
links = {l["id"]: "link %d (%s) of %s" % (l["id"], l.get("type"), progs[l["prog_id"]])
         for l in bpftool("link", "list") if l.get("prog_id") in progs}
dctest.equal(leaked(links, "link_id"), [], "BPF links left attached to datacrumbs programs")
# links of no program of ours that no process holds: left by something, reported as before
dctest.equal(dctest.orphan_links(), [], "BPF links left attached with no owner")
# perf_event uprobes (the attachment where the kernel has no uprobe_multi links): bpftool
# lists them by the process holding the perf event fd
perf = [p for p in bpftool("perf", "list") if p.get("fd_type") in ("uprobe", "uretprobe") and
        p.get("prog_id") in progs and exe(p.get("pid", 0)) == ours_exe]
dctest.equal(["%s on %s+%s (pid %d)" % (progs[p["prog_id"]], p.get("filename"), p.get("offset"),
                                        p["pid"]) for p in perf], [],
             "perf_event probes of this build's datacrumbs left")
for tr in ("/sys/kernel/tracing", "/sys/kernel/debug/tracing"):
    ue = os.path.join(tr, "uprobe_events")
    if os.path.exists(ue):
        dctest.equal(open(ue).read(), "", ue + " entries left")
# (a zombie is a program that has ended and waits to be reaped by init: not running)
ps = [ln.split() for ln in subprocess.run(["ps", "-eo", "stat=,comm="], capture_output=True,
                                          text=True).stdout.splitlines()]
dctest.equal([c for st, c in ps if c in ("prog_io", "prog_wait", "prog_spin") and not st.startswith("Z")],
             [], "test programs left running")
dctest.finish()
