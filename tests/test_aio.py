"""test_aio.py: the AIO layer (probes/aio.yaml, bpf/aio.bpf.c) against fio's own account.
fio with --ioengine=libaio and --ioengine=io_uring, a sequential write job then a read
job, 4 KiB blocks, 8 MiB, iodepth 8, on a small file in the test directory: per file and
direction, the trace's AIO operations must be exactly fio's JSON total_ios, their bytes
moved (ret) and asked (count) exactly its io_bytes, their offsets each block once. Under
io_posix.lua (the default script: the layer is in it), io_all.lua and io_syscalls.lua;
the last also lists every AIO and io_uring system call fio made, and nests each io_uring
operation in the io_uring_enter that submitted it when that call was still open at the
completion (else the operation is "async"). Also: fsync every 16 writes against fio's
sync total_ios; io_uring's fixed files and buffers, vectored reads and SQPOLL; two jobs
(processes) on one file; profile mode's counters; and tests/progs/prog_aio.c, the Linux
AIO commands fio does not make (vectored, fsync, fdatasync, io_pgetevents, a failure, an
iocb io_submit refused), each with exact offset, count, ret and errno, with each pair of
syscall programs, Linux AIO's programs loaded but not linked (tail-called).
An engine this machine cannot run (io_uring disabled by sysctl, libaio missing) is a
loud SKIP of its part."""
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import dctest  # noqa: E402
from dctest import check, equal  # noqa: E402

dctest.need_root()
BS = 4096
SIZE = 8 << 20
DEPTH = 8
READS = {"io_uring_read", "io_uring_readv", "io_uring_read_fixed", "io_uring_readv_fixed",
         "aio_pread", "aio_preadv"}
WRITES = {"io_uring_write", "io_uring_writev", "io_uring_write_fixed",
          "io_uring_writev_fixed", "aio_pwrite", "aio_pwritev"}
# what each engine's system calls are in the SYSCALL layer (fio 3.33: libaio sets up a
# context, submits, reaps and destroys it; io_uring sets up a ring, probes its opcodes
# with io_uring_register, and enters it to submit and reap)
ENGINE_SYSCALLS = {
    "libaio": {"sys_io_setup", "sys_io_submit", "sys_io_getevents", "sys_io_destroy"},
    "io_uring": {"sys_io_uring_setup", "sys_io_uring_enter", "sys_io_uring_register"},
}

if not shutil.which("fio"):
    print("SKIP: fio is not installed (scripts/setup.sh installs it): test_aio.py NOT TESTED",
          flush=True)
    sys.exit(77)


def fio_args(engine, rw, path, out):
    return ["fio", "--name=" + rw, "--filename=" + path, "--rw=" + rw, "--bs=%d" % BS,
            "--size=%d" % SIZE, "--ioengine=" + engine, "--iodepth=%d" % DEPTH, "--direct=0",
            "--output-format=json", "--output=" + out]


def engine_usable(engine, d):
    """None when fio can run `engine` here, else why not (said as a SKIP)."""
    if engine == "io_uring":
        try:
            with open("/proc/sys/kernel/io_uring_disabled") as f:
                if f.read().strip() == "2":
                    return "io_uring is disabled (kernel.io_uring_disabled = 2)"
        except OSError:
            pass
    probe = os.path.join(d, "probe-" + engine)
    r = subprocess.run(["fio", "--name=probe", "--filename=" + probe, "--rw=write",
                        "--bs=4k", "--size=4k", "--ioengine=" + engine,
                        "--output-format=json"], capture_output=True, text=True)
    os.unlink(probe) if os.path.exists(probe) else None
    if r.returncode != 0:
        return "fio --ioengine=%s fails here (%s)" % (engine, (r.stderr or r.stdout).strip()[:300])
    return None


def traced_fio(d, name, script, engine, rw, path, extra=(), fio=()):
    """Runs one fio job under `script` (datacrumbs options extra, fio options fio);
    returns (events, fio's job JSON)."""
    out = os.path.join(d, name + ".json")
    tdir = os.path.join(d, name)
    os.makedirs(tdir)
    r = dctest.run_dc(["run", "-o", tdir] + list(extra) + [script, "--"] +
                      fio_args(engine, rw, path, out) + list(fio))
    equal(r.returncode, 0, "%s: %s fio %s exit status (stderr: %s)"
          % (name, script, rw, r.stderr.strip()[-2000:]))
    trace = dctest.find_trace(tdir)
    dctest.check_pfw(trace)
    events, _, _ = dctest.read_trace(trace)
    with open(out) as f:
        job = json.load(f)["jobs"][0]
    return events, job


def direction_ops(events, path, names):
    return [e for e in dctest.calls(events, "AIO") if e["path"] == path and e["name"] in names]


def against_fio(what, events, job, path, rw, fixed=False):
    """The trace's operations on path, per direction, against fio's JSON: exact. fixed: the
    job's files are io_uring fixed files (fd -1, named by their inode)."""
    for ddir, names in (("read", READS), ("write", WRITES)):
        ops = direction_ops(events, path, names)
        want_ios, want_bytes = job[ddir]["total_ios"], job[ddir]["io_bytes"]
        equal(len(ops), want_ios, "%s: %s operations on %s = fio's %s total_ios"
              % (what, ddir, os.path.basename(path), ddir))
        equal(sum(e["args"].get("ret", 0) for e in ops), want_bytes,
              "%s: %s bytes moved (ret) = fio's %s io_bytes" % (what, ddir, ddir))
        equal(sum(e["args"].get("count", 0) for e in ops), want_bytes,
              "%s: %s bytes asked (count) = fio's %s io_bytes" % (what, ddir, ddir))
        if ddir == rw:
            print("%s: fio %s total_ios %d io_bytes %d; trace %d operations, ret %d, count %d"
                  % (what, ddir, want_ios, want_bytes, len(ops),
                     sum(e["args"].get("ret", 0) for e in ops),
                     sum(e["args"].get("count", 0) for e in ops)), flush=True)
            equal(want_ios, SIZE // BS, "%s: fio did %d %s I/Os" % (what, SIZE // BS, ddir))
            equal(sorted(e["args"]["offset"] for e in ops), list(range(0, SIZE, BS)),
                  "%s: each 4 KiB block's offset once" % what)
            check(all((e["args"].get("fd") == -1) == fixed and e["args"].get("ino", 0) > 0
                      for e in ops), "%s: every operation has its %s and inode"
                  % (what, "fixed file (fd -1)" if fixed else "fd"))
            check(all("errno" not in e["args"] for e in ops), "%s: no operation failed" % what)


d = dctest.workdir("aio")
with open("/sys/kernel/btf/vmlinux", "rb") as f:
    # the tracepoint the io_uring part needs (Linux 6.2: 6.1 has io_uring_submit_sqe)
    HAS_URING_TP = b"\0btf_trace_io_uring_submit_req\0" in f.read()
for engine in ("libaio", "io_uring"):
    why = engine_usable(engine, d)
    if why:
        print("SKIP: %s: the %s part of test_aio.py NOT TESTED" % (why, engine), flush=True)
        continue
    if engine == "io_uring" and not HAS_URING_TP:
        # the layer's io_uring part is refused alone, with its reason; the run goes on
        tdir = os.path.join(d, "io_uring-refused")
        os.makedirs(tdir)
        r = dctest.run_dc(["run", "-o", tdir, "io_posix.lua", "--"] +
                          fio_args(engine, "write", os.path.join(d, "f-refused.dat"),
                                   os.path.join(d, "refused.json")))
        equal(r.returncode, 0, "io_uring refused: fio exit status (%s)" % r.stderr[-500:])
        check(re.search(r"^datacrumbs: warning: cannot load or attach io_uring's tracepoints "
                        r"\(io_uring_submit_req, io_uring_complete: .*\): io_uring "
                        r"operations are not traced, Linux AIO's are$", r.stderr, re.M),
              "io_uring refused: one warning with its reason: %r" % r.stderr)
        dctest.check_pfw(dctest.find_trace(tdir))
        print("NOTE: this kernel has no io_uring_submit_req tracepoint (Linux < 6.2): the "
              "io_uring part checked its refusal only", flush=True)
        continue
    path = os.path.join(d, "f-%s.dat" % engine)
    # 1. the default script: a write job creates the file, a read job reads it back
    for rw in ("write", "read"):
        name = "%s-posix-%s" % (engine, rw)
        events, job = traced_fio(d, name, "io_posix.lua", engine, rw, path)
        against_fio(name, events, job, path, rw)
        other = [e for e in dctest.calls(events, "AIO") if e["path"] not in (path, None)]
        equal(other, [], "%s: no AIO operation on another file" % name)
    # 2. io_all.lua: the same layer in the nested script
    name = "%s-all-read" % engine
    events, job = traced_fio(d, name, "io_all.lua", engine, "read", path)
    against_fio(name, events, job, path, "read")
    # 3. io_syscalls.lua: the engine's system calls, and the operations nested in them
    name = "%s-syscalls-write" % engine
    events, job = traced_fio(d, name, "io_syscalls.lua", engine, "write", path)
    against_fio(name, events, job, path, "write")
    sysnames = {e["name"] for e in dctest.calls(events, "SYSCALL")}
    for s in sorted(ENGINE_SYSCALLS[engine]):
        check(s in sysnames, "%s: the SYSCALL layer has %s" % (name, s))
    byid = {(e["pid"], e["id"]): e for e in dctest.calls(events, "SYSCALL")}
    ops = direction_ops(events, path, WRITES)
    submitter = "sys_io_uring_enter" if engine == "io_uring" else "sys_io_submit"
    nested = [e for e in ops if e["args"]["p_idx"] != -1]
    check(all(byid.get((e["pid"], e["args"]["p_idx"]), {}).get("name") == submitter
              for e in nested), "%s: a nested operation's parent is its %s" % (name, submitter))
    check(all(e["args"].get("async") == 1 for e in ops if e["args"]["p_idx"] == -1),
          "%s: an operation not nested completed after its submitter returned (async)" % name)
    if engine == "libaio":  # reaped by io_getevents, always after io_submit returned
        equal(len(nested), 0, "%s: no libaio operation nested in its io_submit" % name)
    else:
        print("%s: %d of %d operations completed inside their io_uring_enter"
              % (name, len(nested), len(ops)), flush=True)
    # 4. fsync every 16 writes: io_uring's are operations (IORING_OP_FSYNC), fio's libaio
    # engine makes its own fsync(2) (a POSIX event); either way fio's sync total_ios
    name = "%s-posix-fsync" % engine
    events, job = traced_fio(d, name, "io_posix.lua", engine, "write", path, fio=["--fsync=16"])
    against_fio(name, events, job, path, "write")
    if engine == "io_uring":
        syncs = direction_ops(events, path, {"io_uring_fsync", "io_uring_fdatasync"})
        check(all(e["args"].get("ret") == 0 for e in syncs), "%s: every fsync returned 0" % name)
    else:
        syncs = [e for e in dctest.calls(events, "POSIX") if e["name"] == "fsync" and
                 e["path"] == path]
    equal(len(syncs), job["sync"]["total_ios"], "%s: fsyncs = fio's sync total_ios" % name)
    print("%s: fio sync total_ios %d; trace %d" % (name, job["sync"]["total_ios"], len(syncs)),
          flush=True)
    # 5. io_uring's other ways: fixed files and buffers (fd -1: the file by its inode),
    # vectored reads (count the iovec sum), a kernel thread submitting (SQPOLL)
    for opts in (["--registerfiles=1", "--fixedbufs=1"], ["--nonvectored=0"],
                 ["--sqthread_poll=1"]) if engine == "io_uring" else ():
        name = "io_uring-read" + "".join("-" + o.split("=")[0][2:] for o in opts)
        events, job = traced_fio(d, name, "io_posix.lua", engine, "read", path, fio=opts)
        against_fio(name, events, job, path, "read", fixed="--registerfiles=1" in opts or
                    "--sqthread_poll=1" in opts)
        want = {"--fixedbufs=1": "io_uring_read_fixed", "--nonvectored=0": "io_uring_readv",
                "--sqthread_poll=1": "io_uring_read"}[opts[-1]]
        equal({e["name"] for e in direction_ops(events, path, READS)}, {want},
              "%s: the operations are %s" % (name, want))
    # 6. two fio jobs (two processes) writing one file: the file's operations are both jobs',
    # each process's are one job's
    name = "%s-posix-2jobs" % engine
    out = os.path.join(d, name + ".json")
    tdir = os.path.join(d, name)
    os.makedirs(tdir)
    r = dctest.run_dc(["run", "-o", tdir, "io_posix.lua", "--"] +
                      fio_args(engine, "write", path, out) + ["--numjobs=2"])
    equal(r.returncode, 0, "%s: exit status (stderr: %s)" % (name, r.stderr.strip()[-2000:]))
    trace = dctest.find_trace(tdir)
    dctest.check_pfw(trace)
    events, _, _ = dctest.read_trace(trace)
    with open(out) as f:
        jobs = json.load(f)["jobs"]
    ops = direction_ops(events, path, WRITES)
    per_pid = {}
    for e in ops:
        per_pid.setdefault(e["pid"], []).append(e)
    equal(sorted((len(v), sum(e["args"]["ret"] for e in v)) for v in per_pid.values()),
          sorted((j["write"]["total_ios"], j["write"]["io_bytes"]) for j in jobs),
          "%s: each process's operations and bytes = one fio job's total_ios, io_bytes" % name)
    equal(len(ops), sum(j["write"]["total_ios"] for j in jobs),
          "%s: the file's write operations = both jobs' total_ios" % name)
    print("%s: fio jobs %s; trace per process %s" % (
        name, sorted((j["write"]["total_ios"], j["write"]["io_bytes"]) for j in jobs),
        sorted((len(v), sum(e["args"]["ret"] for e in v)) for v in per_pid.values())),
        flush=True)
    # 7. profile mode: the counters of the operations add up to fio's figures
    name = "%s-profile-read" % engine
    events, job = traced_fio(d, name, "io_posix.lua", engine, "read", path,
                             ["--mode", "profile", "--interval", "10s"])
    cnt = [e for e in events if e.get("ph") == "C" and e["cat"] == "AIO" and
           e["name"] in READS and e["path"] == path]
    equal(sum(e["args"]["count"] for e in cnt), job["read"]["total_ios"],
          "%s: counted read operations = fio's total_ios" % name)
    equal(sum(e["args"].get("size_sum", 0) for e in cnt), job["read"]["io_bytes"],
          "%s: counted bytes asked = fio's io_bytes" % name)

# 8. the Linux AIO commands fio does not make, by raw system calls (tests/progs/prog_aio.c),
# with each pair of syscall programs (DATACRUMBS_NO_RDONLY_CAST: the pair of probe reads,
# for kernels before 6.2). The traced command first lists the BPF links and programs the
# tracer (its parent) holds: Linux AIO's sys_enter/sys_exit programs are loaded but have
# no link (dc_sys_enter/dc_sys_exit tail-call them for the AIO system calls only).


# the traced command's prologue: the tracer's (its parent's) programs and links, as
# bpftool prints them, one JSON object a line, read while they are loaded
LIST_BPF = ('for k in prog link; do for id in $(sed -n "s/^${k}_id:[[:space:]]*//p" '
            '/proc/$PPID/fdinfo/* | sort -un); do bpftool -j $k show id $id; echo; done '
            '> "$2.$k"; done; exec "$0" "$1"')


def linked_names(base):
    """(names of the programs the tracer's links run, names of the programs it holds),
    from the files LIST_BPF wrote (base.prog, base.link)."""
    def objs(path):
        # an id freed between the fdinfo listing and its show prints {"error": ...}: the
        # session check's programs and links, which its settle thread closes while the
        # command runs (core/features.c), are not the tracer's to hold
        with open(path) as f:
            return [o for o in (json.loads(line) for line in f if line.strip())
                    if "error" not in o]
    names = {p["id"]: p.get("name") for p in objs(base + ".prog")}
    return {names.get(lk["prog_id"]) for lk in objs(base + ".link")}, set(names.values())


# the loader's default pair: the BTF one where the kernel's BTF has the kfunc
# bpf_rdonly_cast (Linux 6.2; its name in the BTF's strings), else the probe-read one
try:
    with open("/sys/kernel/btf/vmlinux", "rb") as f:
        HAS_CAST = b"\0bpf_rdonly_cast\0" in f.read()
except OSError:
    HAS_CAST = False
if not HAS_CAST:
    print("NOTE: no bpf_rdonly_cast in this kernel's BTF: both runs use the probe-read pair",
          flush=True)
DEFAULT_PAIR = ("dc_sys_enter", "dc_sys_exit") if HAS_CAST else ("dc_sys_enter_c",
                                                                  "dc_sys_exit_c")
for variant, env, pair in (("", {}, DEFAULT_PAIR),
                           (" (probe-read pair)", {"DATACRUMBS_NO_RDONLY_CAST": "1"},
                            ("dc_sys_enter_c", "dc_sys_exit_c"))):
    d2 = dctest.workdir("aio-raw" + ("-c" if env else ""))
    ids = os.path.join(d2, "ids")
    r = dctest.run_dc(["run", "-o", d2, "io_syscalls.lua", "--", "sh", "-c", LIST_BPF,
                       os.environ["PROG_AIO"], d2, ids], env=dict(os.environ, **env))
    equal(r.returncode, 0, "prog_aio%s exit status (its results as documented; stderr: %s)"
          % (variant, r.stderr.strip()[-2000:]))
    linked, held = linked_names(ids)
    check(set(pair) <= linked and not {"dc_aio_enter", "dc_aio_exit"} & linked,
          "prog_aio%s: the tracer's links run %s, not Linux AIO's programs (links: %s)"
          % (variant, " and ".join(pair), sorted(n for n in linked if n)))
    check({"dc_aio_enter", "dc_aio_exit"} <= held,
          "prog_aio%s: Linux AIO's programs are loaded (held: %s)"
          % (variant, sorted(n for n in held if n)))
    trace = dctest.find_trace(d2)
    dctest.check_pfw(trace)
    events, _, _ = dctest.read_trace(trace)
    f = os.path.join(d2, "aio.bin")
    got = [(e["name"], e["args"].get("offset"), e["args"].get("count"), e["args"].get("ret"),
            e["args"].get("errno"), e["args"]["aio_data"], e["path"])
           for e in sorted(dctest.calls(events, "AIO"), key=lambda e: e["args"]["aio_data"])]
    equal(got, [("aio_pwritev", 4096, 6000, 6000, None, 1, f),
                ("aio_fdsync", None, None, 0, None, 2, f),
                ("aio_fsync", None, None, 0, None, 3, f),
                ("aio_preadv", 4096, 8192, 6000, None, 4, f),
                ("aio_pread", 1 << 20, 100, 0, None, 5, f),
                ("aio_pread", 0, 100, -1, 14, 6, f),
                ("aio_pwrite", 0, 10, 10, None, 7, f),
                ("aio_pwrite", 100, 20, 20, None, 9, f),    # one iocb submitted twice before
                ("aio_pwrite", 200, 30, 30, None, 10, f)],  # its first was reaped
          "prog_aio%s: each operation (name, offset, count, ret, errno, aio_data, file); the "
          "iocb io_submit refused is none; an iocb submitted again in flight is two operations"
          % variant)
    end = [e for e in events if e.get("name") == "end"][0]
    equal(end["args"]["lost"], 0, "prog_aio%s: nothing lost" % variant)
    sysnames = [e["name"] for e in dctest.calls(events, "SYSCALL")
                if e["name"].startswith("sys_io_")]
    equal(sorted(set(sysnames)), ["sys_io_destroy", "sys_io_getevents", "sys_io_pgetevents",
                                  "sys_io_setup", "sys_io_submit"],
          "prog_aio%s: its AIO system calls" % variant)
    equal(sysnames.count("sys_io_submit"), 9, "prog_aio%s: 9 io_submit calls" % variant)
dctest.finish()
