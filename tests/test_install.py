"""test_install.py: `cmake --install` into a temporary prefix puts every file in place; with
Debian's real Lmod, `module load datacrumbs` gives PATH, MANPATH and DATACRUMBS_SCRIPT_PATH,
and `datacrumbs run io_posix.lua -- dd ...` works from another directory."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dctest as t

LMOD_INIT = "/usr/share/lmod/lmod/init/bash"
BUILD = os.environ.get("BUILD_DIR", "build")


def main():
    if not os.path.exists(LMOD_INIT):
        print("SKIP: %s: Lmod is not installed (%s missing; Debian: apt-get install lmod): "
              "the module test is NOT TESTED" % (sys.argv[0], LMOD_INIT), flush=True)
        sys.exit(77)
    t.need_root()
    wd = t.workdir("install")
    prefix = os.path.join(wd, "prefix")
    r = subprocess.run(["cmake", "--install", BUILD, "--prefix", prefix],
                       capture_output=True, text=True)
    t.equal(r.returncode, 0, "cmake --install (%s)" % r.stderr)

    src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    version = subprocess.run([t.DATACRUMBS, "version"], capture_output=True,
                             text=True).stdout.split()[-1]
    want = ["bin/datacrumbs", "share/man/man1/datacrumbs.1",
            "modulefiles/datacrumbs/" + version,
            "share/datacrumbs/lua/datacrumbs/filters.lua",
            "share/doc/datacrumbs/lua-api.md", "share/doc/datacrumbs/probes.md",
            "share/datacrumbs/python/pfw_summary.py", "share/datacrumbs/python/pfw_validate.py"]
    want += ["share/datacrumbs/python/datacrumbs/" + f for f in
             os.listdir(os.path.join(src, "python", "datacrumbs")) if f.endswith(".py")]
    want += ["share/datacrumbs/scripts/" + f for f in os.listdir(os.path.join(src, "scripts"))
             if f.endswith(".lua")]
    want += ["share/datacrumbs/probes/" + f for f in os.listdir(os.path.join(src, "probes"))
             if f.endswith(".yaml")]
    for f in want:
        t.check(os.path.isfile(os.path.join(prefix, f)), "installed: %s" % f)
    t.check(os.access(os.path.join(prefix, "bin/datacrumbs"), os.X_OK), "binary executable")
    with open(os.path.join(prefix, "modulefiles/datacrumbs", version)) as f:
        mod = f.read()
    t.check(mod.startswith("#%Module"), "a Tcl modulefile")
    t.check('set prefix "%s"' % prefix in mod, "the modulefile has the install prefix")
    with open(os.path.join(prefix, "share/man/man1/datacrumbs.1")) as f:
        page = f.read()
    t.check(page.startswith(".\\\"") and ".TH DATACRUMBS 1" in page, "a man(7) page")
    for sec in ("datacrumbs run", "datacrumbs list", "datacrumbs check"):
        t.check(".SS " + sec in page, "man page has %s" % sec)
    t.check("\\-\\-buffer\\-size" in page, "man page has run's options (from run --help)")

    # from another directory, with only what the module sets
    run = os.path.join(wd, "elsewhere")
    os.makedirs(run)
    script = (
        "source %s\n"
        "module use %s/modulefiles\n"
        "module load datacrumbs || exit 90\n"
        "echo \"which=$(command -v datacrumbs)\"\n"
        "echo \"scripts=$DATACRUMBS_SCRIPT_PATH\"\n"
        "echo \"man=$(man -w datacrumbs)\"\n"
        "echo \"manls=$(man -w ls)\"\n"
        "cd %s && datacrumbs run io_posix.lua -- dd if=/dev/zero of=X bs=4k count=3 || exit 91\n"
        "T=$(ls *.pfw.gz)\n"
        "datacrumbs validate $T && echo validate=ok\n"
        "datacrumbs summary $T | head -1 | sed 's/^/summary=/'; echo \"summary_rc=${PIPESTATUS[0]}\"\n"
        "datacrumbs convert --chrome -o x.json $T && echo convert=ok\n"
        "datacrumbs report -o r.html $T >/dev/null && echo report=ok\n"
        "python3 -c 'import datacrumbs.analysis as a; print(\"loader=\" + a.__file__)'\n"
        % (LMOD_INIT, prefix, run))
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("DATACRUMBS") and k not in ("MANPATH", "LOADEDMODULES")}
    r = subprocess.run(["bash", "-lc", script], capture_output=True, text=True, env=env,
                       timeout=300)
    print(r.stdout + r.stderr)
    t.equal(r.returncode, 0, "module load + datacrumbs run: exit status")
    out = dict(re.findall(r"^(\w+)=(.*)$", r.stdout, re.M))
    t.equal(out.get("which"), os.path.join(prefix, "bin/datacrumbs"), "PATH from the module")
    t.check(os.path.join(prefix, "share/datacrumbs/scripts") in out.get("scripts", "").split(":"),
            "DATACRUMBS_SCRIPT_PATH has the installed scripts: %r" % out.get("scripts"))
    t.equal(out.get("man"), os.path.join(prefix, "share/man/man1/datacrumbs.1"),
            "man -w datacrumbs with the module's MANPATH")
    t.check(out.get("manls", "").startswith("/usr/share/man/"),
            "system man pages still found: %r" % out.get("manls"))

    t.equal([out.get(k) for k in ("validate", "summary_rc", "convert", "report")],
            ["ok", "0", "ok", "ok"], "installed validate, summary | head, convert, report")
    t.check(re.match(r"dd-.*\.pfw\.gz: 1 processes, \d+ calls, 0 lost$", out.get("summary", "")),
            "installed summary's first line: %r" % out.get("summary"))
    t.equal(out.get("loader"), os.path.join(prefix, "share/datacrumbs/python/datacrumbs/analysis.py"),
            "the loader from the module's PYTHONPATH")
    trace = t.find_trace(run)
    t.check_pfw(trace)
    events, _, _ = t.read_trace(trace)
    x = os.path.join(run, "X")
    writes = [e for e in t.calls(events) if e["name"] in ("write", "__write")
              and e["path"] == x]
    t.equal(len(writes), 3, "writes to X")
    t.equal([e["args"].get("count") for e in writes], [4096] * 3, "write sizes")
    t.equal([e["args"].get("ret") for e in writes], [4096] * 3, "write returns")
    t.finish()


if __name__ == "__main__":
    main()
