"""test_harm.py: datacrumbs does no harm to processes it does not trace (issue 11).
While datacrumbs traces a held program (it waits on its stdin, a pipe this test closes
when the untraced ones are done), programs started by this test, outside the traced
tree, must behave exactly as untraced:
  1. under io_posix.lua, io_stdio.lua and io_all.lua, and under a dc.uprobe script on the
     C++ function exceptions cross (dc_thrower of prog_throw): prog_throw 1000 prints
     "caught 1000" and exits 0, prog_setjmp 1000 "jumped 2000", the Go program prog_go
     (file I/O; when golang-go is installed, else SKIP said loudly) "wrote 50 read 5000",
     and a bash loop of 10,000 `[ ]` tests sees every `$?` right; the traced program's
     own events are there; also under a dc.uprobe on the Go program's main.writeFile
     (its return seen at its return instructions), the traced Go program's one call;
  2. while io_posix.lua runs, no uretprobe exists: datacrumbs holds no perf_event link,
     and every uprobe_multi link it holds runs dc_session (a program the kernel links
     only with the session attach type), or, on a kernel without session uprobes, no
     link runs dc_return (the uretprobe program); and no uprobe sits on libc's system-call
     wrappers (read, write, open, ...): the syscall tracepoints serve them;
  3. functions="*" on libc.so.6: attaches with the warning naming what was skipped, and
     `ls -l /usr/bin` under it prints exactly what it prints untraced; functions whose
     first instruction is AVX-512 (EVEX) are refused even when named;
  4. dmesg has no new "failed to handle uretprobe", "leaking uprobe" or "SIGILL" line."""
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
THROW = os.environ["PROG_THROW"]
SETJMP = os.environ["PROG_SETJMP"]
WAIT = os.environ["PROG_WAIT"]
GO = os.environ.get("PROG_GO", "")
if not GO:
    print("SKIP: golang-go is not installed (scripts/setup.sh installs it): the Go "
          "programs of test_harm NOT TESTED", flush=True)
# what this kernel has (tests/test_kernels.py runs this test on older ones too)
MECH = dctest.mechanisms()
BAD = re.compile(r"failed to handle uretprobe|leaking uprobe|SIGILL")
BASH_LOOP = ('t=0; f=0; for i in $(seq 10000); do '
             'if [ $((i % 2)) = 0 ]; then [ a = a ]; s=$?; [ "$s" = 0 ] && t=$((t+1)); '
             'else [ a = b ]; s=$?; [ "$s" = 1 ] && f=$((f+1)); fi; done; echo "$t $f"')


def bad_dmesg():
    r = subprocess.run(["dmesg"], capture_output=True, text=True)
    equal(r.returncode, 0, "dmesg readable")
    return [l for l in r.stdout.splitlines() if BAD.search(l)]


def untraced(label):
    """The programs beside the traced one, children of this test, not of datacrumbs."""
    r = subprocess.run([THROW, "1000"], capture_output=True, text=True, timeout=120)
    equal((r.returncode, r.stdout, r.stderr), (0, "caught 1000\n", ""),
          "%s: untraced C++ program, 1000 exceptions through dc_thrower" % label)
    r = subprocess.run([SETJMP, "1000"], capture_output=True, text=True, timeout=120)
    equal((r.returncode, r.stdout, r.stderr), (0, "jumped 2000\n", ""),
          "%s: untraced setjmp/longjmp program" % label)
    if GO:
        gd = dctest.workdir("harm_go_" + re.sub(r"\W", "_", label))
        r = subprocess.run([GO, gd, "50"], capture_output=True, text=True, timeout=120)
        equal((r.returncode, r.stdout, r.stderr), (0, "wrote 50 read 5000\n", ""),
              "%s: untraced Go program, 50 files written and read" % label)
    r = subprocess.run(["bash", "-c", BASH_LOOP], capture_output=True, text=True, timeout=300)
    equal((r.returncode, r.stdout, r.stderr), (0, "5000 5000\n", ""),
          "%s: untraced bash, 10000 [ ] tests and their $?" % label)


def feature_check(prog_id):
    """Is this the program of `features`' session-uprobe check, whose links on the tracer's
    own getpid (that process only: core/features.c quick_check) a thread closes after
    start-up? On a new machine they can outlive the command's start (issue 33)."""
    return (prog_name(prog_id) or "").startswith("dc_feat_")


def links_of(pid):
    """(link_type, prog_id) of every BPF link process pid holds (/proc/PID/fdinfo), but
    the features check's (feature_check)."""
    out = []
    for fd in os.listdir("/proc/%d/fdinfo" % pid):
        try:
            with open("/proc/%d/fdinfo/%s" % (pid, fd)) as f:
                t = f.read()
        except OSError:
            continue
        lt = re.search(r"^link_type:\s*(\S+)", t, re.M)
        if lt:
            prog = int(re.search(r"^prog_id:\s*(\d+)", t, re.M).group(1))
            if not feature_check(prog):
                out.append((lt.group(1), prog))
    return out


def prog_name(pid):
    r = subprocess.run(["bpftool", "-j", "prog", "show", "id", str(pid)], capture_output=True,
                       text=True)
    return json.loads(r.stdout).get("name") if r.returncode == 0 else None


def traced(label, script, cmd, env=None, inspect=None):
    """datacrumbs run SCRIPT -- CMD (which prints "ready PID" and waits for EOF on stdin);
    the untraced programs run meanwhile; returns (calls of the trace, datacrumbs' stderr)."""
    d = dctest.workdir("harm_" + label)
    p = subprocess.Popen([DC, "run", script, "-o", d, "--"] + cmd, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=env)
    line = p.stdout.readline()
    check(line.startswith("ready "), "%s: the traced program started: %r" % (label, line))
    if inspect:
        inspect(p.pid)
    untraced(label)
    out, err = p.communicate("", timeout=300)  # EOF on its stdin: it goes on, and ends
    equal(p.returncode, 0, "%s: datacrumbs exit status (stderr %r)" % (label, err))
    trace = dctest.find_trace(d)
    dctest.check_pfw(trace)
    events, _, _ = dctest.read_trace(trace)
    return [e for e in events if e.get("ph") == "X"], err


def no_uretprobe(pid):
    links = links_of(pid)
    kinds = sorted({k for k, _ in links})
    if MECH["uprobe_session"]["ok"]:
        check("perf_event" not in kinds, "io_posix: no perf_event (uprobe/uretprobe) link: %r"
              % kinds)
        multi = sorted({prog_name(i) for k, i in links if k == "uprobe_multi"})
        equal(multi, ["dc_session"], "io_posix: every uprobe_multi link runs dc_session")
    else:
        # no session uprobes: plain uprobes, returns seen at return instructions; the
        # uretprobe program is linked nowhere, and no perf event of the tracer's is a
        # uretprobe (bpftool perf: BPF_TASK_FD_QUERY, the kernels without uprobe_multi)
        progs = sorted({prog_name(i) for k, i in links})
        r = subprocess.run(["bpftool", "-j", "perf", "show"], capture_output=True, text=True)
        perf = sorted({e.get("fd_type") for e in json.loads(r.stdout or "[]")
                       if e.get("pid") == pid})
        check((progs or perf) and "dc_return" not in progs and "uretprobe" not in perf,
              "io_posix: uprobes, no uretprobe (links run %r; perf events %r)" % (progs, perf))
    # the POSIX layer's system-call wrappers are served by the syscall tracepoints: no
    # uprobe on any of them; in libc only what is no system call (opendir, fdopendir,
    # readdir = readdir64, closedir), in ld.so none (its mmap and munmap are system calls
    # too)
    probed = uprobe_offsets(pid) if MECH["uprobe_multi"]["ok"] else None
    if probed is None:
        print("NOTE: this kernel does not list the uprobes' file offsets in fdinfo (no "
              "uprobe_multi, or no path in its fdinfo): not checked", flush=True)
        return
    libc = [p for p in probed if os.path.basename(p).startswith("libc.so")]
    equal(len(libc), 1, "io_posix: one uprobe_multi link on libc: %r" % sorted(probed))
    if libc:
        want = {sym_offset(libc[0], f) for f in ("opendir", "fdopendir", "readdir", "closedir")}
        if MECH["uprobe_session"]["ok"]:
            equal(sorted(probed[libc[0]]), sorted(want), "io_posix: the uprobes on libc")
        else:  # and their return instructions
            equal(sorted(want - set(probed[libc[0]])), [], "io_posix: the uprobes on libc")
        wrappers = {sym_offset(libc[0], f) for f in ("read", "write", "open", "openat", "close",
                                                     "pread64", "pwrite64", "lseek", "fstat",
                                                     "stat", "fstatat", "fsync", "__open_nocancel",
                                                     "__read_nocancel", "__close_nocancel")}
        equal(sorted(wrappers & set(probed[libc[0]])), [],
              "io_posix: no uprobe on libc's system-call wrappers")
    ld = [p for p in probed if os.path.basename(p).startswith("ld-linux")]
    equal(ld, [], "io_posix: no uprobe in ld.so (its calls are system calls)")


def uprobe_offsets(pid):
    """{path: [file offsets]} of the uprobe_multi links process pid holds (their fdinfo
    lists path, then a 'cookie offset ref_ctr_offset' row per uprobe), or None where the
    kernel's fdinfo lists no path."""
    out = {}
    for fd in os.listdir("/proc/%d/fdinfo" % pid):
        try:
            with open("/proc/%d/fdinfo/%s" % (pid, fd)) as f:
                t = f.read()
        except OSError:
            continue
        prog = re.search(r"^prog_id:\s*(\d+)", t, re.M)
        if not re.search(r"^link_type:\s*uprobe_multi$", t, re.M) or \
                (prog and feature_check(int(prog.group(1)))):
            continue
        path = re.search(r"^path:\s*(\S+)", t, re.M)
        if not path:
            return None  # the kernel does not list them (Debian's 6.12 does not)
        out.setdefault(path.group(1), []).extend(int(m, 16) for m in
                                        re.findall(r"^\d+\s+(0x[0-9a-f]+)\s+0x", t, re.M))
    return out


def sym_offset(lib, name):
    """The file offset of function name in lib, as datacrumbs list --functions prints it."""
    r = subprocess.run([DC, "list", "--functions", "%s:%s" % (lib, name)], capture_output=True,
                       text=True)
    m = re.search(r"^%s\s+(0x[0-9a-f]+)$" % re.escape(name), r.stdout, re.M)
    check(m, "list --functions %s:%s: %r" % (lib, name, r.stdout + r.stderr))
    return int(m.group(1), 16) if m else None


before = bad_dmesg()
d = dctest.workdir("harm")
out_file = os.path.join(d, "wait.out")

# --- 1, 2. the shipped scripts ----------------------------------------------------------
for script in ("io_posix.lua", "io_all.lua"):
    calls, _ = traced(script, script, [WAIT, "after", out_file, "100"],
                      inspect=no_uretprobe if script == "io_posix.lua" else None)
    w = [e for e in calls if e["cat"] == "POSIX" and e["name"] == "write" and
         e["args"].get("count") == 100]
    equal([e["args"].get("ret") for e in w], [100],
          "%s: the traced program's write of 100 bytes" % script)
calls, _ = traced("io_stdio.lua", "io_stdio.lua", [THROW, "wait"])
equal(len([e for e in calls if e["cat"] == "STDIO" and e["name"] == "fflush"]), 1,
      "io_stdio.lua: the traced program's one fflush")

# --- 1. dc.uprobe on the C++ function exceptions cross ------------------------------------
lua = os.path.join(d, "thrower.lua")
with open(lua, "w") as f:
    f.write('local dc = require "datacrumbs"\n'
            'dc.uprobe { functions = "dc_thrower", args = { "int i", "int do_throw" },'
            ' ret = "int", layer = "APP" }\n')
calls, _ = traced("thrower", lua, [THROW, "wait"])
equal([(e["name"], e["args"].get("i"), e["args"].get("ret")) for e in calls
       if e["cat"] == "APP"], [("dc_thrower", 1, 2)], "dc.uprobe: the traced call of dc_thrower")

# --- 1. dc.uprobe on a Go function (its callers' stacks are walked and copied) ----------------
if GO:
    lua = os.path.join(d, "go.lua")
    with open(lua, "w") as f:
        f.write('local dc = require "datacrumbs"\n'
                'dc.uprobe { functions = "main.writeFile", layer = "GO", '
                'returns = "instructions" }\n')  # (auto: entry-only for Go)
    calls, err = traced("go", lua, [GO, "wait", dctest.workdir("harm_go_traced")])
    equal([(e["name"], e["args"].get("ret")) for e in calls if e["cat"] == "GO"],
          [("main.writeFile", 0)], "dc.uprobe: the traced Go program's call of main.writeFile")

# --- 3. functions="*" on libc -------------------------------------------------------------
lua = os.path.join(d, "star.lua")
with open(lua, "w") as f:
    f.write('local dc = require "datacrumbs"\n'
            'dc.uprobe { file = "libc.so.6", functions = "*", layer = "LIBC" }\n')
want = subprocess.run(["ls", "-l", "/usr/bin"], capture_output=True, text=True)
r = dctest.run_dc(["run", lua, "-o", os.path.join(d, "star.pfw.gz"), "--", "ls", "-l",
                   "/usr/bin"], timeout=600)
equal(r.returncode, 0, "functions=* on libc: exit status (stderr %r)" % r.stderr[-2000:])
check(r.stdout == want.stdout and want.stdout, "functions=* on libc: ls -l /usr/bin prints "
      "what it prints untraced (%d vs %d bytes)" % (len(r.stdout), len(want.stdout)))
check(re.search(r"warning: \S*libc\.so\.6: \d+ of \d+ functions cannot be probed and are "
                r"skipped \(ENOTSUPP \(524\)", r.stderr),
      "functions=* on libc: the warning names count and reason: %r" % r.stderr[-2000:])
# exactly the functions the kernel refuses are skipped: here only pthread_spin_lock, whose
# first instruction is `lock decl (%rdi)` (objdump -d; uprobes cannot step over a lock prefix)
m = re.search(r"libc\.so\.6: (\d+) of \d+ functions cannot be probed and are skipped "
              r"\([^\n]*\): ([^\n]*)", r.stderr)
equal(m and (m.group(1), m.group(2)), ("1", "pthread_spin_lock"),
      "functions=* on libc: the one function skipped (count, names)")
check(re.search(r"entry-only probes", r.stderr),
      "functions=* on libc: setjmp & co get entry-only probes: %r" % r.stderr[-2000:])
check("Unknown error 524" not in r.stderr, "no bare 'Unknown error 524'")
star, _, _ = dctest.read_trace(os.path.join(d, "star.pfw.gz"))
check(len([e for e in star if e.get("cat") == "LIBC"]) > 1000,
      "functions=* on libc: the traced ls's libc calls are recorded")
sj = [e for e in star if e.get("cat") == "LIBC" and e["name"] in ("_setjmp", "__sigsetjmp")]
check(sj, "functions=* on libc: ls's setjmp calls are recorded")
equal(sorted({(e["dur"], e["args"].get("entry_only"), "ret" in e["args"]) for e in sj}),
      [(0, 1, False)], "setjmp calls are entry-only events: dur 0, entry_only 1, no ret")

# --- 3b. a function named exactly is forced: its return is probed (the traced ls only) ------
with open(lua, "w") as f:
    f.write('local dc = require "datacrumbs"\n'
            'dc.uprobe { file = "libc.so.6", functions = { "_setjmp", "__sigsetjmp",'
            ' "__memset_avx512_unaligned_erms" }, layer = "LIBC" }\n')
r = dctest.run_dc(["run", lua, "-o", os.path.join(d, "named.pfw.gz"), "--", "ls", "-l",
                   "/usr/bin"])
equal((r.returncode, r.stdout == want.stdout), (0, True), "named setjmp: ls runs as untraced")
check("entry-only" not in r.stderr, "named setjmp: no entry-only warning: %r" % r.stderr)
# glibc's AVX-512 memset starts with `vpbroadcastb %esi,%zmm16` (EVEX, first byte 0x62): a
# uprobe there made memset write zeros in every process here, so it is refused even named
check(re.search(r"libc\.so\.6: 1 of 3 functions start with an AVX-512 \(EVEX\) instruction "
                r"and are skipped .*: __memset_avx512_unaligned_erms$", r.stderr, re.M),
      "named AVX-512 memset: skipped with the reason: %r" % r.stderr)
named, _, _ = dctest.read_trace(os.path.join(d, "named.pfw.gz"))
nj = [e for e in named if e.get("cat") == "LIBC"]
check(nj and all("ret" in e["args"] and "entry_only" not in e["args"] for e in nj),
      "named setjmp: events with ret (%d)" % len(nj))

# --- 4. the kernel's log ------------------------------------------------------------------
after = bad_dmesg()
equal(after[len(before):] if after[:len(before)] == before else after, [],
      "no new uretprobe / uprobe leak / SIGILL line in dmesg (%d before, %d after)"
      % (len(before), len(after)))
print("dmesg bad lines: %d before, %d after" % (len(before), len(after)))
equal(dctest.orphan_links(), [], "no BPF link left")
dctest.finish()
