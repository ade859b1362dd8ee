#!/usr/bin/env python3
"""select_corpus.py - picks a small corpus that keeps a larger one's line coverage.

usage: select_corpus.py BUILD TARGET OUTDIR INPUT... [--first SRC.c,...]

BUILD is a build with -Db_coverage=true (gcc), where
BUILD/tests/fuzz/fuzz_replay_TARGET exists; each INPUT (a file, or a
directory of files) is replayed alone and its covered lines read with gcov.
Files are then chosen greedily, most newly covered lines per square root of
size first: first to cover every line of the sources named by --first (the
code under test), then every line of everything.  The chosen files are
copied to OUTDIR under their own names.  Used for tests/fuzz/corpus/ring
(docs/TESTING.md), whose libFuzzer merge by edges still keeps hundreds of
files.
"""
import glob
import os
import shutil
import subprocess
import sys


def covered_lines(build, replay, path):
    for g in glob.glob(os.path.join(build, '**', '*.gcda'), recursive=True):
        os.unlink(g)
    subprocess.run([replay, path], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env=dict(os.environ, TMPDIR=os.environ.get('TMPDIR', '/dev/shm')))
    gcdas = glob.glob(os.path.join(build, '**', '*.gcda'), recursive=True)
    out = subprocess.run(['gcov', '-t'] + gcdas, capture_output=True, text=True, cwd=build).stdout
    lines, src = set(), None
    for line in out.split('\n'):
        p = line.split(':', 3)
        if len(p) < 3:
            continue
        if p[1].strip() == '0' and p[2] == 'Source':
            src = os.path.basename(p[3])
        elif src and p[0].strip()[:1].isdigit():
            lines.add(src + ':' + p[1].strip())
    return lines


def greedy(cov, size, chosen, got):
    while True:
        best, score = None, 0.0
        for f, c in cov.items():
            if f in chosen:
                continue
            gain = len(c - got)
            if gain and gain / size[f] ** 0.5 > score:
                best, score = f, gain / size[f] ** 0.5
        if best is None:
            return
        chosen.append(best)
        got |= cov[best]


def main(argv):
    first = []
    if '--first' in argv:
        i = argv.index('--first')
        first = argv[i + 1].split(',')
        argv = argv[:i] + argv[i + 2:]
    if len(argv) < 5:
        sys.stderr.write(__doc__)
        return 2
    build, target, outdir, inputs = argv[1], argv[2], argv[3], argv[4:]
    replay = os.path.join(build, 'tests', 'fuzz', 'fuzz_replay_' + target)
    files = []
    for i in inputs:
        files += sorted(os.path.join(i, f) for f in os.listdir(i)) if os.path.isdir(i) else [i]
    cov = {f: covered_lines(build, replay, f) for f in files}
    size = {f: max(os.path.getsize(f), 1) for f in files}
    chosen, got = [], set()
    greedy({f: {x for x in c if x.split(':')[0] in first} for f, c in cov.items()}, size, chosen, got)
    got = set().union(*(cov[f] for f in chosen)) if chosen else set()
    greedy(cov, size, chosen, got)
    os.makedirs(outdir, exist_ok=True)
    for f in chosen:
        shutil.copy(f, os.path.join(outdir, os.path.basename(f)))
    total = set().union(*cov.values()) if cov else set()
    print('%d of %d files, %d bytes, %d of %d lines' % (len(chosen), len(files), sum(size[f] for f in chosen),
                                                         len(got), len(total)))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
