"""test_nothing_left.py: after the BPF tests, no BPF link or datacrumbs program may be left
that no live process holds, no legacy uprobe_events entry, no test program running. (A
tracer another user runs at the same time holds its own links: those are not leaks.)"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import dctest  # noqa: E402

dctest.need_root()
dctest.equal(dctest.orphan_links(), [], "BPF links left attached with no owner")
held = dctest.held_ids("prog_id")
progs = subprocess.run(["bpftool", "-j", "prog", "list"], capture_output=True, text=True)
dctest.equal(progs.returncode, 0, "bpftool prog list exit status")
ours = [p["id"] for p in json.loads(progs.stdout or "[]")
        if p.get("name") in ("dc_entry", "dc_return", "dc_fork", "dc_exec", "dc_exit")]
dctest.equal(sorted(set(ours) - held - dctest.held_ids("prog_id")), [],
             "datacrumbs BPF programs left loaded with no owner")
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
