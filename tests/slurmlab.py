"""slurmlab.py: a two-node SLURM cluster on this one machine for the SLURM tests: a real
munged, slurmctld and two slurmd (n1, n2), each slurmd in its own UTS and network namespace
with its own address on a bridge, all under one temporary directory; torn down by pid.

As a module: `with Lab(plugstack=LINE) as lab: lab.run_as_user(["srun", ...])`.
By hand (root): `python3 tests/slurmlab.py up` (prints the lab's directory and SLURM_CONF,
leaves it running) and `python3 tests/slurmlab.py down DIR`."""
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time

USER = "dctest"           # the non-root test user, created when missing
UID = 7411                # fixed, so a leftover file says whose it is
BRIDGE = "dclab0"
NET = "10.199.77"         # the bridge is .1 (slurmctld's address), node i is .1i
NODES = ["n1", "n2"]
CTLD_PORT = 16817         # not SLURM's defaults: a real SLURM on the machine is not touched
SLURMD_PORT = 16818
PACKAGES = ["munged", "slurmctld", "slurmd", "slurmstepd", "srun", "sbatch", "scancel"]
READY_TIMEOUT = 60        # seconds a daemon may take to answer before the lab gives up


def missing_programs():
    """The programs of munge/slurmd/slurmctld/slurm-client that are not installed."""
    return [p for p in PACKAGES
            if not shutil.which(p, path="/usr/sbin:/usr/bin:/sbin:/bin")]


def ensure_user():
    """Creates the test user USER (uid UID, no home, /bin/sh) when missing; returns its
    pwd entry. Errors: a different user already has UID."""
    try:
        pw = pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "-u", str(UID), "-U", "-M", "-d", "/nonexistent",
                        "-s", "/bin/sh", USER], check=True)
        pw = pwd.getpwnam(USER)
    if pw.pw_uid != UID:
        raise RuntimeError("slurmlab: user %s has uid %d, want %d" % (USER, pw.pw_uid, UID))
    return pw


def _run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def _wait_for(what, probe, timeout=READY_TIMEOUT, procs=()):
    """Polls probe() (a readiness question to a daemon, e.g. `sinfo`) until it returns true;
    fails when timeout seconds pass or a process of procs has exited."""
    t0 = time.monotonic()
    while True:
        if probe():
            return
        for name, p in procs:
            if p.poll() is not None:
                raise RuntimeError("slurmlab: %s exited (%d) while waiting for %s"
                                   % (name, p.returncode, what))
        if time.monotonic() - t0 > timeout:
            raise RuntimeError("slurmlab: %s not ready after %d s" % (what, timeout))
        time.sleep(0.1)


class Lab:
    """The cluster. plugstack: the plugstack.conf line (None: an empty plugstack.conf), in
    which "{dir}" stands for the lab's directory; files: {name: text} written (root's, mode
    0644) into that directory before any daemon starts (e.g. a site.conf); base: the
    directory to make the lab's in (default the system's temporary directory; a root-owned
    one keeps every path the tracer reads as root free of world-writable parents).
    Attributes once up: dir (the lab's root), conf (slurm.conf's path), env (the environment
    a SLURM client needs), times (seconds of each phase)."""

    def __init__(self, plugstack=None, files=None, keep=False, base=None):
        self.base = base
        self.plugstack = plugstack
        self.files = files or {}
        self.keep = keep
        self.dir = None
        self.procs = []          # (name, Popen) of every daemon started, in start order
        self.netns = []
        self.links = []
        self.times = {}

    # --- setup ---
    def up(self):
        t0 = time.monotonic()
        ensure_user()
        self.dir = tempfile.mkdtemp(prefix="dclab-", dir=self.base)
        os.chmod(self.dir, 0o755)   # the user's srun reads slurm.conf and the munge socket
        self.conf = os.path.join(self.dir, "slurm.conf")
        self.env = dict(os.environ, SLURM_CONF=self.conf)
        try:
            self._munge()
            self._network()
            self._write_conf()
            self._slurmctld()
            for i, n in enumerate(NODES):
                self._slurmd(i, n)
            _wait_for("both nodes idle", self._nodes_idle, procs=self.procs)
        except BaseException:
            self.down()
            raise
        self.times["setup"] = time.monotonic() - t0
        return self

    def _munge(self):
        d = os.path.join(self.dir, "munge")
        os.mkdir(d, 0o755)
        self.munge_socket = os.path.join(d, "munge.socket")
        key = os.path.join(d, "munge.key")
        _run(["mungekey", "--create", "--keyfile", key])
        os.chmod(key, 0o400)
        p = subprocess.Popen(["munged", "--foreground", "--force", "--socket", self.munge_socket,
                              "--key-file", key, "--pid-file", os.path.join(d, "munged.pid"),
                              "--log-file", os.path.join(d, "munged.log"),
                              "--seed-file", os.path.join(d, "munged.seed")],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=open(os.path.join(d, "munged.err"), "w"))
        self.procs.append(("munged", p))

        def ok():
            r = subprocess.run("munge -n -S %s | unmunge -S %s" % (self.munge_socket,
                                                                   self.munge_socket),
                               shell=True, capture_output=True)
            return r.returncode == 0
        _wait_for("munged", ok, procs=self.procs)

    def _network(self):
        _run(["ip", "link", "add", BRIDGE, "type", "bridge"])
        self.links.append(BRIDGE)
        _run(["ip", "addr", "add", NET + ".1/24", "dev", BRIDGE])
        _run(["ip", "link", "set", BRIDGE, "up"])
        for i, n in enumerate(NODES):
            ns, host, peer = "dclab-" + n, "dclab-" + n + "h", "dclab-" + n + "p"
            _run(["ip", "netns", "add", ns])
            self.netns.append(ns)
            _run(["ip", "link", "add", host, "type", "veth", "peer", "name", peer])
            self.links.append(host)
            _run(["ip", "link", "set", host, "master", BRIDGE, "up"])
            _run(["ip", "link", "set", peer, "netns", ns])
            x = ["ip", "netns", "exec", ns, "ip"]
            _run(x + ["link", "set", "lo", "up"])
            _run(x + ["addr", "add", "%s.1%d/24" % (NET, i + 1), "dev", peer])
            _run(x + ["link", "set", peer, "up"])
            _run(x + ["route", "add", "default", "via", NET + ".1"])

    def _write_conf(self):
        d = self.dir
        for sub in ["ctld", "spool"]:
            os.mkdir(os.path.join(d, sub), 0o755)
        for n in NODES:
            os.mkdir(os.path.join(d, "spool", n), 0o755)
        for name, text in self.files.items():
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
            os.chmod(os.path.join(d, name), 0o644)
        with open(os.path.join(d, "plugstack.conf"), "w") as f:
            if self.plugstack:
                f.write(self.plugstack.replace("{dir}", d) + "\n")
        lines = [
            "ClusterName=dclab",
            "SlurmctldHost=dcctl(%s.1)" % NET,
            "SlurmctldPort=%d" % CTLD_PORT,
            "SlurmdPort=%d" % SLURMD_PORT,
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            "AuthInfo=socket=" + self.munge_socket,
            "StateSaveLocation=%s/ctld" % d,
            "SlurmdSpoolDir=%s/spool/%%n" % d,
            "SlurmctldPidFile=%s/slurmctld.pid" % d,
            "SlurmdPidFile=%s/slurmd-%%n.pid" % d,
            "SlurmctldLogFile=%s/slurmctld.log" % d,
            "SlurmdLogFile=%s/slurmd-%%n.log" % d,
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
            # no cgroups: the lab's slurmd share this machine's (and another engineer's) hierarchy
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            "SchedulerType=sched/builtin",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "MpiDefault=none",
            "SwitchType=switch/none",
            "PlugStackConfig=%s/plugstack.conf" % d,
            "ReturnToService=2",
            "SlurmdParameters=config_overrides",
            "KillWait=5",
            "InactiveLimit=0",
            "MinJobAge=5",
        ]
        for i, n in enumerate(NODES):
            lines.append("NodeName=%s NodeAddr=%s.1%d NodeHostname=%s CPUs=4 Boards=1 "
                         "SocketsPerBoard=1 CoresPerSocket=4 ThreadsPerCore=1 RealMemory=1000 "
                         "State=UNKNOWN" % (n, NET, i + 1, n))
        lines.append("PartitionName=lab Nodes=%s Default=YES MaxTime=INFINITE State=UP"
                     % ",".join(NODES))
        with open(self.conf, "w") as f:
            f.write("\n".join(lines) + "\n")
        # slurmd initializes a cgroup plugin even with task/none and proctrack/linuxproc;
        # its autodetection fails on a hybrid hierarchy (tmpfs at /sys/fs/cgroup): v1 named,
        # which with those plugins creates no cgroup
        with open(os.path.join(d, "cgroup.conf"), "w") as f:
            f.write("CgroupPlugin=cgroup/v1\n")

    def _slurmctld(self):
        # its own UTS namespace: slurmctld runs only where the hostname is SlurmctldHost's
        p = subprocess.Popen(["unshare", "--uts", "sh", "-c",
                              "hostname dcctl && exec slurmctld -D -i -f \"$0\"", self.conf],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=open(os.path.join(self.dir, "slurmctld.err"), "w"),
                             env=self.env)
        self.procs.append(("slurmctld", p))
        _wait_for("slurmctld", lambda: subprocess.run(
            ["scontrol", "ping"], env=self.env, capture_output=True,
            text=True).stdout.find("is UP") >= 0, procs=self.procs)

    def _slurmd(self, i, n):
        # ip netns exec and unshare exec (no fork) and sh execs: the pid is slurmd's
        p = subprocess.Popen(["ip", "netns", "exec", "dclab-" + n, "unshare", "--uts", "sh",
                              "-c", "hostname \"$1\" && exec slurmd -D -N \"$1\" -f \"$0\"",
                              self.conf, n],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=open(os.path.join(self.dir, "slurmd-%s.err" % n), "w"),
                             env=self.env)
        self.procs.append(("slurmd " + n, p))

    def _nodes_idle(self):
        r = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %t"], env=self.env,
                           capture_output=True, text=True)
        states = dict(l.split() for l in r.stdout.splitlines() if l.strip())
        return all(states.get(n) == "idle" for n in NODES)

    # --- use ---
    def run_as_user(self, cmd, cwd, timeout=120, env=None, **kw):
        """Runs cmd (argv list) as USER in cwd with the lab's SLURM_CONF; returns the
        CompletedProcess (text)."""
        pw = pwd.getpwnam(USER)
        e = {"PATH": "/usr/bin:/bin", "SLURM_CONF": self.conf, "HOME": cwd,
             "USER": USER, "LOGNAME": USER, "LANG": "C.UTF-8"}
        e.update(env or {})
        return subprocess.run(cmd, cwd=cwd, env=e, user=pw.pw_uid, group=pw.pw_gid,
                              extra_groups=[], capture_output=True, text=True,
                              timeout=timeout, **kw)

    def popen_as_user(self, cmd, cwd, env=None, **kw):
        """Starts cmd as USER (like run_as_user); returns the Popen."""
        pw = pwd.getpwnam(USER)
        e = {"PATH": "/usr/bin:/bin", "SLURM_CONF": self.conf, "HOME": cwd,
             "USER": USER, "LOGNAME": USER, "LANG": "C.UTF-8"}
        e.update(env or {})
        return subprocess.Popen(cmd, cwd=cwd, env=e, user=pw.pw_uid, group=pw.pw_gid,
                                extra_groups=[], text=True, **kw)

    def slurm(self, cmd, **kw):
        """Runs a SLURM client command (argv) as root against the lab."""
        return subprocess.run(cmd, env=self.env, capture_output=True, text=True, **kw)

    def node_log(self, n):
        """slurmd's log of node n (the plugin's slurm_info lines land there)."""
        try:
            with open(os.path.join(self.dir, "slurmd-%s.log" % n)) as f:
                return f.read()
        except OSError:
            return ""

    def wait_jobs_gone(self, timeout=60):
        """Waits until squeue lists no job (every step's slurmstepd has ended)."""
        _wait_for("no job left", lambda: self.slurm(["squeue", "-h"]).stdout.strip() == "",
                  timeout=timeout)

    # --- teardown ---
    def _ns_pids(self):
        """Pids of processes in one of the lab's network namespaces (slurmd, slurmstepd, the
        tasks): all of them started by this lab."""
        inodes = set()
        for ns in self.netns:
            try:
                inodes.add(os.stat("/run/netns/" + ns).st_ino)
            except OSError:
                pass
        pids = []
        for d in os.listdir("/proc"):
            if d.isdigit() and int(d) != os.getpid():
                try:
                    if os.stat("/proc/%s/ns/net" % d).st_ino in inodes:
                        pids.append(int(d))
                except OSError:
                    pass
        return pids

    def down(self):
        """Stops every daemon (SIGTERM, then SIGKILL after 10 s), kills what is left in
        the nodes' namespaces, removes namespaces, links and the directory."""
        t0 = time.monotonic()
        # in reverse start order, each waited for: a slurmd says goodbye to slurmctld, and
        # both need munged for it
        for name, p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs = []
        for pid in self._ns_pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for ns in self.netns:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        self.netns = []
        for l in reversed(self.links):
            subprocess.run(["ip", "link", "del", l], capture_output=True)
        self.links = []
        if self.dir and not self.keep:
            shutil.rmtree(self.dir, ignore_errors=True)
        self.times["teardown"] = time.monotonic() - t0

    def __enter__(self):
        return self.up()

    def __exit__(self, *exc):
        self.down()
        return False


def main():
    if os.geteuid() != 0:
        sys.exit("slurmlab.py: needs root (namespaces, daemons)")
    if len(sys.argv) >= 2 and sys.argv[1] == "up":
        plug = sys.argv[2] if len(sys.argv) > 2 else None
        lab = Lab(plugstack=plug, keep=True).up()
        state = {"dir": lab.dir, "pids": [p.pid for _, p in lab.procs], "netns": lab.netns,
                 "links": lab.links}
        with open(os.path.join(lab.dir, "lab.json"), "w") as f:
            json.dump(state, f)
        print("slurmlab: up in %.1f s: %s\nexport SLURM_CONF=%s"
              % (lab.times["setup"], lab.dir, lab.conf))
        # the daemons outlive this process: forget them without stopping them
        lab.procs = []
        os._exit(0)
    if len(sys.argv) == 3 and sys.argv[1] == "down":
        with open(os.path.join(sys.argv[2], "lab.json")) as f:
            state = json.load(f)
        lab = Lab()
        lab.dir, lab.netns, lab.links = sys.argv[2], state["netns"], state["links"]
        # not our children any more: each stopped in reverse start order and waited for
        # through /proc (SIGKILL after 10 s)
        for pid in reversed(state["pids"]):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            try:
                _wait_for("pid %d's exit" % pid, lambda: not os.path.exists("/proc/%d" % pid),
                          timeout=10)
            except RuntimeError:
                os.kill(pid, signal.SIGKILL)
        lab.down()
        print("slurmlab: down in %.1f s" % lab.times["teardown"])
        return
    sys.exit("usage: slurmlab.py up [PLUGSTACK-LINE] | down DIR")


if __name__ == "__main__":
    main()
