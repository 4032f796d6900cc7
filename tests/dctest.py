"""dctest.py: shared helpers of the end-to-end tests: run datacrumbs, read a trace
(.pfw or .pfw.gz, also upstream DFTracer traces), validate it with scripts/pfw_validate.py
and, where it exists beside the checkout, the contract's ../shared/tools/check_pfw.py."""
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile

DATACRUMBS = os.environ.get("DATACRUMBS", "build/datacrumbs")
HERE = os.path.dirname(os.path.abspath(__file__))
# the project's own validator (always run) and the format contract's (run where it exists)
PFW_VALIDATE = os.path.join(HERE, "..", "scripts", "pfw_validate.py")
CHECK_PFW = os.environ.get("CHECK_PFW") or os.path.join(HERE, "..", "..", "shared", "tools",
                                                        "check_pfw.py")
# the upstream DFTracer trace the contract ships beside the checkout (absent in a clean clone)
UPSTREAM_TRACE = os.environ.get("UPSTREAM_TRACE") or os.path.join(
    HERE, "..", "..", "shared", "traces", "dftracer-upstream", "dlio-resnet50-posix.pfw.gz")
_said_no_check_pfw = False
TEST_OUT = os.environ.get("TEST_OUT", tempfile.gettempdir())

passed = 0
failed = 0

# ts and dur are written in whole microseconds, each rounded down from nanoseconds: a call
# that ends inside its parent can appear to end up to 2 us after it (floor(a) + floor(d)
# vs floor(pa) + floor(pd), each floor losing < 1 us)
US_ROUNDING = 2


def need_root():
    """Exit 77 (ctest SKIP) with a loud message when BPF cannot be used."""
    if os.geteuid() != 0:
        print("SKIP: %s needs root (BPF, uprobes): NOT TESTED" % sys.argv[0], flush=True)
        sys.exit(77)


def check(cond, what):
    """Counts one assertion; prints it when it fails."""
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL: %s" % what, flush=True)


def equal(got, want, what):
    check(got == want, "%s: got %r, want %r" % (what, got, want))


def finish():
    print("%s: %d passed, %d failed" % (os.path.basename(sys.argv[0]), passed, failed))
    sys.exit(1 if failed else 0)


def workdir(name):
    d = os.path.join(TEST_OUT, name)
    subprocess.run(["rm", "-rf", d], check=True)
    os.makedirs(d)
    return os.path.realpath(d)


def run_dc(args, timeout=300, **kw):
    """Runs datacrumbs with args; returns the CompletedProcess (text output)."""
    return subprocess.run([DATACRUMBS] + args, capture_output=True, text=True,
                          timeout=timeout, **kw)


def mechanisms():
    """`datacrumbs features --json`'s mechanisms: what this kernel lets datacrumbs use (the
    tests run on older kernels too: tests/test_kernels.py)."""
    r = subprocess.run([DATACRUMBS, "features", "--json"], capture_output=True, text=True,
                       check=True, stdin=subprocess.DEVNULL)
    m = json.loads(r.stdout)["mechanisms"]
    # as `datacrumbs run` uses them: these variables turn them off for tests
    for var, name in (("DATACRUMBS_NO_UPROBE_SESSION", "uprobe_session"),
                      ("DATACRUMBS_NO_UPROBE_MULTI", "uprobe_multi")):
        if os.environ.get(var):
            m[name]["ok"] = False
    return m


def check_pfw(path, partial=False):
    """Validates a trace with scripts/pfw_validate.py (one assertion), and with the contract's
    check_pfw.py too where it exists (another); says SKIP once, loudly, where it does not.
    Returns whether every validator run passed."""
    global _said_no_check_pfw
    opt = ["--partial"] if partial else []
    r = subprocess.run([sys.executable, PFW_VALIDATE] + opt + [path], capture_output=True,
                       text=True)
    check(r.returncode == 0, "pfw_validate.py %s:\n%s" % (path, r.stdout + r.stderr))
    ok = r.returncode == 0
    if not os.path.exists(CHECK_PFW):
        if not _said_no_check_pfw:
            print("SKIP: ../shared/tools/check_pfw.py absent: contract validator NOT RUN",
                  flush=True)
            _said_no_check_pfw = True
        return ok
    r = subprocess.run([sys.executable, CHECK_PFW] + opt + [path], capture_output=True, text=True)
    check(r.returncode == 0, "check_pfw.py %s:\n%s" % (path, r.stdout + r.stderr))
    return ok and r.returncode == 0


def upstream_trace():
    """The upstream DFTracer trace's path, or None (and a loud SKIP) when it is absent."""
    if os.path.exists(UPSTREAM_TRACE):
        return UPSTREAM_TRACE
    print("SKIP: %s absent: the upstream trace's part of %s NOT TESTED"
          % (os.path.normpath(UPSTREAM_TRACE), os.path.basename(sys.argv[0])), flush=True)
    return None


def read_trace(path):
    """Returns (events, files, meta): complete/counter events in file order, the FH
    map hash -> path, and metadata records. Reads gzip (all members) or plain."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        text = f.read().decode("utf-8")
    events, files, meta = [], {}, []
    for line in text.split("\n"):
        line = line.strip()
        if not line or line in ("[", "]"):
            continue
        ev = json.loads(line)
        if ev.get("ph") == "M":
            meta.append(ev)
            if ev["name"] == "FH":
                files[ev["args"]["value"]] = ev["args"]["name"]
        else:
            events.append(ev)
    for ev in events:
        fh = ev.get("args", {}).get("fhash")
        ev["path"] = files.get(fh) if fh else None
    return events, files, meta


def find_trace(d):
    """The one trace file in directory d."""
    t = [f for f in os.listdir(d) if f.endswith(".pfw.gz") or f.endswith(".pfw")]
    if len(t) != 1:
        raise AssertionError("expected one trace in %s, found %r" % (d, t))
    return os.path.join(d, t[0])


def calls(events, cat="POSIX"):
    return [e for e in events if e.get("ph") == "X" and e["cat"] == cat]


def holders(key):
    """fdinfo key ("prog_id", "link_id") -> {id: set of pids holding an fd of it}."""
    held = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            fds = os.listdir("/proc/%s/fdinfo" % d)
        except OSError:
            continue
        for fd in fds:
            try:
                with open("/proc/%s/fdinfo/%s" % (d, fd)) as f:
                    m = re.search(r"^%s:\s*(\d+)" % key, f.read(), re.M)
            except OSError:
                continue
            if m:
                held.setdefault(int(m.group(1)), set()).add(int(d))
    return held


def held_ids(key):
    """Ids of BPF objects some live process holds an fd of: key "link_id" or "prog_id"
    (the fdinfo field)."""
    return set(holders(key))


def orphan_links():
    """BPF links that no live process holds: what a finished tracer left attached. Links
    of live processes (another tracer running on the machine) are not counted."""
    held = held_ids("link_id")
    r = subprocess.run(["bpftool", "-j", "link", "list"], capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError("bpftool link list failed: " + r.stderr)
    links = {l["id"] for l in json.loads(r.stdout or "[]")}
    return sorted(links - held - held_ids("link_id"))
