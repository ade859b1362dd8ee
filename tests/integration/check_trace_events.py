#!/usr/bin/env python3
"""check_trace_events.py - validates a Chrome trace event format file (the
JSON object form that ui.perfetto.dev and chrome://tracing open, as
`ncclspy export --perfetto` writes it) and asserts values in it.

    check_trace_events.py FILE [EXPECT...]

Validation, every event: a JSON object with "ph" and the keys its phase
needs (X: name, ts, dur >= 0, pid, tid; B/E: ts, pid, tid, every B closed
by an E on the same track, in order; i/I: name, ts, pid, scope g/p/t;
s/t/f: name, cat, id, ts, pid, tid, each id started once by "s" and
finished once by "f" no earlier, each flow point inside a slice of its
track; M: a known metadata name with its args), numbers where numbers go,
pids and tids integers, and the complete slices of each track nested
(no two overlap partially: Perfetto's importer drops those).

EXPECT items (each must hold; Python 3 standard library only):
    processes=N              processes named by process_name metadata
    ranks=0,1                their ranks ("rank R (host, pid)"), in
                             process_sort_index order
    slice:NAME=RANKS         CPU slices (cat nccl,cpu) named NAME exactly on
                             these ranks and no other ("-": none)
    gpu:NAME=RANKS           the same for GPU slices (cat nccl,gpu)
    arg:NAME:KEY=VALUE@RANKS the CPU slices NAME with args[KEY] == VALUE are
                             on exactly these ranks
    finding:KIND=RANKS       instants of findings of KIND on these ranks
    instants=N               instant events
    flows=N                  flows (s/f pairs)
    slices=N, max_slices=N   CPU slices: exactly, at most
    max_ts=US                no event at or after US microseconds
    min_ts=US                no event (but metadata) before US
Ranks: "0-3,5".  Exit status 0 when all holds, 1 otherwise (each problem
on a line of its own), 2 usage.
"""
import json
import math
import sys

META = {
    "process_name": "name", "process_sort_index": "sort_index", "process_labels": "labels",
    "thread_name": "name", "thread_sort_index": "sort_index",
}


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def parse_ranks(s):
    out = set()
    if s in ("", "-"):
        return out
    for part in s.split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def fmt(ranks):
    return ",".join(str(r) for r in sorted(ranks)) or "-"


class Checker:
    def __init__(self, doc):
        self.problems = []
        self.doc = doc

    def bad(self, msg):
        if len(self.problems) < 50:
            self.problems.append(msg)

    def validate(self):
        doc = self.doc
        if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
            self.bad("not the object form: no traceEvents array")
            return
        if doc.get("displayTimeUnit", "ms") not in ("ms", "ns"):
            self.bad("displayTimeUnit %r is neither ms nor ns" % doc.get("displayTimeUnit"))
        self.events = doc["traceEvents"]
        self.slices = {}  # (pid, tid) -> [(ts, end, event)]
        self.flows = {}   # id -> {"s": [ev], "f": [ev], "t": [ev]}
        self.open_b = {}
        self.proc_name, self.proc_sort = {}, {}
        for n, e in enumerate(self.events):
            where = "event %d" % n
            if not isinstance(e, dict):
                self.bad("%s: not an object" % where)
                continue
            ph = e.get("ph")
            if not isinstance(ph, str):
                self.bad("%s: no ph" % where)
                continue
            where += " (ph %s, %r)" % (ph, e.get("name"))
            for k in ("pid", "tid"):
                if k in e and not is_int(e[k]):
                    self.bad("%s: %s is not an integer" % (where, k))
            if ph != "M":
                if not is_num(e.get("ts")):
                    self.bad("%s: ts missing or not a number" % where)
                    continue
                if "pid" not in e:
                    self.bad("%s: no pid" % where)
            if "args" in e and not isinstance(e["args"], dict):
                self.bad("%s: args is not an object" % where)
            if ph in "XBEsftiI" and ph != "E" and not isinstance(e.get("name"), str):
                self.bad("%s: no name" % where)
            if ph in "XBEsft" and "tid" not in e:
                self.bad("%s: no tid" % where)
            track = (e.get("pid"), e.get("tid"))
            if ph == "X":
                if not is_num(e.get("dur")) or e["dur"] < 0:
                    self.bad("%s: dur missing, not a number or negative" % where)
                    continue
                self.slices.setdefault(track, []).append((e["ts"], e["ts"] + e["dur"], e))
            elif ph == "B":
                self.open_b.setdefault(track, []).append(e)
            elif ph == "E":
                stack = self.open_b.get(track)
                if not stack:
                    self.bad("%s: E without a B on its track %r" % (where, track))
                    continue
                b = stack.pop()
                if e["ts"] < b["ts"]:
                    self.bad("%s: E before its B" % where)
                self.slices.setdefault(track, []).append((b["ts"], e["ts"], b))
            elif ph in "sft":
                if "id" not in e or not (is_int(e["id"]) or isinstance(e["id"], str)):
                    self.bad("%s: flow without an id" % where)
                    continue
                if not isinstance(e.get("cat"), str):
                    self.bad("%s: flow without a cat" % where)
                if ph == "f" and e.get("bp", "e") not in ("e",):
                    self.bad("%s: bp %r (only e, the enclosing slice, is checked)" % (where, e.get("bp")))
                self.flows.setdefault((e.get("cat"), e["id"]), {"s": [], "f": [], "t": []})[ph].append(e)
            elif ph in "iI":
                if e.get("s", "t") not in ("g", "p", "t"):
                    self.bad("%s: instant scope %r" % (where, e.get("s")))
            elif ph == "M":
                key = META.get(e.get("name"))
                if key is None:
                    self.bad("%s: unknown metadata name %r" % (where, e.get("name")))
                    continue
                if "pid" not in e or not isinstance(e.get("args"), dict) or key not in e["args"]:
                    self.bad("%s: metadata without pid or args.%s" % (where, key))
                    continue
                v = e["args"][key]
                if key == "sort_index" and not is_int(v):
                    self.bad("%s: sort_index is not an integer" % where)
                if key in ("name", "labels") and not isinstance(v, str):
                    self.bad("%s: %s is not a string" % (where, key))
                if e["name"] == "process_name":
                    self.proc_name[e["pid"]] = v
                if e["name"] == "process_sort_index":
                    self.proc_sort[e["pid"]] = v
            else:
                self.bad("%s: phase not used by this checker's writer" % where)
        for track, stack in self.open_b.items():
            for b in stack:
                self.bad("B %r on track %r never ended" % (b.get("name"), track))
        # Complete slices nest on each track.
        for track, sl in self.slices.items():
            sl.sort(key=lambda s: (s[0], -s[1]))
            stack = []
            for ts, end, e in sl:
                while stack and stack[-1][1] <= ts:
                    stack.pop()
                if stack and end > stack[-1][1] + 1e-9:
                    self.bad("slice %r [%s, %s] on %r overlaps %r [%s, %s] partially" %
                             (e.get("name"), ts, end, track, stack[-1][2].get("name"), stack[-1][0], stack[-1][1]))
                stack.append((ts, end, e))
        # Flows: one start, one finish no earlier, each inside a slice.
        for fid, parts in self.flows.items():
            if len(parts["s"]) != 1 or len(parts["f"]) != 1:
                self.bad("flow %r: %d start(s), %d finish(es)" % (fid, len(parts["s"]), len(parts["f"])))
                continue
            s, f = parts["s"][0], parts["f"][0]
            if f["ts"] < s["ts"]:
                self.bad("flow %r finishes (%s) before it starts (%s)" % (fid, f["ts"], s["ts"]))
            for p in [s, f] + parts["t"]:
                if not any(a <= p["ts"] <= b for a, b, _ in self.slices.get((p.get("pid"), p.get("tid")), [])):
                    self.bad("flow %r: its %s point at %s is in no slice of track %r" %
                             (fid, p["ph"], p["ts"], (p.get("pid"), p.get("tid"))))

    def rank_of(self, pid):
        name = self.proc_name.get(pid, "")
        if name.startswith("rank "):
            word = name.split()[1]
            if word.isdigit():
                return int(word)
        return None

    def expect(self, item):
        key, sep, want = item.partition("=")
        if not sep:
            raise ValueError(item)
        evs = self.events
        if key == "processes":
            got = len(self.proc_name)
            if got != int(want):
                self.bad("processes: %d, not %s" % (got, want))
        elif key == "ranks":
            pids = sorted(self.proc_name, key=lambda p: (self.proc_sort.get(p, 1 << 40), p))
            got = [self.rank_of(p) for p in pids]
            if got != sorted(parse_ranks(want)):
                self.bad("ranks: %s, not %s" % (got, want))
        elif key in ("instants", "flows", "slices", "max_slices"):
            if key == "instants":
                got = sum(1 for e in evs if e.get("ph") in "iI")
            elif key == "flows":
                got = len(self.flows)
            else:
                got = sum(1 for e in evs if e.get("ph") == "X" and e.get("cat") == "nccl,cpu")
            if (got > int(want)) if key == "max_slices" else (got != int(want)):
                self.bad("%s: %d, not %s%s" % (key, got, "at most " if key == "max_slices" else "", want))
        elif key in ("max_ts", "min_ts"):
            for e in evs:
                if e.get("ph") == "M":
                    continue
                if (e["ts"] >= float(want)) if key == "max_ts" else (e["ts"] < float(want)):
                    self.bad("%s %s: event %r at %s" % (key, want, e.get("name"), e["ts"]))
                    break
        elif key.startswith(("slice:", "gpu:")):
            kind, _, name = key.partition(":")
            cat = "nccl,cpu" if kind == "slice" else "nccl,gpu"
            got = {self.rank_of(e["pid"]) for e in evs
                   if e.get("ph") == "X" and e.get("cat") == cat and e.get("name") == name}
            if got != parse_ranks(want):
                self.bad("%s: on ranks %s, not %s" % (key, fmt(got), want))
        elif key.startswith("arg:"):
            _, name, argkey = key.split(":", 2)
            value, _, ranks = want.rpartition("@")
            got = {self.rank_of(e["pid"]) for e in evs
                   if e.get("ph") == "X" and e.get("cat") == "nccl,cpu" and e.get("name") == name
                   and str(e.get("args", {}).get(argkey)) == value}
            if got != parse_ranks(ranks):
                self.bad("%s=%s: on ranks %s, not %s" % (key, value, fmt(got), ranks))
        elif key.startswith("finding:"):
            kind = key.partition(":")[2]
            got = [self.rank_of(e["pid"]) for e in evs
                   if e.get("ph") in "iI" and e.get("args", {}).get("kind") == kind]
            if sorted(got) != sorted(parse_ranks(want)):
                self.bad("%s: instants on ranks %s, not %s" % (key, got, want))
        else:
            raise ValueError(item)


def main(argv):
    if len(argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    try:
        with open(argv[1], encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        print("%s: not JSON: %s" % (argv[1], e))
        return 1
    c = Checker(doc)
    c.validate()
    if not c.problems:
        for item in argv[2:]:
            try:
                c.expect(item)
            except ValueError:
                sys.stderr.write("check_trace_events.py: bad expectation %r\n" % item)
                return 2
    for p in c.problems:
        print("%s: %s" % (argv[1], p))
    if not c.problems:
        print("%s: %d events valid; %d expectation(s) hold" % (argv[1], len(c.events), len(argv) - 2))
    return 1 if c.problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
