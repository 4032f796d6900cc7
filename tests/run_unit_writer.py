"""run_unit_writer.py: runs the writer's unit test, then validates each trace it wrote
with dctest.check_pfw (the partial ones with --partial) and gzip -t, and reads the
upstream trace (SKIP when it is absent)."""
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
    if f.endswith(".gz"):  # the writer thread's libdeflate members, as gzip(1) reads them
        r = subprocess.run(["gzip", "-t", p], capture_output=True, text=True)
        dctest.equal((r.returncode, r.stderr), (0, ""), "gzip -t %s" % f)
# our trace reader must read the upstream DFTracer trace too, and our validator accept it
up = dctest.upstream_trace()
if up:
    ev, files, meta = dctest.read_trace(up)
    dctest.check(len(ev) > 1000 and len(files) > 10, "upstream trace read: %d events" % len(ev))
    r = subprocess.run([sys.executable, dctest.PFW_VALIDATE, "--upstream", up],
                       capture_output=True, text=True)
    dctest.equal((r.returncode, r.stdout), (0, ""), "pfw_validate.py --upstream of the upstream trace")
dctest.finish()
