"""test_kernel.py: the PAGE_CACHE and BLOCK layers (io_pagecache.lua, io_block.lua,
io_kernel.lua). A file read twice after dropping the caches: the first read brings its
pages into the cache, the second none. Writes made durable with fsync, and O_DIRECT
writes: block requests whose bytes add up to at least the data written."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import dctest  # noqa: E402
from dctest import check, equal  # noqa: E402

dctest.need_root()
PAGE = 4096
REQ_OP_READ, REQ_OP_WRITE = 0, 1


def traced(name):
    d = dctest.workdir("kern-" + name)
    data = os.path.join(d, "data")
    os.makedirs(data)
    return d, data


def run(d, data, script, shell, setup=None):
    if setup:
        setup(data)
    r = dctest.run_dc(["run", "-o", d, script, "--", "sh", "-c", shell.replace("DATA", data)])
    equal(r.returncode, 0, "%s exit status (stderr: %s)" % (script, r.stderr.strip()))
    trace = dctest.find_trace(d)
    dctest.check_pfw(trace)
    events, _, _ = dctest.read_trace(trace)
    return events


def pids_in_order(events, cat):
    """Process ids of the command's children, in the order their first event appears."""
    out = []
    for e in dctest.calls(events, cat):
        if e["pid"] not in out:
            out.append(e["pid"])
    return out


# 1. page cache: 1 MiB file, caches dropped, read by two cats one after the other
SIZE = 256 * PAGE


def make_cold_file(data):
    with open(os.path.join(data, "f.bin"), "wb") as f:
        f.write(os.urandom(SIZE))
    subprocess.run(["sync"], check=True)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


d, data = traced("pc")
events = run(d, data, "io_pagecache.lua", "cat DATA/f.bin >/dev/null; cat DATA/f.bin >/dev/null",
             make_cold_file)
f = os.path.join(data, "f.bin")
reads = [e for e in dctest.calls(events, "SYSCALL") if e["name"] == "sys_read" and e["path"] == f]
cats = []
for e in reads:
    if e["pid"] not in cats:
        cats.append(e["pid"])
equal(len(cats), 2, "two cat processes read f.bin")
added = {p: sum(e["args"]["pages"] for e in dctest.calls(events, "PAGE_CACHE")
                if e["name"] == "mm_filemap_add_to_page_cache" and e["path"] == f and e["pid"] == p)
         for p in cats}
equal([added.get(p) for p in cats], [SIZE // PAGE, 0],
      "pages of f.bin added to the cache: first cat all 256, second none")
equal(sum(e["args"]["ret"] for e in reads if e["pid"] == cats[0]), SIZE, "first cat read 1 MiB")
equal(sum(e["args"]["ret"] for e in reads if e["pid"] == cats[1]), SIZE, "second cat read 1 MiB")
looked = [e for e in dctest.calls(events, "PAGE_CACHE")
          if e["name"] == "mm_filemap_get_pages" and e["path"] == f]
check(all(p in {e["pid"] for e in looked} for p in cats), "both cats looked pages up")
# every page-cache event on f.bin nests under one of its cat's read syscalls
byid = {(e["pid"], e["id"]): e for e in reads}
pcf = [e for e in dctest.calls(events, "PAGE_CACHE") if e["path"] == f]
check(len(pcf) > 0, "page cache events on f.bin")
for e in pcf:
    parent = byid.get((e["pid"], e["args"]["p_idx"]))
    check(parent is not None and e["args"]["level"] == parent["args"]["level"] + 1,
          "%s (pid %d) nests under a sys_read of f.bin" % (e["name"], e["pid"]))

# 2. block: 1 MiB written with fsync, 512 KiB with O_DIRECT
d, data = traced("blk")
events = run(d, data, "io_block.lua",
             "dd if=/dev/zero of=DATA/a bs=64k count=16 conv=fsync status=none;"
             " dd if=/dev/zero of=DATA/b bs=64k count=8 oflag=direct status=none")
dds = pids_in_order([e for e in events if e.get("cat") == "SYSCALL" and e["name"] == "sys_write"
                     and e["path"] and e["path"].startswith(data)], "SYSCALL")
equal(len(dds), 2, "two dd processes wrote")
blk = dctest.calls(events, "BLOCK")
written = {p: sum(e["args"]["size"] for e in blk if e["pid"] == p and e["args"]["op"] == REQ_OP_WRITE)
           for p in dds}
check(written.get(dds[0], 0) >= 16 * 65536,
      "fsync'd dd: block writes %r >= 1048576 bytes" % written.get(dds[0]))
check(written.get(dds[1], 0) >= 8 * 65536,
      "O_DIRECT dd: block writes %r >= 524288 bytes" % written.get(dds[1]))
check(all(e["args"]["error"] == 0 and e["dur"] >= 0 for e in blk), "block requests completed fine")
st_dev = os.stat(os.path.join(data, "a")).st_dev
equal(sorted({e["args"]["dev"] for e in blk if e["args"]["op"] == REQ_OP_WRITE}), [st_dev],
      "block writes are on the device holding the files (st_dev)")
# O_DIRECT writes are issued inside the write syscall: they nest under it
sysw = {(e["pid"], e["id"]) for e in dctest.calls(events, "SYSCALL")
        if e["name"] == "sys_write" and e["pid"] == dds[1]}
direct = [e for e in blk if e["pid"] == dds[1] and e["args"]["op"] == REQ_OP_WRITE]
check(len(direct) > 0 and all((e["pid"], e["args"]["p_idx"]) in sysw for e in direct),
      "O_DIRECT block writes nest under dd's write syscalls")
# fsync'd writes are issued by fsync
fs = {(e["pid"], e["id"]) for e in dctest.calls(events, "SYSCALL")
      if e["name"] == "sys_fsync" and e["pid"] == dds[0]}
under_fsync = sum(e["args"]["size"] for e in blk if e["pid"] == dds[0]
                  and e["args"]["op"] == REQ_OP_WRITE and (e["pid"], e["args"]["p_idx"]) in fs)
check(under_fsync >= 16 * 65536, "the fsync'd data was written under fsync: %d bytes" % under_fsync)

# 2b. every block request nested in a call lies within it; the others are async
for e in blk:
    if e["args"]["p_idx"] != -1:
        par = [x for x in events if x.get("ph") == "X" and x["pid"] == e["pid"]
               and x["id"] == e["args"]["p_idx"]]
        check(par and par[0]["ts"] <= e["ts"] and e["ts"] + e["dur"] <= par[0]["ts"] + par[0]["dur"] + dctest.US_ROUNDING,
              "block_rq %d lies within its parent %r" % (e["id"], par and par[0]["name"]))
        check("async" not in e["args"], "a nested block_rq is not async")
    else:
        check(e["args"].get("async", 1) == 1, "an outermost block_rq is async or had no call")

# 2c. a short-lived file (written, renamed, removed before the tracer reads the events)
# keeps its path on its page cache events: the inode is read when the open returns
d, data = traced("tmp")
events = run(d, data, "io_pagecache.lua",
             "dd if=/dev/zero of=DATA/t.tmp bs=4k count=8 status=none; mv DATA/t.tmp DATA/t.fin;"
             " rm DATA/t.fin")
tmp = os.path.join(data, "t.tmp")
adds = [e for e in dctest.calls(events, "PAGE_CACHE") if e["name"] == "mm_filemap_add_to_page_cache"
        and e["path"] == tmp]
equal(sum(e["args"]["pages"] for e in adds), 8, "pages of t.tmp added while dd wrote it, by path")

# 3. io_kernel.lua: all three layers together pass the checker
d, data = traced("all")
events = run(d, data, "io_kernel.lua", "dd if=/dev/zero of=DATA/c bs=64k count=4 conv=fsync status=none")
cats_seen = {e["cat"] for e in dctest.calls(events, "SYSCALL") + dctest.calls(events, "PAGE_CACHE")
             + dctest.calls(events, "BLOCK")}
equal(sorted(cats_seen), ["BLOCK", "PAGE_CACHE", "SYSCALL"], "layers in an io_kernel.lua trace")
dctest.finish()
