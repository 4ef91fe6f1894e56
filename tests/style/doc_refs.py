#!/usr/bin/env python3
"""doc_refs.py - every reference to a README or docs/ section must resolve.

Usage: doc_refs.py [ROOT]   (ROOT: the source tree, default: two folders up)

Scans src/, tools/, include/, python/, docs/, tests/ (but this file, whose
self-check plants bad references), README.md and CONTRIBUTING.md
for
  - markdown links to local files, with or without a #anchor (in .md files,
    outside code blocks);
  - docs/PAGE.md, docs/PAGE.md#anchor and docs/PAGE.md, "Heading" written in
    code or prose;
  - README "Heading", README's "Heading", README.md, "Heading" and README's
    Heading section;
and prints one line FILE:LINE: REFERENCE: why for each one that does not
resolve. Anchors follow GitHub's rule: the heading's text, lowercased,
punctuation but '-' and '_' dropped, spaces turned into '-', a repeated
anchor numbered -1, -2, ... Before scanning it checks itself on a small
tree with planted bad references. Exit status 0 when all resolve, 1
otherwise.
"""

import os
import re
import sys
import tempfile

SCAN_DIRS = ("src", "tools", "include", "python", "docs", "tests")
SCAN_FILES = ("README.md", "CONTRIBUTING.md")
SELF = os.path.join("tests", "style", "doc_refs.py")
SKIP_DIRS = {"build", "__pycache__", ".git", "node_modules"}
TEXT_EXT = {".c", ".h", ".cu", ".cuh", ".cc", ".cpp", ".hpp", ".py", ".pyi",
            ".sh", ".md", ".txt", ".toml", ".cfg", ".in", ".cmake", ""}

HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")
MD_LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
DOCS_REF = re.compile(
    r"(?<![\w/.-])(docs/[\w./-]+?\.md)(#[\w-]+)?(?:,?\s*\(?\"([^\"]+)\")?")
README_REF = re.compile(
    r"(?<![\w/.-])README(?:\.md)?(?:'s)?(?:,\s*|\s+\(?|\s*\()\"([^\"]+)\"")
README_SECTION = re.compile(
    r"(?<![\w/.-])README(?:\.md)?'s\s+([A-Z][\w -]*?)\s+section")


def slug(text):
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"!\[[^\]]*\]\([^)]*\)", "", text)       # images
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)   # links: their text
    text = re.sub(r"<[^>]+>", "", text)                     # html tags
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


_headings = {}


def headings(path):
    """(set of anchors, set of lowercased heading texts) of a markdown file."""
    if path in _headings:
        return _headings[path]
    anchors, names, seen = set(), set(), {}
    fenced = False
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if FENCE.match(line):
                fenced = not fenced
                continue
            m = None if fenced else HEADING.match(line)
            if not m:
                continue
            text = m.group(2)
            base = slug(text)
            n = seen.get(base, 0)
            seen[base] = n + 1
            anchors.add(base if n == 0 else "%s-%d" % (base, n))
            plain = re.sub(r"[`*_]", "", text).strip().lower()
            names.add(plain)
    _headings[path] = (anchors, names)
    return anchors, names


def flatten_comments(text):
    """Joins comment continuation lines ('\\n * ', '\\n # ', '\\n // ') so a
    quoted heading split over two comment lines still matches; returns the
    joined text and, per joined character, its offset in the original."""
    out, where = [], []
    i, n = 0, len(text)
    cont = re.compile(r"\n[ \t]*(?:\*(?!/)|#|//)?[ \t]*")
    while i < n:
        if text[i] == "\n":
            m = cont.match(text, i)
            out.append(" ")
            where.append(i)
            i = m.end()
            continue
        out.append(text[i])
        where.append(i)
        i += 1
    return "".join(out), where


def line_of(text, offset):
    return text.count("\n", 0, offset) + 1


def check_target(root, base_dir, target, name=None):
    """None when target (a path with an optional #anchor) resolves, else why."""
    path, _, anchor = target.partition("#")
    if path:
        full = os.path.normpath(os.path.join(base_dir, path))
        if not full.startswith(os.path.normpath(root)):
            return "points outside the tree"
        if not os.path.exists(full):
            return "no such file"
    else:
        full = None
    if (anchor or name) and full is None:
        return None if not anchor else "anchor without a file"
    if anchor or name:
        if os.path.isdir(full):
            return "an anchor needs a file, not a folder"
        if not full.endswith(".md"):
            return None
        anchors, names = headings(full)
        if anchor and anchor not in anchors:
            return "no heading gives #%s" % anchor
        if name and name.strip().lower() not in names:
            return "no heading \"%s\"" % name
    return None


def scan_file(root, path, problems):
    rel = os.path.relpath(path, root)
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    base_dir = os.path.dirname(path)

    if path.endswith(".md"):
        fenced = False
        for no, line in enumerate(text.split("\n"), 1):
            if FENCE.match(line):
                fenced = not fenced
                continue
            if fenced:
                continue
            for m in MD_LINK.finditer(line):
                target = m.group(1)
                if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
                    continue  # http:, https:, mailto:
                if target.startswith("#"):
                    why = check_target(root, base_dir, os.path.basename(path) + target)
                else:
                    why = check_target(root, base_dir, target)
                if why:
                    problems.append("%s:%d: (%s): %s" % (rel, no, target, why))

    flat, where = flatten_comments(text)
    for m in DOCS_REF.finditer(flat):
        if path.endswith(".md") and flat[max(0, m.start() - 2):m.start()] == "](":
            continue  # a markdown link: checked above, relative to this file
        target = m.group(1) + (m.group(2) or "")
        why = check_target(root, root, target, m.group(3))
        if why:
            shown = target + (' "%s"' % m.group(3) if m.group(3) else "")
            problems.append("%s:%d: %s: %s" % (rel, line_of(text, where[m.start()]), shown, why))
    for rx in (README_REF, README_SECTION):
        for m in rx.finditer(flat):
            name = m.group(1)
            why = check_target(root, root, "README.md", name)
            if why:
                problems.append('%s:%d: README "%s": %s' %
                                (rel, line_of(text, where[m.start()]), name, why))


def files_to_scan(root):
    for name in SCAN_FILES:
        p = os.path.join(root, name)
        if os.path.isfile(p):
            yield p
    for d in SCAN_DIRS:
        top = os.path.join(root, d)
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = sorted(x for x in dirnames
                                 if x not in SKIP_DIRS and not x.startswith("."))
            for fn in sorted(filenames):
                if os.path.join(dirpath, fn) == os.path.join(root, SELF):
                    continue
                if os.path.splitext(fn)[1] in TEXT_EXT:
                    yield os.path.join(dirpath, fn)


def scan(root):
    _headings.clear()
    problems = []
    for path in files_to_scan(root):
        scan_file(root, path, problems)
    return problems


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def self_check():
    """The checker must pass good references and name every planted bad one."""
    with tempfile.TemporaryDirectory() as root:
        write(root, "README.md", "# Tool\n\n## Quick start\n\nSee [defs](docs/defs.md#kernel-text)"
              " and [img](docs/img/a.png).\n")
        write(root, "docs/img/a.png", "")
        write(root, "docs/defs.md", "# Defs\n\n## Kernel text\n\n## Many machines: `x.dask`\n\n"
              "## Alpha\n\n## Alpha\n\n```\n[not a link](nowhere.md)\n```\n"
              "[up](../README.md#quick-start) [self](#many-machines-xdask) [again](#alpha-1)\n")
        write(root, "src/a.c", "/* grammar (docs/defs.md#kernel-text); alpha: docs/defs.md,\n"
              " * \"Alpha\". */\n")
        good = scan(root)
        if good:
            return ["self-check: a good reference was flagged: " + p for p in good]
        write(root, "src/b.c", "/* see README \"Kernel text\" and docs/defs.md#accuracy,\n"
              " * docs/gone.md and README.md, \"Quick\n * begin\" */\n")
        write(root, "docs/bad.md", "[x](defs.md#nope) [y](missing.md) [z](#none)\n")
        write(root, "python/m.py", "# the README's Performance section\n")
        bad = scan(root)
        want = ['README "Kernel text"', "docs/defs.md#accuracy", "docs/gone.md",
                'README "Quick begin"', "(defs.md#nope)", "(missing.md)", "(#none)",
                'README "Performance"']
        missing = [w for w in want if not any(w in p for p in bad)]
        if missing or len(bad) != len(want):
            return ["self-check: expected %d problems naming %s, got: %s" %
                    (len(want), want, bad)]
    return []


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    root = os.path.abspath(root)
    problems = self_check()
    if problems:
        print("\n".join(problems))
        return 1
    problems = scan(root)
    for p in problems:
        print(p)
    if problems:
        print("doc_refs: %d reference(s) do not resolve" % len(problems))
        return 1
    print("doc_refs: every README and docs reference resolves")
    return 0


if __name__ == "__main__":
    sys.exit(main())
