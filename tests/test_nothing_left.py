"""test_nothing_left.py: after the BPF tests, no BPF link, no datacrumbs program and no
legacy uprobe_events entry may be left on the machine."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import dctest  # noqa: E402

dctest.need_root()
links = subprocess.run(["bpftool", "link", "list"], capture_output=True, text=True)
dctest.equal(links.returncode, 0, "bpftool link list exit status")
dctest.equal([l for l in links.stdout.splitlines() if l[:1].isdigit()], [],
             "BPF links left attached")
progs = subprocess.run(["bpftool", "prog", "list"], capture_output=True, text=True)
dctest.equal([l for l in progs.stdout.splitlines() if "dc_entry" in l or "dc_return" in l
              or "dc_fork" in l], [], "datacrumbs BPF programs left loaded")
for tr in ("/sys/kernel/tracing", "/sys/kernel/debug/tracing"):
    ue = os.path.join(tr, "uprobe_events")
    if os.path.exists(ue):
        dctest.equal(open(ue).read(), "", ue + " entries left")
# no datacrumbs or test program may still be running
ps = subprocess.run(["ps", "-eo", "comm"], capture_output=True, text=True).stdout.split()
dctest.equal([c for c in ps if c in ("datacrumbs", "prog_io")], [], "processes left running")
dctest.finish()
