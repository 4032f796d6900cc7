"""run_unit_writer.py: runs the writer's unit test, then validates each trace it wrote
with check_pfw.py (the partial one with --partial) and reads the upstream trace."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import dctest  # noqa: E402

exe, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
r = subprocess.run([exe, out], capture_output=True, text=True)
print(r.stdout + r.stderr, end="")
dctest.equal(r.returncode, 0, "unit_writer exit status")
for f in sorted(os.listdir(out)):
    p = os.path.join(out, f)
    dctest.check_pfw(p, partial="partial" in f)
# our trace reader must read the upstream DFTracer trace too
up = os.path.join(os.path.dirname(dctest.CHECK_PFW), "..", "traces", "dftracer-upstream",
                  "dlio-resnet50-posix.pfw.gz")
ev, files, meta = dctest.read_trace(up)
dctest.check(len(ev) > 1000 and len(files) > 10, "upstream trace read: %d events" % len(ev))
dctest.finish()
