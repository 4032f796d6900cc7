"""test_list_check.py: `datacrumbs list` (scripts, descriptions, shadowing; --functions)
and `datacrumbs check` (OK as a non-root user, file:line errors on broken scripts); the
return plans' cache (root-only, per file version) through check."""
import fnmatch
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dctest as t

SRC_SCRIPTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                           "scripts")


def env_with(**kw):
    e = dict(os.environ)
    for k, v in kw.items():
        if v is None:
            e.pop(k, None)
        else:
            e[k] = v
    return e


def first_line_desc(path):
    with open(path) as f:
        line = f.readline().rstrip()
    m = re.match(r"^--\s*[^ ]+\.lua:\s*(.*)$", line)
    return m.group(1) if m else None


def test_list(wd):
    # the shipped scripts, each with its one-line description
    r = t.run_dc(["list"], env=env_with(DATACRUMBS_SCRIPT_PATH=SRC_SCRIPTS))
    t.equal(r.returncode, 0, "list: exit status (stderr %r)" % r.stderr)
    shipped = sorted(f for f in os.listdir(SRC_SCRIPTS) if f.endswith(".lua"))
    t.check(len(shipped) >= 6, "shipped scripts: %r" % shipped)
    t.check(SRC_SCRIPTS in r.stdout, "list names the directory %s:\n%s" % (SRC_SCRIPTS, r.stdout))
    for s in shipped:
        desc = first_line_desc(os.path.join(SRC_SCRIPTS, s))
        t.check(desc, "%s opens with '-- %s: description'" % (s, s))
        t.check(re.search(r"^  %s +%s$" % (re.escape(s), re.escape(desc or "?")), r.stdout,
                          re.M), "list shows '%s  %s':\n%s" % (s, desc, r.stdout))

    # a user directory earlier in DATACRUMBS_SCRIPT_PATH shadows a shipped script
    user = os.path.join(wd, "myscripts")
    os.makedirs(user)
    with open(os.path.join(user, "io_posix.lua"), "w") as f:
        f.write('-- io_posix.lua: my own POSIX writes\n'
                'local dc = require "datacrumbs"\n'
                'dc.probe { layer = "posix", functions = { "write" } }\n')
    with open(os.path.join(user, "mine.lua"), "w") as f:
        f.write('-- mine.lua: only mine\nlocal dc = require "datacrumbs"\ndc.probe "syscalls"\n')
    env = env_with(DATACRUMBS_SCRIPT_PATH=user + ":" + SRC_SCRIPTS)
    r = t.run_dc(["list"], env=env)
    t.equal(r.returncode, 0, "list with a user dir: exit status")
    out = r.stdout
    t.check(out.find(user + " ($DATACRUMBS_SCRIPT_PATH):") >= 0 and
            out.find(user) < out.find(SRC_SCRIPTS),
            "the user dir comes first, labelled:\n" + out)
    t.check(re.search(r"^  io_posix\.lua +my own POSIX writes$", out, re.M),
            "the user's io_posix.lua with its description:\n" + out)
    t.check(re.search(r"^  mine\.lua +only mine$", out, re.M), "mine.lua listed:\n" + out)
    shadow = re.search(r"^  io_posix\.lua +.*\[shadowed by %s/io_posix\.lua\]$"
                       % re.escape(user), out, re.M)
    t.check(shadow, "the shipped io_posix.lua is marked shadowed by the user's:\n" + out)
    t.equal(out.count("shadowed by"), 1, "only io_posix.lua is shadowed")
    # and the script found by name is the one list says wins
    r = t.run_dc(["check", "io_posix.lua"], env=env)
    t.equal(r.returncode, 0, "check of the user's io_posix.lua (stderr %r)" % r.stderr)
    t.check(re.search(r"^io_posix\.lua: 1 function in 1 layer: POSIX \(syscalls: 1\) \.\.\. OK$",
                      r.stdout, re.M), "check uses the shadowing script: %r" % r.stdout)


def parse_functions(out):
    lines = out.splitlines()
    head = lines[0] if lines else ""
    rows = []
    for l in lines[1:]:
        m = re.match(r"^(\S+) +0x([0-9a-f]+)$", l)
        t.check(m, "a 'NAME  0xOFFSET' line: %r" % l)
        if m:
            rows.append((m.group(1), int(m.group(2), 16)))
    return head, rows


def test_functions():
    r = t.run_dc(["list", "--functions", "libc.so.6:fopen*"])
    t.equal(r.returncode, 0, "list --functions libc.so.6:fopen* (stderr %r)" % r.stderr)
    head, rows = parse_functions(r.stdout)
    t.check(re.match(r"^# /\S+/libc\.so\.6: \d+ functions matching 'fopen\*'", head),
            "header names the library found: %r" % head)
    names = [n for n, _ in rows]
    t.check("fopen" in names and "fopen64" in names, "fopen and fopen64 listed: %r" % names)
    t.equal(names, sorted(names), "sorted by name")
    t.check(all(fnmatch.fnmatchcase(n, "fopen*") for n in names), "all match the glob")
    t.check(all(o > 0 for _, o in rows), "offsets are set")
    t.equal(len(set(rows)), len(rows), "no duplicate rows")

    # a binary given by path: its own functions, with the offsets nm gives (PIE: the text
    # segment's file offset equals its address)
    prog = os.environ["PROG_IO"]
    r = t.run_dc(["list", "--functions", prog + ":*_io"])
    t.equal(r.returncode, 0, "list --functions PROG_IO:*_io (stderr %r)" % r.stderr)
    _, rows = parse_functions(r.stdout)
    nm = subprocess.run(["nm", prog], capture_output=True, text=True).stdout
    want = sorted((m.group(2), int(m.group(1), 16)) for m in
                  re.finditer(r"^([0-9a-f]+) [Tt] (\S+_io)$", nm, re.M))
    t.check(want, "nm finds *_io functions in prog_io")
    t.equal(rows, want, "prog_io's *_io functions and offsets")

    r = t.run_dc(["list", "--functions", "libc.so.6:no_such_function_*"])
    t.equal(r.returncode, 1, "no match: exit 1")
    t.check("no function of" in r.stderr, "no match says so: %r" % r.stderr)
    r = t.run_dc(["list", "--functions", "libno_such_lib.so.9:*"])
    t.equal(r.returncode, 1, "unknown library: exit 1")
    t.check("'libno_such_lib.so.9' not found" in r.stderr, "says not found: %r" % r.stderr)
    r = t.run_dc(["list", "--bogus"])
    t.equal(r.returncode, 2, "list --bogus: usage error")


def test_long_names(wd):
    """dc.uprobe over C++ names of 64 bytes or more (a dc_func kept 63 bytes until issue
    12; now any length): every match resolved, under its whole name, with no warning
    about names; `check` resolves without attaching."""
    glob = "_ZNKSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE*"
    r = t.run_dc(["list", "--functions", "libstdc++.so.6:" + glob])
    if r.returncode != 0:
        print("SKIP: long names: libstdc++.so.6 not found by list (%s)" % r.stderr.strip())
        return
    head, rows = parse_functions(r.stdout)
    m = re.match(r"^# (/\S+): %d functions matching" % len(rows), head)
    t.check(m, "list's header names the file and the count: %r" % head)
    lib = m.group(1) if m else "libstdc++.so.6"
    longer = sorted(n for n, _ in rows if len(n) >= 64)
    shorter = [n for n, _ in rows if len(n) < 64]
    t.check(longer and shorter, "libstdc++ has names on both sides of 64 bytes: %d, %d"
            % (len(longer), len(shorter)))
    sc = os.path.join(wd, "long.lua")
    with open(sc, "w") as f:
        f.write('local dc = require "datacrumbs"\n'
                'dc.uprobe { file = "%s", functions = "%s" }\n' % (lib, glob))
    r = t.run_dc(["check", sc])
    t.equal(r.returncode, 0, "long names: check's exit status (%s)" % r.stderr)
    t.check("longer than" not in r.stderr and "no function of" not in r.stderr,
            "long names: no warning about names: %r" % r.stderr)
    t.check(re.search(r"long\.lua: %d functions in 1 layer" % len(rows), r.stdout),
            "long names: all %d resolved: %r" % (len(rows), r.stdout[:300]))
    listed = set(re.findall(r"^  (\S+) \(", r.stdout, re.M))
    t.equal(sorted(n for n in longer if n not in listed), [],
            "long names: check lists each of the %d long names whole" % len(longer))


LLVM = "/usr/lib/x86_64-linux-gnu/libLLVM-14.so.1"


def writable_by_others(path):
    """The first directory of path or above it that root does not own or others may
    write (where the plan cache is refused), or None."""
    p = os.path.realpath(path)
    while True:
        st = os.stat(p)
        if st.st_uid != 0 or st.st_mode & 0o022:
            return p
        if p == "/":
            return None
        p = os.path.dirname(p)


def test_plan_cache(wd):
    """The return plans of a file of 1,024 functions or more are cached per file version
    (core/plancache.c) in a root-only directory: `check` prints the same plans with no
    cache, writing it and reading it; a run that finds every plan there writes nothing; a
    cache file that is not root's, or is readable by others, or is corrupt, is ignored and
    replaced; a cache directory below a world-writable one (/tmp) is refused."""
    if os.geteuid() != 0:
        print("SKIP: plan cache: needs root (the cache is root's only)")
        return
    if not os.path.exists(LLVM):
        print("SKIP: plan cache: no %s (Debian libllvm14, which llvm brings)" % LLVM)
        return
    bad = writable_by_others(wd)
    if bad:
        print("SKIP: plan cache: %s is not root's or is writable by others: the cache is "
              "refused below it" % bad)
        return
    r = t.run_dc(["list", "--functions", LLVM + ":*"])
    t.equal(r.returncode, 0, "plan cache: list --functions libLLVM (%s)" % r.stderr[:200])
    names = [n for n, _ in parse_functions(r.stdout)[1]][:2000]
    sc = os.path.join(wd, "plans.lua")
    with open(sc, "w") as f:
        f.write('local dc = require "datacrumbs"\ndc.uprobe { file = "%s", functions = {\n%s} }\n'
                % (LLVM, "".join('  "%s",\n' % n for n in names)))
    cache = os.path.join(wd, "plancache", "cache")
    os.makedirs(os.path.dirname(cache), mode=0o700)
    st = os.stat(os.path.realpath(LLVM))
    fname = os.path.join(cache, "%x-%x.plans" % (st.st_dev, st.st_ino))

    def check_with(where, label):
        r = t.run_dc(["check", sc], env=env_with(DATACRUMBS_PLAN_CACHE=where, SUDO_UID=None))
        t.equal(r.returncode, 0, "plan cache, %s: check's exit status (%s)" % (label, r.stderr[:300]))
        return r.stdout

    want = check_with("off", "no cache")
    m = re.search(r"plans\.lua: (\d+) functions in 1 layer", want)
    t.check(m and int(m.group(1)) >= 1024, "plan cache: more functions than the 1,024 a "
            "cache file needs (aliases of one address count once): %r" % want[:200])
    t.check(not os.path.exists(cache), "plan cache: off writes no cache directory")
    t.equal(check_with(cache, "written"), want, "plan cache: the plans as made when written")
    t.equal(sorted(os.listdir(cache)), [os.path.basename(fname)],
            "plan cache: one file, named after libLLVM's device and inode")
    c = os.stat(cache)
    f = os.stat(fname)
    t.equal((c.st_uid, c.st_mode & 0o777, f.st_uid, f.st_mode & 0o777), (0, 0o700, 0, 0o600),
            "plan cache: the directory root's 0700, the file root's 0600")
    t.equal(check_with(cache, "read"), want, "plan cache: the plans as made when read")
    f2 = os.stat(fname)
    t.equal((f2.st_ino, f2.st_mtime_ns), (f.st_ino, f.st_mtime_ns),
            "plan cache: a run that finds every plan cached writes nothing")

    def spoiled(how, label):
        before = os.stat(fname).st_ino
        how()
        t.equal(check_with(cache, label), want, "plan cache, %s: the plans as made" % label)
        a = os.stat(fname)
        t.equal((a.st_ino != before, a.st_uid, a.st_mode & 0o777), (True, 0, 0o600),
                "plan cache, %s: ignored, and replaced by a root file of mode 0600" % label)

    spoiled(lambda: os.chown(fname, 65534, 65534), "owned by nobody")
    spoiled(lambda: os.chmod(fname, 0o644), "readable by others")

    def corrupt():
        with open(fname, "r+b") as fh:
            fh.seek(200)
            b = fh.read(1)
            fh.seek(200)
            fh.write(bytes([b[0] ^ 0xff]))
    spoiled(corrupt, "one byte changed")
    under_tmp = os.path.join("/tmp", "datacrumbs-plancache-%d" % os.getpid())
    subprocess.run(["rm", "-rf", under_tmp], check=True)
    os.makedirs(under_tmp, mode=0o700)
    t.equal(check_with(os.path.join(under_tmp, "c"), "below /tmp"), want,
            "plan cache below /tmp: the plans as made")
    t.equal(os.listdir(under_tmp), [], "plan cache below /tmp (world-writable): refused")
    os.rmdir(under_tmp)


def as_nobody(args, **kw):
    """Runs datacrumbs as uid/gid 65534 when root (setpriv), else as is."""
    pre = []
    if os.geteuid() == 0:
        pre = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    return subprocess.run(pre + [t.DATACRUMBS] + args, capture_output=True, text=True,
                          timeout=120, **kw)


def test_check(wd):
    r = as_nobody(["check", "io_posix.lua"])
    t.equal(r.returncode, 0, "check io_posix.lua as nobody (stderr %r)" % r.stderr)
    # (ld.so's calls are all system calls: no uprobe in it, so it is not listed)
    # the layers counted are those listed (the script's third, for the fd table alone, is not)
    t.check(re.match(r"^io_posix\.lua: \d+ functions in 2 layers: POSIX \(syscalls: \d+, libc\.so\.6: "
                     r"\d+\), AIO \(tracepoints: \d+\) \.\.\. OK\n$",
                     r.stdout),
            "check summary: %r" % r.stdout)
    r = as_nobody(["check", "io_syscalls.lua"])
    t.equal(r.returncode, 0, "check io_syscalls.lua as nobody (stderr %r)" % r.stderr)
    t.check(re.match(r"^io_syscalls\.lua: \d+ functions in 2 layers: SYSCALL \(syscalls: \d+\), "
                     r"AIO \(tracepoints: \d+\) \.\.\. OK\n$", r.stdout),
            "syscalls summary: %r" % r.stdout)
    r = as_nobody(["check", "io_stdio.lua"])
    t.equal(r.returncode, 0, "check io_stdio.lua as nobody (stderr %r)" % r.stderr)
    t.check(re.match(r"^io_stdio\.lua: \d+ functions in 1 layer: STDIO \(libc\.so\.6: \d+\) "
                     r"\.\.\. OK\n$", r.stdout),
            "stdio summary (its POSIX layer keeps the fd table only: not listed, not counted): %r"
            % r.stdout)
    # a static command: POSIX goes to the programs it runs, with the run's warning
    r = t.run_dc(["check", "io_posix.lua", "--", os.environ["PROG_RAW"]])
    t.equal(r.returncode, 0, "check io_posix.lua -- PROG_RAW")
    t.check("does not load libc.so (a static binary)" in r.stderr,
            "static CMD warning as in a run: %r" % r.stderr)

    broken = {
        "syn.lua": ('local dc = require "datacrumbs"\ndc.probe "posix"\nlocal x = = 3\n',
                    r"syn\.lua:3: unexpected symbol near '='"),
        "rt.lua": ('local dc = require "datacrumbs"\n\ndc.probe "posix"\nerror("boom")\n',
                   r"rt\.lua:4: boom"),
        "badfn.lua": ('local dc = require "datacrumbs"\n'
                      'dc.probe { layer = "posix", functions = { "nosuchfn" } }\n',
                      r"badfn\.lua:2: probe: function 'nosuchfn' is not in \S+posix\.yaml"),
        "badlayer.lua": ('local dc = require "datacrumbs"\ndc.probe "nolayer"\n',
                         r"badlayer\.lua:2: probe: no probe description for layer 'nolayer'"),
        "badyaml.lua": ('local dc = require "datacrumbs"\ndc.probe "%s/bad.yaml"\n' % wd,
                        r"badyaml\.lua:2: probe: \S+/bad\.yaml:5: unknown field 'argz'"),
        "noprobe.lua": ('local dc = require "datacrumbs"\n',
                        r"noprobe\.lua asks for no probes"),
    }
    with open(os.path.join(wd, "bad.yaml"), "w") as f:
        f.write("layer: X\nlibrary: libc.so\nfunctions:\n  - name: open\n    argz: [path p]\n")
    for name, (text, _) in broken.items():
        with open(os.path.join(wd, name), "w") as f:
            f.write(text)
    os.chmod(wd, 0o755)
    for f in os.listdir(wd):
        if os.path.isfile(os.path.join(wd, f)):
            os.chmod(os.path.join(wd, f), 0o644)
    for name, (_, want) in broken.items():
        r = as_nobody(["check", os.path.join(wd, name)])
        t.equal(r.returncode, 125, "check %s: exit status" % name)
        t.check(re.search(r"^datacrumbs: \S*" + want, r.stderr, re.M),
                "check %s says %r: %r" % (name, want, r.stderr))
        t.equal(r.stdout, "", "check %s: no summary" % name)
    # a script that ends the run itself (dc.done, as after its --help): not an error
    with open(os.path.join(wd, "early.lua"), "w") as f:
        f.write('local dc = require "datacrumbs"\nprint("usage: early.lua")\ndc.done(0)\n')
    os.chmod(os.path.join(wd, "early.lua"), 0o644)
    r = as_nobody(["check", os.path.join(wd, "early.lua")])
    t.equal(r.returncode, 0, "check of a script that calls dc.done(0): exit status")
    t.equal(r.stdout, "usage: early.lua\nearly.lua: the script ends the run early (dc.done(0)): "
            "no probes to check\n", "check of a script that calls dc.done(0): stdout")
    t.equal(r.stderr, "", "check of a script that calls dc.done(0): stderr")
    r = as_nobody(["check", "io_posix.lua", "--bad"])
    t.equal(r.returncode, 125, "a bad script option: 125")
    t.check(re.search(r"io_posix\.lua: unknown option '--bad' \(see: datacrumbs run io_posix\.lua "
                      r"--help\)", r.stderr),
            "bad script option message: %r" % r.stderr)
    r = as_nobody(["check", "no_such_script.lua"])
    t.equal(r.returncode, 125, "missing script: 125")
    t.check("script 'no_such_script.lua' not found" in r.stderr, "not found: %r" % r.stderr)
    r = as_nobody(["check"])
    t.equal(r.returncode, 2, "check without SCRIPT: usage error")


def test_script_help():
    """Every shipped script answers `datacrumbs run SCRIPT --help`: its usage on stdout,
    exit 0, nothing traced."""
    src = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts")
    names = sorted(f for f in os.listdir(src) if f.endswith(".lua"))
    t.check(len(names) >= 13, "shipped scripts: %d" % len(names))
    for n in names:
        r = as_nobody(["run", n, "--help"])
        t.equal((r.returncode, r.stderr), (0, ""), "%s --help: exit status, stderr" % n)
        t.check(r.stdout.startswith("usage: datacrumbs run %s " % n) and "\n\n" in r.stdout,
                "%s --help: usage and a description: %r" % (n, r.stdout[:200]))


def main():
    test_script_help()
    wd = t.workdir("list_check")
    os.chmod(wd, 0o755)
    test_list(wd)
    test_functions()
    test_long_names(wd)
    test_plan_cache(wd)
    broken = os.path.join(wd, "broken")
    os.makedirs(broken)
    test_check(broken)
    t.finish()


if __name__ == "__main__":
    main()
