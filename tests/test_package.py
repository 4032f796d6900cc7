"""test_package.py: `cpack -G DEB` makes a Debian package that installs with dpkg on this
machine, traces one run from /usr/bin/datacrumbs with the packaged scripts, probes, Lua
modules and Python tools (nothing from the build or source tree), and is removed again.
SKIP when a datacrumbs package is already installed (it is not ours to replace)."""
import glob
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dctest as t  # noqa: E402

BUILD = os.environ.get("BUILD_DIR", "build")


def dpkg_installed():
    r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", "datacrumbs"], capture_output=True,
                       text=True)
    return "install ok installed" in r.stdout


def main():
    t.need_root()
    if dpkg_installed():
        print("SKIP: a datacrumbs Debian package is installed already: %s NOT TESTED"
              % sys.argv[0], flush=True)
        sys.exit(77)
    wd = t.workdir("package")
    r = subprocess.run(["cpack", "-G", "DEB", "-B", wd], cwd=BUILD, capture_output=True,
                       text=True, timeout=600)
    t.equal(r.returncode, 0, "cpack -G DEB (%s)" % (r.stdout + r.stderr)[-2000:])
    debs = glob.glob(os.path.join(wd, "datacrumbs_*_amd64.deb"))
    t.equal(len(debs), 1, "one .deb: %r" % debs)
    if len(debs) != 1:
        t.finish()
    files = subprocess.run(["dpkg-deb", "-c", debs[0]], capture_output=True, text=True).stdout
    for f in ("./usr/bin/datacrumbs", "./usr/share/datacrumbs/scripts/io_posix.lua",
              "./usr/share/datacrumbs/probes/posix.yaml",
              "./usr/share/datacrumbs/lua/datacrumbs/options.lua",
              "./usr/share/datacrumbs/python/datacrumbs/analysis.py",
              "./usr/share/datacrumbs/python/pfw_summary.py", "./usr/share/man/man1/datacrumbs.1",
              "./usr/share/doc/datacrumbs/LICENSE"):
        t.check(" " + f + "\n" in files, "packaged: %s" % f)
    t.check("modulefiles" not in files, "no environment module in the package")
    try:
        r = subprocess.run(["dpkg", "-i", debs[0]], capture_output=True, text=True, timeout=300)
        t.equal(r.returncode, 0, "dpkg -i (%s)" % r.stderr)
        run = os.path.join(wd, "run")
        os.makedirs(run)
        env = {k: v for k, v in os.environ.items() if not k.startswith("DATACRUMBS")}
        r = subprocess.run(["/usr/bin/datacrumbs", "run", "io_posix.lua", "--", "dd",
                            "if=/dev/zero", "of=X", "bs=4k", "count=5", "status=none"],
                           cwd=run, env=env, capture_output=True, text=True, timeout=300)
        t.equal(r.returncode, 0, "packaged datacrumbs run: exit status (%s)" % r.stderr)
        trace = t.find_trace(run)
        t.check_pfw(trace)
        events, _, _ = t.read_trace(trace)
        x = os.path.join(run, "X")
        writes = [e for e in t.calls(events) if e["name"] in ("write", "__write")
                  and e["path"] == x]
        t.equal([(e["args"]["count"], e["args"]["ret"]) for e in writes], [(4096, 4096)] * 5,
                "packaged run: dd's writes to X")
        r = subprocess.run(["/usr/bin/datacrumbs", "summary", trace], env=env,
                           capture_output=True, text=True)
        t.equal((r.returncode, r.stderr), (0, ""), "packaged datacrumbs summary")
        key = x if len(x) <= 40 else "..." + x[-37:]  # the summary's column is 40 wide
        t.check(("\n  %s " % key) in r.stdout, "summary has X's row: %r" % r.stdout)
    finally:
        r = subprocess.run(["dpkg", "-r", "datacrumbs"], capture_output=True, text=True,
                           timeout=300)
        t.equal(r.returncode, 0, "dpkg -r (%s)" % r.stderr)
    t.check(not dpkg_installed() and not os.path.exists("/usr/bin/datacrumbs"),
            "removed: no package, no /usr/bin/datacrumbs")
    t.finish()


if __name__ == "__main__":
    main()
