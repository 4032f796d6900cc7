"""test_shards.py: the sharded ring buffers and their merge (core/shards.c): two threads
of tests/progs/prog_migrate.c hop between CPUs at every write(2), so each thread's records
land in different ring buffers; each thread's writes must come out whole and in the order
it made them (count 1, 2, 3, ...), its call ids growing in blocks of 64, with the end
record's shards and lost_by_shard, for one
ring buffer read by the main thread, two read by one drain thread, and two by two."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import dctest  # noqa: E402
from dctest import check, equal  # noqa: E402

dctest.need_root()
PROG = os.environ["PROG_MIGRATE"]
N = 3000
CPUS = os.cpu_count() or 1
SCRIPT = os.path.join(dctest.workdir("shards-script"), "writes.lua")
with open(SCRIPT, "w") as f:
    f.write('local dc = require "datacrumbs"\n'
            'dc.probe { layer = "posix", functions = { "write" } }\n')

for shards, threads in ((1, 0), (2, 1), (2, 2)):
    name = "%d-%d" % (shards, threads)
    d = dctest.workdir("shards-" + name)
    r = dctest.run_dc(["run", "--shards", str(shards), "--drain-threads", str(threads),
                       "-o", d, SCRIPT, "--", PROG, str(N)])
    equal(r.returncode, 0, "%s: prog_migrate exit status (stderr: %s)" % (name, r.stderr.strip()))
    trace = dctest.find_trace(d)
    dctest.check_pfw(trace)
    events, _, _ = dctest.read_trace(trace)
    end = [e for e in events if e["name"] == "end" and e["cat"] == "datacrumbs"]
    equal(len(end), 1, "%s: one end record" % name)
    a = end[0]["args"]
    want_shards = min(shards, CPUS)
    equal(a["shards"], want_shards, "%s: end record's shards" % name)
    by = [int(x) for x in a["lost_by_shard"].split(",")]
    equal(len(by), want_shards, "%s: lost_by_shard has one count per shard" % name)
    equal(sum(by), a["lost"], "%s: lost_by_shard adds up to lost" % name)
    equal(a["lost"], 0, "%s: nothing lost (%d writes)" % (name, 2 * N + 1))
    writes = [e for e in dctest.calls(events) if e["name"] == "write"
              and e["path"] == "/dev/null"]
    tids = sorted({e["tid"] for e in writes if e["tid"] != e["pid"]})
    equal(len(tids), 2, "%s: writes of two threads besides the main one" % name)
    for tid in tids:
        counts = [e["args"]["count"] for e in writes if e["tid"] == tid]
        equal(counts, [1 + i % 4000 for i in range(N)],
              "%s: thread %d's writes, whole and in its order" % (name, tid))
        # call ids (bpf/datacrumbs.h DC_ID_BLOCK): a thread takes 64 of its process's
        # ids at once, so its ids grow
        ids = [e["id"] for e in writes if e["tid"] == tid]
        check(all(a < b for a, b in zip(ids, ids[1:])), "%s: thread %d's ids grow" % (name, tid))
    allids = [e["id"] for e in writes]
    equal(len(set(allids)), 2 * N + 1, "%s: every write's id unique in its process" % name)
    owner = {}
    for e in writes:  # each block of 64 ids, 1-64, 65-128, ..., is one thread's
        owner.setdefault((e["id"] - 1) // 64, set()).add(e["tid"])
    equal([b for b, t in owner.items() if len(t) > 1], [],
          "%s: no block of 64 ids shared by two threads" % name)
    main = [e["args"]["count"] for e in writes if e["tid"] == e["pid"]]
    equal(main, [4096], "%s: the main thread's one write, after the threads'" % name)
    check(writes[-1]["tid"] == writes[-1]["pid"],
          "%s: the main thread's write (after joining both) is the last in the file" % name)

# deferral (core/shards.h dc_shards_defer, DATACRUMBS_DEFER=MiB) of a run decoding live
# (--no-spool): while the command runs, the merge (datacrumbs' main thread, the command's
# parent) is at nice 19 with drain threads, at its own (ours) without them, with
# DATACRUMBS_DEFER=0 or unset (the default); a spooled run has nothing to defer (its merge
# hands on loads and execs alone): its own. Field 19 of /proc/PID/stat is the nice value
# (proc(5))
own = str(os.getpriority(os.PRIO_PROCESS, 0))
for threads, defer, live, want in ((1, "64", 1, "19"), (0, "64", 1, own), (1, "0", 1, own),
                                   (1, None, 1, own), (1, "64", 0, own)):
    name = "nice, %d drain threads, DATACRUMBS_DEFER=%s%s" % (threads, defer,
                                                            ", --no-spool" if live else "")
    d = dctest.workdir("shards-nice")
    env = dict(os.environ)
    env.pop("DATACRUMBS_DEFER", None)
    if defer is not None:
        env["DATACRUMBS_DEFER"] = defer
    r = dctest.run_dc(["run", "--drain-threads", str(threads), "-o", d] +
                      (["--no-spool"] if live else []) + [SCRIPT, "--",
                      "/bin/sh", "-c", "cut -d' ' -f19 /proc/$PPID/stat"], env=env)
    equal(r.returncode, 0, "%s: exit status (stderr: %s)" % (name, r.stderr.strip()))
    equal(r.stdout.strip(), want, "%s: the merge's nice value seen by the command" % name)
    dctest.check_pfw(dctest.find_trace(d))

# bad values: a one-line error naming the option, exit 2
for opt, v in (("--shards", "0"), ("--shards", "65"), ("--drain-threads", "-1"),
               ("--drain-threads", "x")):
    r = dctest.run_dc(["run", opt, v, SCRIPT, "--", PROG, "1"])
    equal(r.returncode, 2, "%s %s: usage error exit status" % (opt, v))
    check(opt in r.stderr and r.stderr.count("\n") == 1,
          "%s %s: one line naming the option: %r" % (opt, v, r.stderr))
dctest.finish()
