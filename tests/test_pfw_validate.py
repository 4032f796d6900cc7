"""test_pfw_validate.py: scripts/pfw_validate.py on small hand-made traces: good ones pass
(plain, gzip members, --partial, --upstream), each defect is caught with its exact message."""
import gzip
import hashlib
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import dctest  # noqa: E402
from dctest import equal  # noqa: E402

D = dctest.workdir("pfw_validate")


def h(s):
    """The contract's hash: MD5, digest bytes 0, 2, ..., 14."""
    return "".join("%02x" % b for b in hashlib.md5(s.encode()).digest()[::2])


HH, FH, CMD, EXE, CWD = h("corona183"), h("/d/f"), h("dd a b"), h("dd"), h("/d")
equal(HH, "2dbbcec2c820dc4c", "the contract's example hash")


def meta(kind, name, value, pid=7, tid=7):
    return ('{"name":"%s","cat":"dftracer","pid":%d,"tid":%d,"ph":"M","args":{"hhash":"%s",'
            '"name":"%s","value":"%s"}}' % (kind, pid, tid, HH, name, value))


def x(i, name, ts, dur, args, cat="POSIX", pid=7, tid=7):
    return ('{"id":%d,"name":"%s","cat":"%s","pid":%d,"tid":%d,"ts":%d,"dur":%d,"ph":"X",'
            '"args":{"hhash":"%s"%s}}' % (i, name, cat, pid, tid, ts, dur, HH,
                                          "," + args if args else ""))


T0 = 1700000000000000
END = ('"num_events":%d,"lost":0,"dropped":0,"script_errors":0,"too_deep":0,"unpaired":1')


def good():
    """A complete datacrumbs trace: line numbers 2.. are the list's indexes + 2."""
    return [meta("HH", "corona183", HH),                                          # 2
            meta("process_name", "dd", "process_name"),                           # 3
            meta("SH", "dd a b", CMD), meta("SH", "dd", EXE), meta("FH", "/d", CWD),  # 4-6
            x(1 << 40 | 1, "start", T0, 0, '"cmd_hash":"%s","exec_hash":"%s","cwd":"%s",'
              '"version":"0.1","ppid":1' % (CMD, EXE, CWD), cat="datacrumbs"),      # 7
            meta("thread_name", "7", "thread_name"),                              # 8
            meta("FH", "/d/f", FH),                                               # 9
            x(2, "sys_write", T0 + 11, 5, '"level":2,"p_idx":1,"fd":3,"count":4,"ret":4',
              cat="SYSCALL"),                                                     # 10
            x(1, "write", T0 + 10, 6, '"level":1,"p_idx":-1,"fhash":"%s","fd":3,"count":4,'
              '"ret":4' % FH),                                                    # 11
            '{"name":"pwrite","cat":"POSIX","ts":%d,"ph":"C","pid":7,"tid":7,"args":{"hhash":'
            '"%s","fhash":"%s","count":2,"dur_sum":9,"dur_min":4,"dur_max":5}}' % (T0, HH, FH),
            x(1 << 40 | 2, "end", T0 + 20, 0, END % 3, cat="datacrumbs")]        # 13


def write(name, lines, close=True, gz=False, members=1, raw=None):
    """Writes a trace: '[', the lines, ']' (close); gz in that many gzip members."""
    path = os.path.join(D, name + (".pfw.gz" if gz else ".pfw"))
    text = raw if raw is not None else ("[\n" + "".join(l + "\n" for l in lines) +
                                        ("]" if close else ""))
    data = text.encode("utf-8", "surrogateescape")
    with open(path, "wb") as f:
        if gz:
            cut = [0] + [len(data) * k // members for k in range(1, members)] + [len(data)]
            # members end on line boundaries: move each cut after a newline
            for k in range(1, members):
                cut[k] = data.index(b"\n", cut[k]) + 1
            for a, b in zip(cut, cut[1:]):
                f.write(gzip.compress(data[a:b]))
        else:
            f.write(data)
    return path


def validate(path, *opts):
    r = subprocess.run([sys.executable, dctest.PFW_VALIDATE] + list(opts) + [path],
                       capture_output=True, text=True)
    return r.returncode, r.stdout.replace(path, "T")


# good traces
for name, kw, opts in [("good", {}, []), ("good-gz", {"gz": True, "members": 3}, []),
                       ("good-partial", {"close": False}, ["--partial"])]:
    p = write(name, good(), **kw)
    equal(validate(p, *opts), (0, ""), "%s passes" % name)
# a killed run: the last gzip member cut, no "]": --partial reads the members before it
p = write("cut", good()[:-1], close=False, gz=True, members=2)
with open(p, "rb") as f:
    data = f.read()
with open(p, "ab") as f:
    f.write(gzip.compress(b"".join(l.encode() + b"\n" for l in good()[8:10]))[:20])
equal(validate(p, "--partial"), (0, ""), "a cut last member passes with --partial")
equal(validate(p), (1, "T:0: gzip member 3 (byte %d) is cut (a killed run? use --partial)\n"
                    % len(data)), "a cut member without --partial")
# an upstream-style trace: ids on metadata, cat dftracer, repeated ids, a missing parent
up = [l.replace('{"name":', '{"id":0,"name":', 1) if '"ph":"M"' in l else l for l in good()]
up = [l.replace('"cat":"datacrumbs"', '"cat":"dftracer"').replace(END % 3, '"num_events":9')
      for l in up]
up.insert(10, x(2, "read", T0 + 30, 1, '"level":4,"p_idx":99'))
p = write("upstream", up)
equal(validate(p, "--upstream"), (0, ""), "an upstream-style trace passes with --upstream")
code, out = validate(p)
equal((code, out.splitlines()[:2]), (1, ["T:2: metadata record has unknown key(s) id",
                                         "T:3: metadata record has unknown key(s) id"]),
      "the upstream-style trace fails without --upstream")


def bad(what, lines, want, **kw):
    """A trace with one defect: exit 1 and exactly the message want."""
    equal(validate(write(what, lines, **kw)), (1, want + "\n"), what)


def edit(i, old, new):
    g = good()
    assert old in g[i - 2], (i, old)
    g[i - 2] = g[i - 2].replace(old, new)
    return g


bad("no-close", good(), 'T:0: no closing "]" (a killed run? use --partial)', close=False)
bad("no-open", None, 'T:1: the stream must begin with the line "["', raw="\n".join(good()))
bad("nl-after-close", None, 'T:0: newline after the closing "]"',
    raw="[\n" + "".join(l + "\n" for l in good()) + "]\n")
bad("not-json", edit(10, '"ret":4}}', '"ret":4}'),
    "T:10: not JSON: Expecting ',' delimiter: line 1 column 179 (char 178)\n"
    "T:13: end record num_events 3, the file has 2 events")
bad("nan", edit(10, '"ret":4', '"ret":NaN'), "T:10: not JSON: NaN is not JSON\n"
    "T:13: end record num_events 3, the file has 2 events")
bad("dup-key", edit(10, '"ret":4', '"ret":4,"ret":5'), "T:10: key 'ret' twice")
bad("not-utf8", None, "T:10: not UTF-8 at byte 20\n"
    "T:13: end record num_events 3, the file has 2 events",
    raw="[\n" + "".join(l + "\n" for l in edit(10, "sys_write", "sys_\udcffrite")) + "]")
bad("hh-not-first", [good()[1], good()[0]] + good()[2:],
    "T:2: the first record must be the HH (host name) record\n"
    "T:2: hhash %s has no HH record before it" % HH)
bad("bad-ph", edit(10, '"ph":"X"', '"ph":"B"'), "T:10: ph 'B': not X, C or M\n"
    "T:13: end record num_events 3, the file has 2 events")
bad("no-dur", edit(10, ',"dur":5', ''), "T:10: complete event record lacks dur\n"
    "T:13: end record num_events 3, the file has 2 events")
bad("key-order", edit(10, '"pid":7,"tid":7', '"tid":7,"pid":7'),
    "T:10: complete event record keys out of order: id,name,cat,tid,pid,ts,dur,ph,args "
    "(want id,name,cat,pid,tid,ts,dur,ph,args)")
bad("ts-string", edit(10, '"ts":%d' % (T0 + 11), '"ts":"%d"' % (T0 + 11)),
    "T:10: complete event ts must be a non-negative integer: '%d'\n"
    "T:13: end record num_events 3, the file has 2 events" % (T0 + 11))
bad("ret-string", edit(10, '"ret":4', '"ret":"4"'), "T:10: args.ret must be an integer: '4'\n"
    "T:13: end record num_events 3, the file has 2 events")
bad("hhash-not-first", edit(10, '{"hhash":"%s","level":2' % HH, '{"level":2,"hhash":"%s"' % HH),
    "T:10: complete event args must begin with hhash")
bad("dup-id", edit(10, '"id":2,', '"id":1,'),
    "T:11: id 1 repeats within pid 7 (first at line 10)\n"
    "T:10: level 2 under a level 2 parent (line 10): want 3")
bad("no-parent", edit(10, '"p_idx":1', '"p_idx":5'), "T:10: p_idx 5: no event 5 in pid 7")
# a killed tracer: the child returned and was written, its parent (line 11) was still open
p = write("cut-open-parent", good()[:9], close=False)
equal(validate(p, "--partial"), (0, ""), "a cut trace whose last child's parent was open "
      "passes with --partial")
equal(validate(p)[0], 1, "the same without --partial fails")
bad("bad-level", edit(10, '"level":2', '"level":3'),
    "T:10: level 3 under a level 1 parent (line 11): want 2")
bad("root-level", edit(11, '"level":1', '"level":2'),
    "T:10: level 2 under a level 2 parent (line 11): want 3\n"
    "T:11: p_idx -1 (outermost) with level 2, not 1")
bad("outside-parent", edit(10, '"dur":5', '"dur":8'),
    "T:10: [%d, %d] is not inside its parent's [%d, %d] (line 11)"
    % (T0 + 11, T0 + 19, T0 + 10, T0 + 16))
equal(validate(write("rounding", edit(10, '"dur":5', '"dur":7'))), (0, ""),
      "a child ending 2 us after its parent (rounding) passes")
bad("other-tid", edit(10, '"tid":7', '"tid":8'), "T:10: tid 8, its parent's (line 11) is 7")
bad("no-fh", edit(9, '"name":"FH"', '"name":"SH"'),
    "T:11: fhash %s has no FH record before it\nT:12: fhash %s has no FH record before it"
    % (FH, FH))
bad("fh-late", good()[:7] + good()[8:10] + [good()[7]] + good()[10:],
    "T:10: fhash %s has no FH record before it" % FH)
bad("bad-hash", edit(9, FH, "0123456789abcdef"),
    "T:9: FH value 0123456789abcdef is not the hash of '/d/f' (%s)\n"
    "T:11: fhash %s has no FH record before it\nT:12: fhash %s has no FH record before it"
    % (FH, FH, FH))
bad("no-sh", edit(7, CMD, h("x")),
    "T:7: cmd_hash %s has no SH record before it" % h("x"))
bad("thread-name-value", edit(8, '"value":"thread_name"', '"value":"x"'),
    "T:8: thread_name record's value must be 'thread_name': 'x'")
bad("unknown-meta", edit(8, '"name":"thread_name"', '"name":"TN"'),
    "T:8: unknown metadata record 'TN'")
bad("start-no-ppid", edit(7, ',"ppid":1', ''), "T:7: start record lacks args.ppid")
bad("end-no-lost", edit(13, '"lost":0,', ''), "T:13: end record lacks args.lost")
bad("num-events", edit(13, '"num_events":3', '"num_events":4'),
    "T:13: end record num_events 4, the file has 3 events")
bad("no-end", good()[:-1], 'T:13: a trace with a start record and "]" has no end record')
bad("after-end", good() + [x(3, "close", T0 + 30, 1, '"level":1,"p_idx":-1')],
    "T:14: event after the end record (line 13)\n"
    "T:13: end record num_events 3, the file has 4 events")
bad("counter-string", edit(12, '"count":2', '"count":"2"'),
    "T:12: counter args.count must be a number: '2'")
bad("unfinished-ret", edit(10, '"ret":4', '"unfinished":1,"ret":4'),
    'T:10: an unfinished call has "unfinished":1 and no ret')
bad("unwound-ret", edit(10, '"ret":4', '"unwound":1,"ret":4'),
    'T:10: an unwound call has "unwound":1 and no ret')
bad("unwound-string", edit(10, '"ret":4', '"unwound":"yes"'),
    "T:10: args.unwound must be an integer: 'yes'\n"
    "T:13: end record num_events 3, the file has 2 events")
bad("cut-line", None, 'T:0: no closing "]" (a killed run? use --partial)\n'
    "T:13: the line has no newline at its end",
    raw="[\n" + "".join(l + "\n" for l in good()[:-1]) + good()[-1][:30])
dctest.finish()
