#!/usr/bin/env python3
"""include_graph.py - the include graph between the rooms of the tree.

Rooms: src/<part> (src/cuda/<part> too), tools, bench, tests (tests/<part>),
python, include. An arrow A -> B counts the #include "..." lines in A's files
that resolve to a file of room B (against the including file's folder, then
src/, then include/). `--check` exits 1 when an arrow breaks the layering the
README states: dispatch includes no backend room (cpu, cuda, exercises), and
tools, bench, tests (but tests/internal and tests/fuzz: the white-box unit
tests and the fuzz harnesses of internal parsers) and python include nothing
from src/.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INC = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
EXTS = ('.c', '.h', '.cu', '.cuh', '.cc', '.cpp')


def room(path):
    parts = path.split('/')
    if parts[0] == 'src' and len(parts) > 2:
        if parts[1] == 'cuda' and len(parts) > 3:
            return 'src/cuda/' + parts[2]
        return 'src/' + parts[1]
    if parts[0] == 'tests' and len(parts) > 2:
        return 'tests/' + parts[1]
    return parts[0]


def resolve(frm, name):
    for base in (os.path.dirname(frm), 'src', 'include'):
        cand = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(os.path.join(ROOT, cand)):
            return cand
    return None


def graph():
    edges = {}
    for top in ('src', 'tools', 'bench', 'tests', 'python', 'include'):
        for d, _, files in os.walk(os.path.join(ROOT, top)):
            for f in files:
                if not f.endswith(EXTS):
                    continue
                rel = os.path.relpath(os.path.join(d, f), ROOT)
                with open(os.path.join(ROOT, rel), errors='replace') as fh:
                    for line in fh:
                        m = INC.match(line)
                        if not m:
                            continue
                        tgt = resolve(rel, m.group(1))
                        if not tgt:
                            continue
                        a, b = room(rel), room(tgt)
                        if a != b:
                            edges[(a, b)] = edges.get((a, b), 0) + 1
    return edges


def bad(a, b):
    if a == 'src/dispatch' and (b.startswith('src/cpu') or b.startswith('src/cuda')
                                or b == 'src/exercises'):
        return True
    if a in ('tests/internal', 'tests/fuzz'):  # white-box unit tests and fuzz harnesses
        return False
    if a.split('/')[0] in ('tools', 'bench', 'tests', 'python') and b.startswith('src'):
        return True
    return False


def main():
    edges = graph()
    nbad = 0
    for (a, b), n in sorted(edges.items()):
        flag = '   <- breaks the layering' if bad(a, b) else ''
        nbad += bool(flag)
        print(f'{a:22s} -> {b:22s} {n:3d}{flag}')
    print(f'{len(edges)} arrows, {nbad} breaking the layering')
    if '--check' in sys.argv and nbad:
        sys.exit(1)


if __name__ == '__main__':
    main()
