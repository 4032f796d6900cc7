"""test_features.py: `datacrumbs features` tells the facts of THIS machine
(../shared/reference/platform.md: kernel 6.18 VM, CONFIG_KPROBES off, ftrace locked down):
  1. as root, --json is valid JSON; uprobe, attach_cookie, uprobe_multi, raw_tracepoint,
     tp_btf, ringbuf, btf work; fentry does not, with the errno; kprobe does not, naming the
     missing kprobe PMU / CONFIG_KPROBES; tracepoint works exactly when tracefs is mounted
     (else its reason says tracefs), checked both ways in private mount namespaces;
     capabilities are those of /proc/self/status;
  2. the text output has one aligned line per mechanism, then capabilities and layers;
  3. after the runs no BPF link, program or map is left that no live process holds;
  4. as nobody (setpriv) it still exits 0, checks BTF/tracefs/capabilities and says loudly
     that the rest needs root; the JSON stays valid;
  5. --help, an unknown option (one line, exit 2), and the main help naming the command."""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import dctest  # noqa: E402
from dctest import check, equal  # noqa: E402

dctest.need_root()
DC = dctest.DATACRUMBS
NAMES = ["uprobe", "attach_cookie", "uprobe_multi", "uprobe_session", "tracepoint", "raw_tracepoint", "tp_btf",
         "fentry", "kprobe", "kprobe_multi", "ringbuf", "btf", "tracefs"]
CAPS = {"CAP_BPF": 39, "CAP_PERFMON": 38, "CAP_SYS_ADMIN": 21, "CAP_SYS_RESOURCE": 24}
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
TRACEFS_MAGIC = 0x74726163


def run(args, prefix=()):
    return subprocess.run(list(prefix) + [DC] + args, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=120)


def tracefs_mounted():
    """Is tracefs mounted where libbpf looks (the same test the tool makes, via mountinfo)?"""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            sep = fields.index("-")
            if fields[sep + 1] == "tracefs" and fields[4] in (
                    "/sys/kernel/tracing", "/sys/kernel/debug/tracing"):
                return True
    return False


def cap_eff():
    with open("/proc/self/status") as f:
        return int(re.search(r"^CapEff:\s*([0-9a-f]+)", f.read(), re.M).group(1), 16)


def leftovers():
    """dc_feat* programs and maps and BPF links that no live process holds."""
    out = {"links": dctest.orphan_links()}
    for kind, key in (("prog", "prog_id"), ("map", "map_id")):
        r = subprocess.run(["bpftool", "-j", kind, "list"], capture_output=True, text=True)
        equal(r.returncode, 0, "bpftool %s list exit status" % kind)
        ours = {p["id"] for p in json.loads(r.stdout or "[]")
                if p.get("name", "").startswith("dc_feat")}
        out[kind + "s"] = sorted(ours - dctest.held_ids(key))
    return out


# --- 1. as root, JSON ---------------------------------------------------------------
r = run(["features", "--json"])
equal(r.returncode, 0, "features --json exit status (stderr %r)" % r.stderr)
try:
    j = json.loads(r.stdout)
except ValueError as e:
    j = None
    check(False, "features --json is not JSON (%s):\n%s" % (e, r.stdout))
if j:
    equal(j.get("kernel"), os.uname().release, "kernel release")
    check(str(j.get("libbpf", "")).startswith("v1."), "libbpf version: %r" % j.get("libbpf"))
    equal(j.get("privileged"), True, "privileged as root")
    m = j.get("mechanisms", {})
    equal(list(m), NAMES, "mechanisms reported, in order")
    for name in ("uprobe", "attach_cookie", "uprobe_multi", "uprobe_session",
                 "raw_tracepoint", "tp_btf", "ringbuf", "btf"):
        equal(m.get(name, {}).get("ok"), True, "%s works here (%r)" % (name, m.get(name)))
        check("reason" not in m.get(name, {}), "%s: no reason when it works" % name)
    fe = m.get("fentry", {})
    equal(fe.get("ok"), False, "fentry does not work here")
    check(re.search(r"EPERM|ENOTSUPP|Operation not permitted|Operation not supported",
                    fe.get("reason", "")), "fentry reason names the errno: %r" % fe)
    check("ftrace" in fe.get("reason", ""), "fentry reason says what it means: %r" % fe)
    kp = m.get("kprobe", {})
    equal(kp.get("ok"), False, "kprobe does not work here")
    check("kprobe PMU" in kp.get("reason", "") and "CONFIG_KPROBES" in kp.get("reason", ""),
          "kprobe reason names the missing kprobe PMU and CONFIG_KPROBES: %r" % kp)
    km = m.get("kprobe_multi", {})
    equal(km.get("ok"), False, "kprobe_multi does not work here (no fprobe without ftrace)")
    check(km.get("reason"), "kprobe_multi has a reason: %r" % km)
    mounted = tracefs_mounted()
    equal(m.get("tracefs", {}).get("ok"), mounted, "tracefs mounted (per mountinfo)")
    tp = m.get("tracepoint", {})
    equal(tp.get("ok"), mounted, "tracepoint works exactly when tracefs is mounted")
    if not mounted:
        check("tracefs" in tp.get("reason", ""), "tracepoint reason says tracefs: %r" % tp)
    eff = cap_eff()
    equal(j.get("capabilities"), {c: bool(eff >> b & 1) for c, b in CAPS.items()},
          "capabilities (CapEff of /proc/self/status)")
    lay = j.get("layers", {})
    equal({k: v.get("ok") for k, v in lay.items()},
          {"posix_stdio_mpiio": True, "syscalls": True, "vfs": False,
           "page_cache_block": True}, "what it means for the layers")

    equal(j.get("return_probes", {}).get("mechanism"), "session",
          "return probes are session uprobes here (kernel 6.18)")

# --- 1a. without session uprobes (forced): the fallback and its cost are said -------------
r = subprocess.run([DC, "features", "--json"], capture_output=True, text=True,
                   stdin=subprocess.DEVNULL, timeout=120,
                   env=dict(os.environ, DATACRUMBS_NO_UPROBE_SESSION="1"))
try:
    rp = json.loads(r.stdout)["return_probes"]
except (ValueError, KeyError) as e:
    rp = {}
    check(False, "DATACRUMBS_NO_UPROBE_SESSION: bad JSON (%s): %r" % (e, r.stdout))
equal(rp.get("mechanism"), "instructions",
      "forced fallback: returns at return instructions, never a uretprobe")
check("no return address is rewritten" in rp.get("means", "") and
      'returns = "hijack"' in rp.get("means", ""), "the fallback and its cost are said: %r" % rp)

# --- 1b. tracefs unmounted / mounted, in a private mount namespace (the machine's own
# mounts are left alone) -------------------------------------------------------------------
NS = ["unshare", "--mount", "--propagation", "private", "sh", "-c"]
for want, setup in ((False, "umount /sys/kernel/debug/tracing; umount /sys/kernel/tracing; "
                            "umount /sys/kernel/debug"),
                    (True, "grep -q ' - tracefs ' /proc/self/mountinfo || "
                           "mount -t tracefs nodev /sys/kernel/tracing")):
    r = subprocess.run(NS + [setup + ' 2>/dev/null; grep -c " - tracefs " /proc/self/mountinfo;'
                             ' exec "$0" features --json', DC],
                       capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
    what = "tracefs %s" % ("mounted" if want else "unmounted")
    equal(r.returncode, 0, "%s: exit status (stderr %r)" % (what, r.stderr))
    count, _, out = r.stdout.partition("\n")
    if (count.strip() != "0") != want:
        print("NOTE: could not get %s in a mount namespace: not tested" % what)
        continue
    try:
        m = json.loads(out)["mechanisms"]
    except (ValueError, KeyError) as e:
        check(False, "%s: bad JSON (%s): %r" % (what, e, out))
        continue
    equal(m["tracefs"]["ok"], want, what + ": tracefs")
    equal(m["tracepoint"]["ok"], want, what + ": tracepoint")
    equal(m["raw_tracepoint"]["ok"], True, what + ": raw_tracepoint needs no tracefs")
    equal(m["tp_btf"]["ok"], True, what + ": tp_btf needs no tracefs")
    if not want:
        check("tracefs is not mounted" in m["tracepoint"].get("reason", ""),
              "tracefs unmounted: the tracepoint reason says so: %r" % m["tracepoint"])
        check("mount -t tracefs" in m["tracefs"].get("reason", ""),
              "tracefs unmounted: the reason says how to mount it: %r" % m["tracefs"])

# --- 2. text ------------------------------------------------------------------------
r = run(["features"])
equal(r.returncode, 0, "features exit status (stderr %r)" % r.stderr)
lines = r.stdout.splitlines()
for name in NAMES:
    want = "yes" if j and j["mechanisms"].get(name, {}).get("ok") else "no"
    got = [l for l in lines if l.split()[:1] == [name]]
    equal(len(got), 1, "one text line for %s" % name)
    if got:
        check(re.match(r"^%-18s%s(\s|$)" % (re.escape(name), want), got[0]),
              "aligned '%s' line says %s: %r" % (name, want, got[0]))
fentry = [l for l in lines if l.startswith("fentry ")]
check(fentry and "refused" in fentry[0], "the fentry line gives the reason: %r" % fentry)
check(any(l.startswith("kernel ") and os.uname().release in l for l in lines), "kernel line")
check(any(l.startswith("libbpf ") for l in lines), "libbpf line")
check(any(l.startswith("capabilities ") and "CAP_BPF yes" in l for l in lines),
      "capabilities line")
layers = [l for l in lines if l.startswith("layers ")]
check(layers and "VFS NO" in layers[0] and "POSIX, STDIO, MPI-IO yes" in layers[0],
      "layers line: %r" % layers)
check("NOT ROOT" not in r.stdout + r.stderr, "no not-root warning as root")

# --- 3. nothing left ------------------------------------------------------------------
equal(leftovers(), {"links": [], "progs": [], "maps": []},
      "BPF links, dc_feat programs and maps left with no owner after the runs")

# --- 4. as nobody ---------------------------------------------------------------------
r = run(["features"], prefix=NOBODY)
equal(r.returncode, 0, "features as nobody: exit status (stderr %r)" % r.stderr)
check("NOT ROOT" in r.stdout and "needs root" in r.stdout,
      "as nobody it says loudly that root is needed:\n" + r.stdout)
check(re.search(r"^btf\s+yes$", r.stdout, re.M), "as nobody BTF is still checked")
check(re.search(r"^capabilities\s+CAP_BPF no", r.stdout, re.M),
      "as nobody the capabilities are reported (none)")
check(re.search(r"^uprobe\s+\?\s+not checked: needs root", r.stdout, re.M),
      "as nobody uprobe is 'not checked'")
r = run(["features", "--json"], prefix=NOBODY)
equal(r.returncode, 0, "features --json as nobody: exit status")
check("NOT ROOT" in r.stderr, "as nobody --json warns on stderr: %r" % r.stderr)
try:
    n = json.loads(r.stdout)
    equal(n.get("privileged"), False, "nobody: privileged false")
    equal(n["mechanisms"]["uprobe"]["ok"], None, "nobody: uprobe not checked (null)")
    equal(n["mechanisms"]["btf"]["ok"], True, "nobody: btf checked")
    equal(n["mechanisms"]["kprobe"]["ok"], False, "nobody: no kprobe PMU is a fact for anyone")
    check(not any(n["capabilities"].values()), "nobody: no capabilities")
except (ValueError, KeyError) as e:
    check(False, "features --json as nobody: bad JSON (%s):\n%s" % (e, r.stdout))

# --- 5. help and usage errors -----------------------------------------------------------
r = run(["features", "--help"])
equal(r.returncode, 0, "features --help exit status")
check(r.stdout.startswith("usage: datacrumbs features"), "features --help text")
r = run(["features", "--bogus"])
equal(r.returncode, 2, "unknown option: exit status")
equal(r.stdout, "", "unknown option: nothing on stdout")
equal(len(r.stderr.splitlines()), 1, "unknown option: one stderr line (%r)" % r.stderr)
check("--bogus" in r.stderr, "unknown option named: %r" % r.stderr)
r = run(["--help"])
check(re.search(r"^  features \[--json\]", r.stdout, re.M), "main help names the command")

equal(leftovers(), {"links": [], "progs": [], "maps": []}, "nothing left at the end")
dctest.finish()
