"""vmkernel.py: boots one of Debian 12's packaged kernels under QEMU (TCG) and runs a shell
script there as root, with this machine's root file system shared read-only (virtiofs).

The guest sees the same programs, libraries and build as the host, so a test runs there as
it runs here, on another kernel. Nothing the guest does writes to the host but its output
directory. What it needs: qemu-system-x86 (with its virtiofsd), busybox-static, cpio, and
the kernel packages, which `apt-get download` fetches into a cache directory."""
import glob
import lzma
import os
import re
import shlex
import shutil
import signal
import subprocess
import time

# The kernels HPC nodes run that Debian 12 packages (apt-cache search names them):
# its own 6.1, and the 6.12 of bookworm-backports' cloud flavour.
SERIES = {
    "6.1": re.compile(r"^linux-image-(6\.1\.0-\d+)-cloud-amd64$"),
    "6.12": re.compile(r"^linux-image-(6\.12\.\d+)\+deb12-cloud-amd64$"),
}
QEMU = "qemu-system-x86_64"
# the checkout this file is in: the tests the guest runs are read from it
SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VIRTIOFSD = "/usr/lib/qemu/virtiofsd"
BUSYBOX = "/bin/busybox"
# the modules the guest's /init needs for virtiofs, in load order (built in on 6.12, but
# for overlay, which is not used: a module missing from a kernel is skipped)
MODULES = ["drivers/virtio/virtio_ring", "drivers/virtio/virtio",
           "drivers/virtio/virtio_pci_legacy_dev", "drivers/virtio/virtio_pci_modern_dev",
           "drivers/virtio/virtio_pci", "fs/fuse/fuse", "fs/fuse/virtiofs"]

# The guest's /init (busybox): the modules, the host's root as the guest's (read-only
# virtiofs), the output directory (read-write virtiofs) at /vmout, then /vmout/guest.sh in a
# chroot, its exit code into /vmout/rc; then power off.
INIT = r"""#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for pass in 1 2 3; do
  for m in $(cat /modules.list); do
    grep -q "^$m " /proc/modules || insmod /mod/$m.ko 2>/dev/null
  done
done
mkdir -p /newroot /vmout
mount -t virtiofs -o ro root /newroot || echo "VM: cannot mount the host's root"
mount -t virtiofs out /vmout || echo "VM: cannot mount the output directory"
mount -t tmpfs -o mode=0755 tmpfs /newroot/run
mkdir -p /newroot/run/vmout
mount --bind /vmout /newroot/run/vmout
for d in proc sys dev; do mount --move /$d /newroot/$d; done
echo "VM: booted $(uname -r)"
chroot /newroot /bin/sh -c 'sh /run/vmout/guest.sh > /run/vmout/log 2>&1; echo $? > /run/vmout/rc'
echo "VM: done"
poweroff -f
"""

# What guest.sh does before the caller's script: the file systems a run needs, and the
# build directory copied into memory at its own path (its programs and test output must be
# on a writable file system whose device and inode numbers /proc/PID/maps agrees with).
# The source tree and the build are set aside before /tmp gets its own tmpfs, and put back
# at their paths after, so that a checkout under /tmp works too.
PRELUDE = """set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PYTHONDONTWRITEBYTECODE=1 HOME=/tmp
mkdir -p /run/src /run/build
mount --bind {src} /run/src
tar -C {build} --exclude=./test-out --exclude=./viewer -cf - . | tar -C /run/build -xf -
mount -t tmpfs -o mode=1777 tmpfs /tmp
mkdir -p {src} 2>/dev/null; mount --bind /run/src {src}
mkdir -p /dev/shm && mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mkdir -p /dev/pts && mount -t devpts devpts /dev/pts
mount -t tracefs nodev /sys/kernel/tracing
mount -t debugfs nodev /sys/kernel/debug 2>/dev/null || true
mount -t bpf bpf /sys/fs/bpf
hostname {hostname}
ip link set lo up  # MPI's launchers talk over loopback
mkdir -p {build} 2>/dev/null; mount --bind /run/build {build}
mkdir -p {build}/test-out
cd {build}
"""


def missing():
    """What this machine lacks to boot a kernel here (a list of reasons, empty when none)."""
    why = []
    if os.geteuid() != 0:
        why.append("not root (virtiofsd, the kernel's BPF)")
    for exe, pkg in ((QEMU, "qemu-system-x86"), (VIRTIOFSD, "qemu-system-x86"),
                     (BUSYBOX, "busybox-static"), ("cpio", "cpio"), ("unshare", "util-linux"),
                     ("apt-get", "apt")):
        if not shutil.which(exe):
            why.append("no %s (package %s)" % (exe, pkg))
    return why


def _newest(series):
    """The newest package of a series that apt knows: (package name, kernel release)."""
    r = subprocess.run(["apt-cache", "search", "--names-only", "^linux-image-"],
                       capture_output=True, text=True)
    best = None
    for line in r.stdout.splitlines():
        name = line.split(" ", 1)[0]
        m = SERIES[series].match(name)
        if m:
            key = [int(x) for x in re.findall(r"\d+", m.group(1))]
            if best is None or key > best[0]:
                best = (key, name, name[len("linux-image-"):])
    if not best:
        raise RuntimeError("apt knows no %s package (apt-get update?)" % SERIES[series].pattern)
    return best[1], best[2]


def kernel(series, cache):
    """The kernel of a series, fetched once into cache (apt-get download, dpkg-deb -x):
    a dict with release, vmlinuz and the modules directory. Raises RuntimeError."""
    os.makedirs(cache, exist_ok=True)
    pkg, release = _newest(series)
    root = os.path.join(cache, release)
    vmlinuz = os.path.join(root, "boot", "vmlinuz-" + release)
    if not os.path.exists(vmlinuz):
        debs = glob.glob(os.path.join(cache, pkg + "_*.deb"))
        if not debs:
            for attempt in range(2):
                r = subprocess.run(["apt-get", "download", pkg], cwd=cache,
                                   capture_output=True, text=True)
                if r.returncode == 0:
                    break
                subprocess.run(["apt-get", "update", "-qq"], capture_output=True)
            debs = glob.glob(os.path.join(cache, pkg + "_*.deb"))
            if not debs:
                raise RuntimeError("apt-get download %s: %s" % (pkg, r.stderr.strip()))
        subprocess.run(["rm", "-rf", root], check=True)
        subprocess.run(["dpkg-deb", "-x", debs[0], root], check=True)
    return {"release": release, "vmlinuz": vmlinuz,
            "modules": os.path.join(root, "lib", "modules", release, "kernel")}


def initramfs(k, path):
    """Writes the initramfs for kernel k (kernel()'s dict) to path: busybox, INIT, and the
    virtiofs modules (decompressed where the package ships them as .ko.xz)."""
    tree = path + ".d"
    subprocess.run(["rm", "-rf", tree], check=True)
    for d in ("bin", "mod", "proc", "sys", "dev"):
        os.makedirs(os.path.join(tree, d))
    shutil.copy(BUSYBOX, os.path.join(tree, "bin", "busybox"))
    with open(os.path.join(tree, "init"), "w") as f:
        f.write(INIT)
    os.chmod(os.path.join(tree, "init"), 0o755)
    names = []
    for m in MODULES:
        base = os.path.join(k["modules"], m)
        name = os.path.basename(m)
        if os.path.exists(base + ".ko"):
            shutil.copy(base + ".ko", os.path.join(tree, "mod", name + ".ko"))
        elif os.path.exists(base + ".ko.xz"):
            with lzma.open(base + ".ko.xz") as src, \
                    open(os.path.join(tree, "mod", name + ".ko"), "wb") as dst:
                shutil.copyfileobj(src, dst)
        else:
            continue  # built in
        names.append(name)
    with open(os.path.join(tree, "modules.list"), "w") as f:
        f.write("\n".join(names) + "\n")
    files = subprocess.run(["find", "."], cwd=tree, capture_output=True, text=True,
                           check=True).stdout
    with open(path, "wb") as out:
        cp = subprocess.Popen(["cpio", "-o", "-H", "newc", "--quiet"], cwd=tree,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        gz = subprocess.Popen(["gzip", "-1"], stdin=cp.stdout, stdout=out)
        cp.stdout.close()
        cp.communicate(files.encode())
        gz.wait()
    subprocess.run(["rm", "-rf", tree], check=True)


def _socket_ready(path, proc, timeout=30):
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if proc.poll() is not None or time.monotonic() > deadline:
            return False
        time.sleep(0.05)  # polling for a file another process makes: no event to wait on
    return True


def boot(k, workdir, script, build, hostname="vm", mem_mb=3072, timeout=3600):
    """Boots kernel k with two CPUs and mem_mb of memory, and runs `script` (shell text)
    in the guest as root, from the build directory `build` (copied into guest memory at
    its own path). workdir (made empty) receives the guest's files: log (the script's
    output), rc, and whatever the script writes to /run/vmout; serial.log is the console.
    Returns (script's exit code or None when it did not finish, the log's text)."""
    subprocess.run(["rm", "-rf", workdir], check=True)
    out = os.path.join(workdir, "out")
    os.makedirs(out)
    with open(os.path.join(out, "guest.sh"), "w") as f:
        f.write(PRELUDE.format(hostname=shlex.quote(hostname), build=shlex.quote(build),
                               src=shlex.quote(SRC)))
        f.write(script)
    initrd = os.path.join(workdir, "initrd.gz")
    initramfs(k, initrd)
    ro = os.path.join(workdir, "ro")
    os.makedirs(ro)
    root_sock = os.path.join(workdir, "root.sock")
    out_sock = os.path.join(workdir, "out.sock")
    # the host's root, read-only: a bind mount in a mount namespace of virtiofsd's own
    share = ("mount --bind / %s && mount -o remount,bind,ro %s && exec %s --socket-path=%s "
             "-o source=%s -o cache=always -o sandbox=chroot" %
             (ro, ro, VIRTIOFSD, root_sock, ro))
    logs = open(os.path.join(workdir, "virtiofsd.log"), "w")
    procs = [subprocess.Popen(["unshare", "-m", "sh", "-c", share], stdout=logs,
                              stderr=subprocess.STDOUT, start_new_session=True),
             subprocess.Popen([VIRTIOFSD, "--socket-path=" + out_sock, "-o", "source=" + out,
                               "-o", "cache=none", "-o", "sandbox=chroot"], stdout=logs,
                              stderr=subprocess.STDOUT, start_new_session=True)]
    try:
        if not (_socket_ready(root_sock, procs[0]) and _socket_ready(out_sock, procs[1])):
            raise RuntimeError("virtiofsd did not start: see %s" % logs.name)
        # one host thread for both vCPUs: with a thread each (MTTCG), a CPU could run a
        # stale translation of kernel text another CPU had just patched with int3 (seen:
        # 6.12 oopsed in syscall_exit_to_user_mode_prepare while a test attached probes)
        cmd = [QEMU, "-accel", "tcg,thread=single", "-smp", "2", "-m", str(mem_mb), "-nographic",
               "-no-reboot", "-object",
               "memory-backend-memfd,id=mem,size=%dM,share=on" % mem_mb,
               "-numa", "node,memdev=mem",
               "-chardev", "socket,id=c1,path=" + root_sock,
               "-device", "vhost-user-fs-pci,chardev=c1,tag=root",
               "-chardev", "socket,id=c2,path=" + out_sock,
               "-device", "vhost-user-fs-pci,chardev=c2,tag=out",
               "-kernel", k["vmlinuz"], "-initrd", initrd,
               "-append", "console=ttyS0 quiet panic=-1"]
        with open(os.path.join(workdir, "serial.log"), "w") as serial:
            q = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=serial,
                                 stderr=subprocess.STDOUT, start_new_session=True)
            try:
                q.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(q.pid, signal.SIGKILL)
                q.wait()
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
            p.wait()
        logs.close()
    rc = None
    try:
        with open(os.path.join(out, "rc")) as f:
            rc = int(f.read().strip())
    except (OSError, ValueError):
        pass
    try:
        with open(os.path.join(out, "log"), errors="replace") as f:
            log = f.read()
    except OSError:
        log = ""
    return rc, log
