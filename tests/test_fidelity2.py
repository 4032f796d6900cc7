"""test_fidelity2.py: every byte on the right file, part 2 (issue 33), each case against
strace -f -yy run on the same program in the same test (the oracle: the kernel's name of
each fd at each call). A new file that gets a freed inode's number keeps its own name:
six rounds of a lock file made with O_CREAT|O_EXCL and renamed over its target
(tests/progs/prog_fid2.c lock), and git config and git commit on a small repository,
whose config.lock and index.lock do the same. preadv2 and pwritev2 are POSIX events, at an
offset and at the file position (-1), with their bytes, in trace and profile mode."""
import collections
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
import dctest  # noqa: E402
from dctest import check, equal  # noqa: E402
from datacrumbs import analysis  # noqa: E402

dctest.need_root()
PROG = os.environ["PROG_FID2"]
DATA = r"(write|pwrite64|read|pread64|writev|readv|pwritev2?|preadv2?)"
# strace's name -> the POSIX layer's event name (the glibc function the call is)
NAMES = {"pwrite64": "pwrite", "pread64": "pread"}
EVENTS = {"write", "pwrite", "read", "pread", "writev", "readv", "pwritev", "pwritev2",
          "preadv", "preadv2"}  # DATA's calls by their event names


def unnamed(path):
    """An O_TMPFILE file's name, DIR/#INO: the inode number differs from run to run."""
    return re.sub(r"/#\d+$", "/#INO", path)


def tmpname(path):
    """git's object files (objects/XX/tmp_obj_XXXXXX: a random name in a directory named
    after the commit's hash, which has its time in it) differ from run to run: one name."""
    return re.sub(r"/objects/[0-9a-f]{2}/tmp_obj_[A-Za-z0-9]{6}$", "/objects/*/tmp_obj_*",
                  path)


def strace_files(cmd, under):
    """{(path, function): [calls, bytes moved]} of cmd's successful data calls on files
    under `under`, as strace -f -yy names each fd when the call is made."""
    log = os.path.join(dctest.workdir("fid2-strace-" + os.path.basename(under)), "s.log")
    # (an unlinked file's name ends in "(deleted)": strace -yy shows what /proc/PID/fd does)
    r = subprocess.run(["strace", "-f", "-yy", "-s0", "-o", log] + cmd, capture_output=True,
                       text=True)
    equal(r.returncode, 0, "strace %s: exit status (%s)" % (cmd, r.stderr.strip()[-300:]))
    got = collections.defaultdict(lambda: [0, 0])
    with open(log) as f:
        for ln in f:
            m = re.search(r"\b%s\((\d+)<([^>]*)>(?:\(deleted\))?.*\)\s+=\s+(-?\d+)" % DATA,
                          ln)
            path = m.group(3) if m else ""
            if m and path.startswith(under + "/") and int(m.group(4)) >= 0:
                c = got[(unnamed(tmpname(path)), NAMES.get(m.group(1), m.group(1)))]
                c[0] += 1
                c[1] += int(m.group(4))
    return dict(got)


def traced_files(cmd, under, mode, name):
    """The same figures from a datacrumbs run of cmd under io_posix.lua in mode."""
    d = dctest.workdir("fid2-%s-%s" % (name, mode))
    out = os.path.join(d, "t.pfw.gz")
    opts = ["--mode", "profile", "--interval", "10s"] if mode == "profile" else []
    r = dctest.run_dc(["run", "-q", "-o", out] + opts + ["io_posix.lua", "--"] + cmd)
    equal(r.returncode, 0, "%s %s: exit status (stderr: %s)" % (name, mode, r.stderr.strip()))
    dctest.check_pfw(out)
    t = analysis.Trace(out)
    got = collections.defaultdict(lambda: [0, 0])
    for e in t.events:
        a = e.get("args") or {}
        f = t.file(a)
        if e.get("cat") != "POSIX" or e["name"] not in EVENTS or not f or \
                not f.startswith(under + "/"):
            continue
        c = got[(unnamed(tmpname(f)), e["name"])]
        if e["ph"] == "C":
            c[0] += a["count"]
            c[1] += analysis.counter_bytes(a)
        elif a.get("ret", -1) >= 0:
            c[0] += 1
            c[1] += a["ret"]
    return dict(got)


def fresh(d, seed=None):
    """Empties directory d (a copy of seed when given)."""
    shutil.rmtree(d, ignore_errors=True)
    if seed:
        shutil.copytree(seed, d, symlinks=True)
    else:
        os.makedirs(d)


def compare(name, cmd, under, modes=("trace",), seed=None, want=None):
    """strace's figures against each mode's (and against `want`, what the program did,
    when given), the directory made afresh before each run."""
    fresh(under, seed)
    oracle = strace_files(cmd, under)
    if want is not None:
        equal(oracle, want, "%s: strace sees what the program did" % name)
    for mode in modes:
        fresh(under, seed)
        equal(traced_files(cmd, under, mode, name), oracle,
              "%s %s: per file and function, calls and bytes as strace" % (name, mode))


base = dctest.workdir("fid2")
# 1. six lock rounds: a.lock written 10 + r and 3 bytes in round r, renamed over a; the
# file system gives a new lock the inode number the lock before last had (ext4 does; tmpfs
# never reuses one, and then this case tests less: said below)
lock = os.path.join(base, "lock")
fresh(lock)
inos = subprocess.run([PROG, "lock", lock], capture_output=True, text=True,
                      check=True).stdout.split()
reused = len(inos) - len(set(inos))
print("%s: %d of 6 rounds' locks got an inode number an earlier lock had%s" %
      (os.path.basename(sys.argv[0]), reused,
       "" if reused else " (NOTE: this file system reuses none: the case tests less)"))
compare("lock", [PROG, "lock", lock], lock, ("trace", "profile"),
        want={(lock + "/a.lock", "write"): [12, sum(10 + r for r in range(6)) + 18]})

# 1b. git: config set six times (config.lock renamed over config each time), then a commit
repo = os.path.join(base, "repo-seed")
fresh(repo)
for args in (["init", "-q", "."], ["config", "user.email", "t@example.org"],
             ["config", "user.name", "t"]):
    subprocess.run(["git"] + args, cwd=repo, check=True)
with open(os.path.join(repo, "x"), "w") as f:
    f.write("x\n")
subprocess.run(["git", "add", "x"], cwd=repo, check=True)
work = os.path.join(base, "repo")
# (a fixed commit time: the commit object, and so its compressed size, is the same each run)
script = ("cd %s && export GIT_AUTHOR_DATE=@1700000000 GIT_COMMITTER_DATE=@1700000000 && "
          "for i in 1 2 3 4 5 6; do git config sect.k$i v$i; done && "
          "echo y >> x && git add x && git commit -q -m one" % work)
compare("git", ["sh", "-c", script], work, ("trace",), seed=repo)

# 4. preadv2/pwritev2: 2000 at offset 0, 1500 at the position; 2000 at 0, 2500 at it
v2 = os.path.join(base, "v2")
compare("v2", [PROG, "v2", v2], v2, ("trace", "profile"),
        want={(v2 + "/v", "pwritev2"): [2, 3500], (v2 + "/v", "preadv2"): [2, 4500]})
# 3. O_TMPFILE: an unnamed file is DIR/#INO, as the kernel names it, before and after
# linkat names it (the fd keeps its name: /proc/PID/fd and strace say so); the linkat
# itself is on that file and the new name (fhash2), kept by io_posix.lua's /proc filter
tmp = os.path.join(base, "tmpfile")
compare("tmpfile", [PROG, "tmpfile", tmp], tmp, ("trace", "profile"),
        want={(tmp + "/#INO", "write"): [3, 4246]})
t = analysis.Trace(os.path.join(dctest.TEST_OUT, "fid2-tmpfile-trace", "t.pfw.gz"))
links = [(unnamed(t.file(e["args"])), t.files.get(e["args"].get("fhash2")))
         for e in t.events if e.get("name") == "linkat"]
equal(links, [(tmp + "/#INO", tmp + "/named")], "tmpfile: linkat names the file and its name")
dctest.finish()
