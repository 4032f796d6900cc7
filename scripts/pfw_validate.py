#!/usr/bin/env python3
"""pfw_validate.py: the project's own validator of DFTracer traces (.pfw, .pfw.gz), written
from the format contract (docs/trace-format.md); Python 3 standard library only.

usage: pfw_validate.py [--partial] [--upstream] [--max-errors N] FILE...
  --partial   accept a trace without its closing "]" whose last gzip member may be cut
              (a run that was killed); the cut member's lines are not read
  --upstream  read a trace of the upstream DFTracer writer: ids may repeat, p_idx may name
              an event that is not in the file, level and nesting are not checked, metadata
              records may carry an id, the tracer's records have cat "dftracer" and the end
              record only num_events (which counts more than the events written)
  --max-errors N  print at most N errors per file (default 50; 0: all)
Each problem is one line "FILE:LINE: message" (LINE 0: the file as a whole); the exit
status is 0 when every file passes, 1 otherwise (2: bad usage).
"""
import hashlib
import json
import os
import re
import sys
import zlib

# ts and dur are whole microseconds, each rounded down from nanoseconds: a call that ends
# inside its parent may appear to end up to 2 us after it (tests/dctest.py US_ROUNDING)
US_ROUNDING = 2
HASH_RE = re.compile(r"^[0-9a-f]{16}$")
X_KEYS = ["id", "name", "cat", "pid", "tid", "ts", "dur", "ph", "args"]
C_KEYS = ["name", "cat", "ts", "ph", "pid", "tid", "args"]
M_KEYS = ["name", "cat", "pid", "tid", "ph", "args"]
M_ARGS = ["hhash", "name", "value"]
HASH_KINDS = ("HH", "FH", "SH")
# args of complete events that are integers wherever they appear (the C names of the
# calls' arguments; mode is not: fopen's is a string)
INT_ARGS = ("level", "p_idx", "fd", "count", "offset", "ret", "errno", "whence", "flags",
            "unfinished", "unwound", "async", "ino", "dev")
# which hash record each hash-valued argument refers to
HASH_ARGS = {"hhash": "HH", "fhash": "FH", "cmd_hash": "SH", "exec_hash": "SH", "cwd": "FH"}
START_ARGS = {"cmd_hash": str, "exec_hash": str, "cwd": str, "version": str, "ppid": int}
END_ARGS = ("num_events", "lost", "dropped", "script_errors", "too_deep", "unpaired")


def dc_hash(data):
    """The contract's hash of a string's bytes: MD5, digest bytes 0, 2, ..., 14 in hex."""
    return hashlib.md5(data).digest()[::2].hex()


def is_int(v):
    """A JSON integer (bool is not one, though Python says it is an int)."""
    return isinstance(v, int) and not isinstance(v, bool)


class Trace:
    """The checks of one file; errors are collected as (line, message)."""

    def __init__(self, path, partial, upstream):
        self.path, self.partial, self.upstream = path, partial, upstream
        self.errors = []
        self.hashes = {}      # (kind, value) -> name
        self.hash_line = {}   # (kind, value) -> line of its record
        self.events = {}      # (pid, id) -> (line, event), complete events
        self.nevents = 0      # complete and counter events, the tracer's own excluded
        self.starts, self.ends = [], []
        self.records = 0

    def err(self, line, msg):
        """Records one problem at a line of the decompressed stream (0: the whole file)."""
        self.errors.append((line, msg))

    # --- the stream ---------------------------------------------------------------

    def read(self):
        """Returns the decompressed text of the file (every gzip member, or plain), or None
        when it cannot be read at all."""
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except OSError as e:
            self.err(0, "cannot read: %s" % e.strerror)
            return None
        if data[:2] != b"\x1f\x8b":
            return data
        out, pos, member = [], 0, 0
        while pos < len(data):
            member += 1
            d = zlib.decompressobj(31)
            try:
                chunk = d.decompress(data[pos:])
            except zlib.error as e:
                self.err(0, "gzip member %d (byte %d): corrupt: %s" % (member, pos, e))
                return None
            if not d.eof:
                if self.partial:
                    # a killed run: the last member is cut; its lines are not read
                    break
                self.err(0, "gzip member %d (byte %d) is cut (a killed run? use --partial)"
                         % (member, pos))
                return None
            if chunk and not (chunk.endswith(b"\n") or (not d.unused_data and
                                                        chunk.endswith(b"]"))):
                self.err(0, "gzip member %d (byte %d) does not end on a line boundary"
                         % (member, pos))
            out.append(chunk)
            pos = len(data) - len(d.unused_data)
            if d.unused_data and d.unused_data[:2] != b"\x1f\x8b":
                self.err(0, "bytes after gzip member %d (byte %d) are not a gzip member"
                         % (member, pos))
                break
        return b"".join(out)

    def check(self):
        """Runs every check; returns the list of (line, message)."""
        data = self.read()
        if data is None:
            return self.errors
        if not data.startswith(b"[\n"):
            self.err(1, "the stream must begin with the line \"[\"")
            return self.errors
        body = data[2:]
        closed = body.endswith(b"]") and (len(body) == 1 or body.endswith(b"\n]"))
        if closed:
            body = body[:-1]
        elif body.endswith(b"]\n"):
            self.err(0, "newline after the closing \"]\"")
            body = body[:-2]
            closed = True
        elif not self.partial:
            spool = self.path + ".spool"
            self.err(0, "no closing \"]\" (a killed run? use --partial%s)" % (
                "; its spool is beside it: datacrumbs recover " + spool
                if os.path.isdir(spool) else ""))
        if body and not body.endswith(b"\n"):
            # without "]", a last line without its newline is a cut one: not read
            self.err(body.count(b"\n") + 2, "the line has no newline at its end")
            body = body[:body.rfind(b"\n") + 1]
        lines = body.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        for n, raw in enumerate(lines, 2):
            self.line(n, raw)
        self.finish(len(lines) + 2, closed)
        return self.errors

    def line(self, n, raw):
        """Checks one line of the stream: strict JSON, one object, then its record kind."""
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            self.err(n, "not UTF-8 at byte %d" % e.start)
            return
        if text == "]":
            self.err(n, "\"]\" before the end of the stream")
            return
        dups = []

        def pairs(kv):
            seen = set()
            for k, _ in kv:
                if k in seen:
                    dups.append(k)
                seen.add(k)
            return dict(kv)

        def constant(c):
            raise ValueError("%s is not JSON" % c)

        try:
            rec = json.loads(text, object_pairs_hook=pairs, parse_constant=constant)
        except ValueError as e:
            self.err(n, "not JSON: %s" % e)
            return
        if not isinstance(rec, dict):
            self.err(n, "not a JSON object")
            return
        for k in dups:
            self.err(n, "key %r twice" % k)
        self.records += 1
        ph = rec.get("ph")
        if self.records == 1 and not (ph == "M" and rec.get("name") == "HH"):
            self.err(n, "the first record must be the HH (host name) record")
        if ph == "X":
            self.complete(n, rec)
        elif ph == "C":
            self.counter(n, rec)
        elif ph == "M":
            self.meta(n, rec)
        else:
            self.err(n, "ph %r: not X, C or M" % (ph,))

    # --- records -------------------------------------------------------------------

    def keys(self, n, rec, want, what):
        """Checks a record's keys are exactly want, in that order."""
        got = list(rec)
        if self.upstream and what == "metadata" and got[:1] == ["id"]:
            got = got[1:]  # upstream numbers its metadata records
        if got != want:
            missing = [k for k in want if k not in rec]
            extra = [k for k in got if k not in want]
            if missing:
                self.err(n, "%s record lacks %s" % (what, ", ".join(missing)))
            if extra:
                self.err(n, "%s record has unknown key(s) %s" % (what, ", ".join(extra)))
            if not missing and not extra:
                self.err(n, "%s record keys out of order: %s (want %s)"
                         % (what, ",".join(got), ",".join(want)))
            return not missing
        return True

    def common(self, n, rec, what):
        """Type checks shared by events: name, cat strings, pid, tid positive integers,
        ts a non-negative integer, args an object with hhash first."""
        ok = True
        for k in ("name", "cat"):
            if not isinstance(rec[k], str) or not rec[k]:
                self.err(n, "%s %s must be a non-empty string" % (what, k))
                ok = False
        for k in ("pid", "tid"):
            if not is_int(rec[k]) or rec[k] <= 0:
                self.err(n, "%s %s must be a positive integer: %r" % (what, k, rec[k]))
                ok = False
        if "ts" in rec and (not is_int(rec["ts"]) or rec["ts"] < 0):
            self.err(n, "%s ts must be a non-negative integer: %r" % (what, rec["ts"]))
            ok = False
        a = rec["args"]
        if not isinstance(a, dict):
            self.err(n, "%s args must be an object" % what)
            return False
        if list(a)[:1] != ["hhash"]:
            self.err(n, "%s args must begin with hhash" % what)
        for k, kind in HASH_ARGS.items():
            if k in a:
                self.ref(n, a[k], kind, k)
        return ok

    def ref(self, n, v, kind, key):
        """A hash-valued argument: 16 hex digits, its record written before this line."""
        if not isinstance(v, str) or not HASH_RE.match(v):
            self.err(n, "%s %r is not a 16 hex digit hash" % (key, v))
        elif (kind, v) not in self.hashes:
            self.err(n, "%s %s has no %s record before it" % (key, v, kind))

    def complete(self, n, rec):
        """A complete event (ph X): a traced call or one of the tracer's records."""
        if not self.keys(n, rec, X_KEYS, "complete event"):
            return
        if not self.common(n, rec, "complete event"):
            return
        if not is_int(rec["id"]) or rec["id"] < 0:
            self.err(n, "id must be a non-negative integer: %r" % (rec["id"],))
            return
        if not is_int(rec["dur"]) or rec["dur"] < 0:
            self.err(n, "dur must be a non-negative integer: %r" % (rec["dur"],))
            return
        a = rec["args"]
        for k in INT_ARGS:
            if k in a and not is_int(a[k]):
                self.err(n, "args.%s must be an integer: %r" % (k, a[k]))
                return
        if ("level" in a) != ("p_idx" in a):
            self.err(n, "args has %s without %s" % (("level", "p_idx") if "level" in a
                                                      else ("p_idx", "level")))
        if "level" in a and a["level"] < 1:
            self.err(n, "args.level must be >= 1: %d" % a["level"])
        if "unfinished" in a and (a["unfinished"] != 1 or "ret" in a):
            self.err(n, "an unfinished call has \"unfinished\":1 and no ret")
        if "unwound" in a and (a["unwound"] != 1 or "ret" in a):
            self.err(n, "an unwound call has \"unwound\":1 and no ret")
        key = (rec["pid"], rec["id"])
        if key in self.events:
            if not self.upstream:
                self.err(n, "id %d repeats within pid %d (first at line %d)"
                         % (rec["id"], rec["pid"], self.events[key][0]))
        else:
            self.events[key] = (n, rec)
        tracer = "dftracer" if self.upstream else "datacrumbs"
        if rec["cat"] == tracer and rec["name"] in ("start", "end"):
            self.tracer_record(n, rec)
        else:
            self.nevents += 1
            if self.ends:
                self.err(n, "event after the end record (line %d)" % self.ends[0][0])

    def tracer_record(self, n, rec):
        """The tracer's start record (cmd_hash, exec_hash, cwd, version, ppid) and end record
        (num_events, lost, dropped, script_errors, too_deep, unpaired)."""
        a = rec["args"]
        if rec["name"] == "start":
            if self.starts:
                self.err(n, "a second start record (first at line %d)" % self.starts[0][0])
            self.starts.append((n, rec))
            for k, t in START_ARGS.items():
                if k not in a:
                    self.err(n, "start record lacks args.%s" % k)
                elif not isinstance(a[k], t) or (t is int and not is_int(a[k])):
                    self.err(n, "start record args.%s must be a %s: %r"
                             % (k, "string" if t is str else "integer", a[k]))
            return
        if self.ends:
            self.err(n, "a second end record (first at line %d)" % self.ends[0][0])
        self.ends.append((n, rec))
        for k in (END_ARGS[:1] if self.upstream else END_ARGS):
            if k not in a:
                self.err(n, "end record lacks args.%s" % k)
            elif not is_int(a[k]) or a[k] < 0:
                self.err(n, "end record args.%s must be a non-negative integer: %r" % (k, a[k]))

    def counter(self, n, rec):
        """A counter event (ph C, profile mode): no id, no dur, args numbers (and hashes)."""
        if not self.keys(n, rec, C_KEYS, "counter event"):
            return
        if not self.common(n, rec, "counter event"):
            return
        for k, v in rec["args"].items():
            if k in HASH_ARGS:
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                self.err(n, "counter args.%s must be a number: %r" % (k, v))
        self.nevents += 1
        if self.ends:
            self.err(n, "event after the end record (line %d)" % self.ends[0][0])

    def meta(self, n, rec):
        """A metadata record (ph M): HH/FH/SH hashes, process_name, thread_name, PR (rank)."""
        if not self.keys(n, rec, M_KEYS, "metadata"):
            return
        a = rec["args"]
        if not isinstance(a, dict):
            self.err(n, "metadata args must be an object")
            return
        if list(a) != M_ARGS:
            self.err(n, "metadata args must be exactly hhash, name, value: %s" % ",".join(a))
            return
        if rec["cat"] != "dftracer":
            self.err(n, "metadata cat must be \"dftracer\": %r" % (rec["cat"],))
        for k in ("pid", "tid"):
            if not is_int(rec[k]) or rec[k] <= 0:
                self.err(n, "metadata %s must be a positive integer: %r" % (k, rec[k]))
        kind, name, value = rec["name"], a["name"], a["value"]
        if not isinstance(name, str) or not isinstance(value, str):
            self.err(n, "metadata args.name and args.value must be strings")
            return
        if kind in HASH_KINDS:
            if not HASH_RE.match(value):
                self.err(n, "%s value %r is not a 16 hex digit hash" % (kind, value))
                return
            # a name with U+FFFD stood for bytes that are not UTF-8: its hash is of those
            if "\ufffd" not in name and dc_hash(name.encode("utf-8")) != value:
                self.err(n, "%s value %s is not the hash of %r (%s)"
                         % (kind, value, name, dc_hash(name.encode("utf-8"))))
            old = self.hashes.get((kind, value))
            if old is not None and old != name:
                self.err(n, "%s hash %s names %r, and %r at line %d"
                         % (kind, value, name, old, self.hash_line[(kind, value)]))
            if old is None:
                self.hashes[(kind, value)] = name
                self.hash_line[(kind, value)] = n
            if kind == "HH" and a["hhash"] != value:
                self.err(n, "HH record's hhash %r is not its value %s" % (a["hhash"], value))
            if kind != "HH":
                self.ref(n, a["hhash"], "HH", "hhash")
        elif kind in ("process_name", "thread_name"):
            self.ref(n, a["hhash"], "HH", "hhash")
            if value != kind:
                self.err(n, "%s record's value must be %r: %r" % (kind, kind, value))
            if not name:
                self.err(n, "%s record's name is empty" % kind)
        elif kind == "PR" and not self.upstream:
            self.ref(n, a["hhash"], "HH", "hhash")
            if not name:
                self.err(n, "PR record's name is empty")
        else:
            self.err(n, "unknown metadata record %r" % (kind,))

    # --- the whole file ------------------------------------------------------------

    def finish(self, last, closed):
        """Checks across records: nesting (p_idx, level, times), the end record's count."""
        if self.records == 0:
            self.err(0, "no records")
        if not self.upstream:
            for (pid, _), (n, ev) in sorted(self.events.items(), key=lambda kv: kv[1][0]):
                a = ev["args"]
                p = a.get("p_idx")
                if not is_int(p) or not is_int(a.get("level")):
                    continue
                if p == -1:
                    if a["level"] != 1:
                        self.err(n, "p_idx -1 (outermost) with level %d, not 1" % a["level"])
                    continue
                par = self.events.get((pid, p))
                if par is None:
                    # a cut trace (a killed tracer) may end while the parent was open: it is
                    # written when it returns, and that never reached the file
                    if not (self.partial and not closed):
                        self.err(n, "p_idx %d: no event %d in pid %d" % (p, p, pid))
                    continue
                pn, pev = par
                pl = pev["args"].get("level")
                if is_int(pl) and a["level"] != pl + 1:
                    self.err(n, "level %d under a level %d parent (line %d): want %d"
                             % (a["level"], pl, pn, pl + 1))
                if pev["tid"] != ev["tid"]:
                    self.err(n, "tid %d, its parent's (line %d) is %d"
                             % (ev["tid"], pn, pev["tid"]))
                end, pend = ev["ts"] + ev["dur"], pev["ts"] + pev["dur"]
                if ev["ts"] < pev["ts"] or end > pend + US_ROUNDING:
                    self.err(n, "[%d, %d] is not inside its parent's [%d, %d] (line %d)"
                             % (ev["ts"], end, pev["ts"], pend, pn))
        if self.starts and closed and not self.ends:
            self.err(last, "a trace with a start record and \"]\" has no end record")
        for n, rec in self.ends:
            want = rec["args"].get("num_events")
            if not self.upstream and is_int(want) and want != self.nevents:
                self.err(n, "end record num_events %d, the file has %d events"
                         % (want, self.nevents))


def main(argv):
    """Validates each file named; prints FILE:LINE: message per problem."""
    partial = upstream = False
    limit, files = 50, []
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--partial":
            partial = True
        elif a == "--upstream":
            upstream = True
        elif a == "--max-errors" and args and args[0].isdigit():
            limit = int(args.pop(0))
        elif a in ("-h", "--help"):
            print(__doc__.split("\n", 3)[3].strip())
            return 0
        elif a.startswith("-") and a != "-":
            print("pfw_validate.py: unknown option %s" % a, file=sys.stderr)
            return 2
        else:
            files.append(a)
    if not files:
        print("usage: pfw_validate.py [--partial] [--upstream] [--max-errors N] FILE...",
              file=sys.stderr)
        return 2
    bad = 0
    for path in files:
        errors = Trace(path, partial, upstream).check()
        for line, msg in errors[:limit or None]:
            print("%s:%d: %s" % (path, line, msg))
        if limit and len(errors) > limit:
            print("%s:0: %d more errors" % (path, len(errors) - limit))
        bad += bool(errors)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
