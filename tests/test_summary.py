"""test_summary.py: scripts/pfw_summary.py reads the upstream DFTracer trace (and a cut
one) and its figures equal the ones counted here independently from the events."""
import gzip
import hashlib
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import dctest  # noqa: E402
from dctest import check, equal  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SUMMARY = os.path.join(HERE, "..", "scripts", "pfw_summary.py")
UP = dctest.upstream_trace()  # None (a loud SKIP) where ../shared/ is absent


def summary(path, top=1000000):
    r = subprocess.run([sys.executable, SUMMARY, "--top", str(top), path], capture_output=True,
                       text=True)
    equal(r.returncode, 0, "pfw_summary exit status on %s (%s)" % (path, r.stderr))
    rows, table = {}, None
    for line in r.stdout.splitlines()[1:]:
        parts = line.split()
        if parts[0] in ("function", "file", "process"):
            table = parts[0]
            continue
        rows[(table, " ".join(parts[:-3]))] = tuple(int(x) for x in parts[-3:])
    return r.stdout.splitlines()[0], rows


def moved(a):  # bytes moved by a call with a count: ret when 0 < ret <= count
    return a["ret"] if "count" in a and isinstance(a.get("ret"), int) and 0 < a["ret"] <= a["count"] else 0


def upstream(up):
    """pfw_summary's figures of the upstream DFTracer trace."""
    events, files, _ = dctest.read_trace(up)
    calls = [e for e in events if e.get("ph") == "X" and e["cat"] not in ("dftracer", "datacrumbs")]
    head, rows = summary(up)
    equal(head.split(": ", 1)[1], "1 processes, %d calls, ? lost" % len(calls), "upstream: header")
    pread = [e for e in calls if e["cat"] == "POSIX" and e["name"] == "pread"]
    equal(rows.get(("function", "POSIX pread")),
          (len(pread), sum(moved(e["args"]) for e in pread),
           sum(e["dur"] for e in pread)), "upstream: POSIX pread row")
    f = "/p/lustre3/iopp/gitlab-runner-data/resnet50/data/train/img_0056_of_1024.tfrecord"
    io = {(e["pid"], e["tid"], e["id"]) for e in calls if e["args"].get("fhash")}
    mine = [e for e in calls if e["path"] == f and (e["pid"], e["tid"], e["args"].get("p_idx")) not in io]
    key = ("file", f if len(f) <= 40 else "..." + f[-37:])
    equal(rows.get(key), (len(mine), sum(moved(e["args"]) for e in mine),
                          sum(e["dur"] for e in mine)), "upstream: one file's row")
    check(len(mine) > 100, "upstream: the file has calls: %d" % len(mine))


if UP:
    upstream(UP)

# a trace cut by a kill (its second gzip member half written): pfw_summary counts the
# first member's events and skips the cut one, as check_pfw.py --partial does
HH = "2dbbcec2c820dc4c"
head_lines = ['{"name":"HH","cat":"dftracer","pid":7,"tid":7,"ph":"M","args":{"hhash":"%s",'
              '"name":"corona183","value":"%s"}}' % (HH, HH)]


def ev(i):
    return ('{"id":%d,"name":"write","cat":"POSIX","pid":7,"tid":7,"ts":%d,"dur":3,"ph":"X",'
            '"args":{"hhash":"%s","level":1,"p_idx":-1,"fd":3,"count":10,"ret":10}}'
            % (i, 1700000000000000 + i, HH))


member1 = "[\n" + "\n".join(head_lines + [ev(i) for i in range(1, 101)]) + "\n"
member2 = "\n".join(ev(i) for i in range(101, 201)) + "\n"
cut_path = os.path.join(dctest.workdir("summary"), "cut.pfw.gz")
z2 = gzip.compress(member2.encode())
with open(cut_path, "wb") as out:
    out.write(gzip.compress(member1.encode()))
    out.write(z2[:len(z2) // 2])
dctest.check_pfw(cut_path, partial=True)
head, rows = summary(cut_path)
equal(head.split(": ", 1)[1], "1 processes, 100 calls, INCOMPLETE (no closing ']': the run was cut)",
      "cut trace: header")
equal(rows.get(("function", "POSIX write")), (100, 1000, 300), "cut trace: the first member's writes")

# bytes by layer: MPI-IO's `bytes` (ret is an error code), fread's items x size, no
# pointer (fgets' ret); counter events of profile mode; processes named Rank N
FH = "".join("%02x" % b for b in hashlib.md5(b"/d/f").digest()[::2])  # the contract's hash
mixed = ["[", head_lines[0],
         '{"name":"FH","cat":"dftracer","pid":7,"tid":7,"ph":"M","args":{"hhash":"%s","name":"/d/f",'
         '"value":"%s"}}' % (HH, FH),
         '{"name":"process_name","cat":"dftracer","pid":7,"tid":7,"ph":"M","args":{"hhash":"%s",'
         '"name":"Rank 3","value":"process_name"}}' % HH]
for i, (name, cat, args) in enumerate([
        ("MPI_File_write_at", "MPIIO", '"offset":0,"elements":10,"count":80,"bytes":80,"ret":0'),
        ("fread", "STDIO", '"size":100,"nmemb":50,"fd":3,"count":5000,"ret":50'),
        ("fgets", "STDIO", '"count":64,"fd":3,"ret":140723380424512')], 1):
    mixed.append('{"id":%d,"name":"%s","cat":"%s","pid":7,"tid":7,"ts":%d,"dur":2,"ph":"X","args":'
                 '{"hhash":"%s","level":1,"p_idx":-1,"fhash":"%s",%s}}' % (i, name, cat, 1700000000000000 + i,
                                                                          HH, FH, args))
mixed.append('{"name":"pwrite","cat":"POSIX","ts":1700000000000000,"ph":"C","pid":7,"tid":7,"args":'
             '{"hhash":"%s","fhash":"%s","count":4,"dur_sum":9,"dur_min":1,"dur_max":4,'
             '"size_sum":400,"size_min":100,"size_max":100}}' % (HH, FH))
mixed_path = os.path.join(dctest.workdir("summary-mixed"), "mixed.pfw")
with open(mixed_path, "w") as out:
    out.write("\n".join(mixed) + "\n]")
dctest.check_pfw(mixed_path)
head, rows = summary(mixed_path)
equal(head.split(": ", 1)[1], "1 processes, 7 calls", "mixed: header (3 events, 4 counted calls)")
equal([rows.get(("function", k)) for k in ("MPIIO MPI_File_write_at", "STDIO fread", "STDIO fgets",
                                           "POSIX pwrite")],
      [(1, 80, 2), (1, 5000, 2), (1, 0, 2), (4, 400, 9)], "mixed: calls, bytes, time per function")
equal(rows.get(("file", "/d/f")), (7, 5480, 15), "mixed: the file's row")
equal(rows.get(("process", "7 Rank 3")), (7, 5480, 15), "mixed: the rank's row")

# a call on two files (copy_file_range: fhash and fhash2) counts on both files, once on its
# process and once in the function table
FH2 = "".join("%02x" % b for b in hashlib.md5(b"/d/g").digest()[::2])
two = ["[", head_lines[0]] + [
    '{"name":"FH","cat":"dftracer","pid":7,"tid":7,"ph":"M","args":{"hhash":"%s","name":"%s",'
    '"value":"%s"}}' % (HH, n, h) for n, h in (("/d/f", FH), ("/d/g", FH2))]
two.append('{"id":1,"name":"copy_file_range","cat":"POSIX","pid":7,"tid":7,"ts":1700000000000001,'
           '"dur":5,"ph":"X","args":{"hhash":"%s","level":1,"p_idx":-1,"fhash":"%s","fhash2":"%s",'
           '"fd_in":3,"fd_out":4,"count":4096,"ret":4096}}' % (HH, FH, FH2))
two_path = os.path.join(dctest.workdir("summary-two"), "two.pfw")
with open(two_path, "w") as out:
    out.write("\n".join(two) + "\n]")
dctest.check_pfw(two_path)
head, rows = summary(two_path)
equal(head.split(": ", 1)[1], "1 processes, 1 calls", "two files: header")
equal([rows.get(k) for k in (("function", "POSIX copy_file_range"), ("file", "/d/f"), ("file", "/d/g"),
                              ("process", "7"))],
      [(1, 4096, 5)] * 4, "two files: one call per function, per file, once on the process")

# an unknown option is named, exit 2
r = subprocess.run([sys.executable, SUMMARY, "--tpo", mixed_path], capture_output=True, text=True)
equal((r.returncode, r.stderr.strip()), (2, "pfw_summary.py: unknown option --tpo (see --help)"),
      "pfw_summary.py --tpo: named, exit 2")

# `pfw_summary.py ... | head -1`: the summary stops at the closed pipe, exit 0, nothing on stderr
big = os.path.join(dctest.workdir("summary-pipe"), "big.pfw")
with open(big, "w") as out:
    out.write("[\n" + "\n".join(head_lines + [ev(i) for i in range(1, 201)]) + "\n]")
r = subprocess.run("%s %s --top 100000 %s %s %s | head -1" % (sys.executable, SUMMARY, big, big, big),
                   shell=True, capture_output=True, text=True, executable="/bin/bash")
sh = subprocess.run(["bash", "-c", "set -o pipefail; %s %s --top 100000 %s | head -c 10 >/dev/null; "
                     "echo ${PIPESTATUS[0]}" % (sys.executable, SUMMARY, " ".join([big] * 400))],
                    capture_output=True, text=True)
equal((sh.stdout.strip(), sh.stderr[:300]), ("0", ""), "pfw_summary.py | head: exit status 0, no stderr")
equal(r.stdout.count("\n"), 1, "pfw_summary.py | head -1: one line")
dctest.finish()
