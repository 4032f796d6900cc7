"""test_stdio.py: the STDIO layer (io_stdio.lua) on tests/progs/prog_stdio.c: every stream
call with its exact args and its file, then io_all.lua: the POSIX calls each stream call
made nested under it, each call once."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import dctest  # noqa: E402
from dctest import check, equal  # noqa: E402

dctest.need_root()
PROG = os.environ["PROG_STDIO"]
O_RDWR, O_WRONLY, O_CREAT, O_TRUNC, O_APPEND = 0o2, 0o1, 0o100, 0o1000, 0o2000
SEEK_SET, SEEK_CUR = 0, 1
POINTER_RET = {"fopen", "fdopen", "freopen", "fgets"}  # ret is an address: checked non-zero


def traced(name, script):
    d = dctest.workdir("stdio-" + name)
    data = os.path.join(d, "data")
    os.makedirs(data)
    r = dctest.run_dc(["run", "-o", d, script, "--", PROG, data])
    equal(r.returncode, 0, "%s: prog_stdio exit status (stderr: %s)" % (name, r.stderr.strip()))
    trace = dctest.find_trace(d)
    dctest.check_pfw(trace)
    events, _, _ = dctest.read_trace(trace)
    return data, events


def shape(e, data):
    a = {k: v for k, v in e["args"].items() if k not in ("hhash", "fhash", "level", "p_idx")}
    if e["name"] in POINTER_RET:
        check(a.pop("ret", 0) != 0, "%s returns a pointer: %r" % (e["name"], e))
    return (e["name"], os.path.relpath(e["path"], data) if e["path"] else None, a)


# 1. io_stdio.lua: each stream call, its args and its file
data, events = traced("only", "io_stdio.lua")
stdio = [e for e in dctest.calls(events, "STDIO") if e["pid"] == dctest.calls(events, "STDIO")[0]["pid"]]
stdio = [e for e in stdio if e["path"] is None or e["path"].startswith(data)]
s1 = {"fd": 3}
WANT = [
    ("fopen", "s1.txt", {"mode": "w+", "fd": 3}),
    ("fwrite", "s1.txt", {"size": 10, "nmemb": 100, "fd": 3, "count": 1000, "ret": 100}),
    ("fprintf", "s1.txt", dict(s1, ret=5)),                     # "n=42\n"
    ("fputs", "s1.txt", dict(s1, count=6, ret=1)),              # glibc returns 1
    ("fputc", "s1.txt", {"c": ord("x"), "fd": 3, "ret": ord("x")}),
    ("fflush", "s1.txt", dict(s1, ret=0)),
    ("fseek", "s1.txt", {"offset": 0, "whence": SEEK_SET, "fd": 3, "ret": 0}),
    ("fread", "s1.txt", {"size": 4, "nmemb": 250, "fd": 3, "count": 1000, "ret": 250}),
    ("fgets", "s1.txt", {"count": 64, "fd": 3}),                # reads "n=42\n"
    ("fgetc", "s1.txt", dict(s1, ret=ord("h"))),                # of "hello\n"
    ("ftell", "s1.txt", dict(s1, ret=1006)),                    # 1000 + 5 + 1
    ("rewind", "s1.txt", s1),                                   # void: no ret
    ("fseeko", "s1.txt", {"offset": 100, "whence": SEEK_CUR, "fd": 3, "ret": 0}),
    ("ftello", "s1.txt", dict(s1, ret=100)),
    ("fileno", "s1.txt", dict(s1, ret=3)),
    ("freopen", "s4.txt", {"mode": "a", "fd": 3}),              # the stream now writes s4
    ("fputs", "s4.txt", dict(s1, count=5, ret=1)),              # "tail\n"
    ("fclose", "s4.txt", dict(s1, ret=0)),
    ("fdopen", "s2.txt", {"fd": 3, "mode": "w"}),               # open(2) done by the program
    ("fwrite", "s2.txt", {"size": 1, "nmemb": 4096, "fd": 3, "count": 4096, "ret": 4096}),
    ("fclose", "s2.txt", dict(s1, ret=0)),
    ("fopen", "s3.txt", {"mode": "w", "fd": 3}),
    ("fputs", "s3.txt", dict(s1, count=14, ret=1)),             # "one\ntwo\nthree\n"
    ("fclose", "s3.txt", dict(s1, ret=0)),
    ("fopen", "s3.txt", {"mode": "r", "fd": 3}),
    ("getline", "s3.txt", dict(s1, ret=4)),                     # "one\n"
    ("getline", "s3.txt", dict(s1, ret=4)),                     # "two\n"
    ("getline", "s3.txt", dict(s1, ret=6)),                     # "three\n"
    ("getline", "s3.txt", dict(s1, ret=-1)),                    # EOF
    ("fclose", "s3.txt", dict(s1, ret=0)),
    ("fprintf", None, {"ret": 4}),                              # open_memstream: no fd
    ("fclose", None, {"ret": 0}),
]
if not dctest.mechanisms()["uprobe_session"]["ok"]:
    # no session uprobes: returns are seen at return instructions, and fputc and fgetc
    # leave through glibc's FILE vtable (an indirect tail call in __overflow, __uflow):
    # entry-only (docs/features.md)
    WANT = [(n, None, {k: v for k, v in a.items() if k not in ("fd", "ret")}
             | {"entry_only": 1}) if n in ("fputc", "fgetc") else (n, f, a)
            for n, f, a in WANT]
equal([shape(e, data) for e in stdio], WANT, "prog_stdio's stream calls")
equal([e["args"]["level"] for e in stdio], [1] * len(WANT), "STDIO alone: every call outermost")
equal(sorted(set(e["cat"] for e in events if e.get("ph") == "X")), ["STDIO", "datacrumbs"],
      "io_stdio.lua writes STDIO events only (its POSIX probes only track fds)")
equal({f: os.path.getsize(os.path.join(data, f)) for f in ("s1.txt", "s2.txt", "s3.txt", "s4.txt")},
      {"s1.txt": 1012, "s2.txt": 4096, "s3.txt": 14, "s4.txt": 5}, "file sizes")

# 2. io_all.lua: the same stream calls, once each, with their POSIX calls nested
data, events = traced("all", "io_all.lua")
pid = dctest.calls(events, "STDIO")[0]["pid"]
mine = [e for e in events if e.get("ph") == "X" and e["pid"] == pid]
stdio = [e for e in mine if e["cat"] == "STDIO" and (e["path"] is None or e["path"].startswith(data))]
equal([shape(e, data) for e in stdio], WANT, "io_all.lua: the same stream calls, each once")
byid = {e["id"]: e for e in mine}
kids = {}
for e in mine:
    p = byid.get(e["args"].get("p_idx"))
    if p is not None:
        kids.setdefault(p["id"], []).append(e)
        check(e["args"]["level"] == p["args"]["level"] + 1, "level of %r under %r" % (e, p))
        check(p["ts"] <= e["ts"] and e["ts"] + e["dur"] <= p["ts"] + p["dur"] + dctest.US_ROUNDING,
              "%s lies inside %s" % (e["name"], p["name"]))


AT_EMPTY_PATH = 0x1000  # fcntl.h


def children(i):
    return [(c["name"], os.path.relpath(c["path"], data) if c["path"] else None,
             {k: v for k, v in c["args"].items() if k in ("flags", "count", "offset", "ret")})
            for c in kids.get(stdio[i]["id"], [])]


# the POSIX layer's calls are its system calls (glibc's open is openat(2), fstat a
# newfstatat(fd, "", AT_EMPTY_PATH), its internal close a close(2))
equal(children(0), [("openat", "s1.txt", {"flags": O_RDWR | O_CREAT | O_TRUNC, "ret": 3})],
      "fopen(s1, \"w+\") made one open(2)")
equal(children(5), [("write", "s1.txt", {"count": 1012, "ret": 1012})],
      "fflush wrote the 1012 buffered bytes in one write(2)")
equal([c for c in children(7) if c[0] == "read"], [("read", "s1.txt", {"count": 4096, "ret": 1012})],
      "fread filled its buffer with one read(2)")
equal(children(19), [("fstatat", "s2.txt", {"flags": AT_EMPTY_PATH, "ret": 0}), ("write", "s2.txt", {"count": 4096, "ret": 4096})],
      "the stream's first fwrite sizes its buffer (fstat), and 4096 bytes go straight to write(2)")
equal([c[0] for c in children(20)], ["close"], "fclose(s2) closes its fd once")
equal([c for c in children(16)], [("fstatat", "s4.txt", {"flags": AT_EMPTY_PATH, "ret": 0})],
      "fputs of 5 bytes only sizes the new buffer: the bytes stay in it")
equal([c[:2] for c in children(17)], [("write", "s4.txt"), ("close", "s4.txt")],
      "fclose(s4) writes the buffer, then closes")
top_posix = [e for e in mine if e["cat"] == "POSIX" and e["path"] and e["path"].startswith(data)
             and e["args"]["level"] == 1]
equal([(e["name"], os.path.relpath(e["path"], data)) for e in top_posix], [("openat", "s2.txt")],
      "the only POSIX call on the files outside a stream call is prog_stdio's own open(2)")
keys = [(e["tid"], e["ts"], e["name"], e["args"].get("fd")) for e in mine]
equal(len(keys), len(set(keys)), "no call written twice")
dctest.finish()
