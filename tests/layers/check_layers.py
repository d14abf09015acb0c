#!/usr/bin/env python3
"""check_layers.py - ctest's "layers" test: the include rules of the library's layers.

Reads every `#include "..."` of src/ (C, headers, CUDA) and fails, printing file:line,
when
  - a file includes a header of a layer above its own, or of another directory of its
    own layer;
  - a file outside a backend includes that backend's headers (find/ and core/ reach the
    backends only through algo/backend.h; the CPU backend is registered by its symbol,
    the CUDA backend is a module loaded at run time);
  - the include graph between directories has a cycle;
  - a file of tools/ or bench/ includes a library-internal header (one under src/):
    they are to live on include/convfind.h alone.  Those that do not yet are listed in
    ALLOWED, printed on every run, and an entry that no longer includes one fails the
    check until it is removed.
Angle-bracket includes (system and peer libraries: oneDNN, cuDNN) are not checked.

The rule table below is the one place the rules live; docs/architecture.md shows it
between its "layers:begin" and "layers:end" markers, and this script fails when that
copy differs from what it prints with --table.

usage: check_layers.py SOURCE_DIR [--table]
"""

import os
import re
import sys

# The layers, bottom up.  A file may include the public header (include/), headers of
# its own directory, and headers of directories in a layer below its own.
LAYERS = [
    ("util", "portable helpers: errors, log messages, threads, interned strings"),
    ("problem", "ONNX attributes, validation, shapes, the key and its fingerprint fields"),
    ("decision", "the decision record, and its JSON form as stored"),
    ("cache db", "the decision cache; the SQLite find-db"),
    ("algo", "the algorithm and backend interfaces, the backend registry, the module loader"),
    ("find", "the one Find harness and its ranking rules"),
    ("core", "contexts, plans, policies, the background tuner, the public entry points"),
]
# Backends implement algo/backend.h: they may include the layers up to algo and their
# own headers, and nothing outside them may include theirs.
BACKENDS = [
    ("cpu", "the CPU backend, linked into the library"),
    ("cuda", "the CUDA backend, the module libconvfind_cuda.so"),
]
BACKEND_TOP = "algo"

# tools/ and bench/ files allowed to include library-internal headers until a change
# moves them onto the public API; none now.  Peer drivers include only their peers'
# headers, with angle brackets, and need no entry.
ALLOWED = []

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SOURCES = (".c", ".h", ".cu")
# Where a tools/ or bench/ file's quoted include may come from besides its directory.
OUTSIDE_SEARCH = ["src", "include", "tools", "bench", "tests/gpu"]
GENERATED = {"convfind_version.h"}  # include/convfind_version.h.in, configured by CMake


def rank_of():
    ranks = {}
    for i, (names, _) in enumerate(LAYERS):
        for name in names.split():
            ranks[name] = i
    return ranks


def table():
    """The rule table as docs/architecture.md shows it."""
    lines = ["  %-19s %s" % ("src/" + "/ src/".join(n.split()) + "/", what)
             for n, what in LAYERS]
    lines.insert(0, "Layers, bottom up (a file includes its own directory and layers below):")
    lines.append("Backends (include layers up to %s/ and themselves; included by nobody):"
                 % BACKEND_TOP)
    lines += ["  %-19s %s" % ("src/%s/" % n, what) for n, what in BACKENDS]
    lines.append("tools/ and bench/: include/convfind.h only" +
                 ("; still allowed, for now:" if ALLOWED else ""))
    lines += ["  " + f for f in ALLOWED]
    return "\n".join(lines)


def files_under(root, top):
    for dirpath, _, names in os.walk(os.path.join(root, top)):
        for n in sorted(names):
            if n.endswith(SOURCES):
                yield os.path.relpath(os.path.join(dirpath, n), root)


def includes(root, rel):
    with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if m:
                yield lineno, m.group(1)


def resolve(root, rel, name, search):
    """The included file relative to root, or None when it is the public header or
    generated; raises LookupError when nothing matches."""
    if name in GENERATED:
        return None
    here = os.path.join(os.path.dirname(rel), name)
    if os.path.isfile(os.path.join(root, here)):
        return os.path.normpath(here)
    for d in search:
        cand = os.path.join(d, name)
        if os.path.isfile(os.path.join(root, cand)):
            return None if d == "include" else os.path.normpath(cand)
    raise LookupError(name)


def directory(path):
    """The directory of src/ a file belongs to (its first component under src/)."""
    return path.split(os.sep)[1]


def check_src(root, ranks, errors):
    backends = {n for n, _ in BACKENDS}
    edges = {}  # (from dir, to dir) -> first "file:line"
    for rel in files_under(root, "src"):
        d = directory(rel)
        if d not in ranks and d not in backends:
            errors.append("%s: directory src/%s/ is in no layer (tests/layers/check_layers.py)"
                          % (rel, d))
            continue
        for lineno, name in includes(root, rel):
            where = "%s:%d" % (rel, lineno)
            try:
                target = resolve(root, rel, name, ["src", "include"])
            except LookupError:
                errors.append('%s: #include "%s" names no file of src/ or include/' % (where, name))
                continue
            if target is None or not target.startswith("src" + os.sep):
                continue
            e = directory(target)
            if e == d:
                continue
            edges.setdefault((d, e), where)
            if e in backends:
                errors.append('%s: #include "%s": the %s backend is reached only through '
                              "algo/backend.h" % (where, name, e))
            elif e not in ranks:
                errors.append('%s: #include "%s": src/%s/ is in no layer' % (where, name, e))
            elif d in backends:
                if ranks[e] > ranks[BACKEND_TOP]:
                    errors.append('%s: #include "%s": a backend includes layers up to %s/, '
                                  "not %s/" % (where, name, BACKEND_TOP, e))
            elif ranks[e] >= ranks[d]:
                errors.append('%s: #include "%s": %s/ is %s %s/' % (
                    where, name, e, "above" if ranks[e] > ranks[d] else "beside", d))
    return edges


def cycles(edges):
    """Every directory cycle once, as a list of directories (first repeated last)."""
    graph = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
    found, seen = [], set()

    def visit(node, path):
        for nxt in sorted(graph.get(node, ())):
            if nxt in path:
                cyc = path[path.index(nxt):] + [nxt]
                key = frozenset(cyc)
                if key not in seen:
                    seen.add(key)
                    found.append(cyc)
            else:
                visit(nxt, path + [nxt])

    for start in sorted(graph):
        visit(start, [start])
    return found


def check_outside(root, errors):
    violating = set()
    for top in ("tools", "bench"):
        for rel in files_under(root, top):
            for lineno, name in includes(root, rel):
                search = [os.path.dirname(rel)] + OUTSIDE_SEARCH
                try:
                    target = resolve(root, rel, name, search)
                except LookupError:
                    errors.append('%s:%d: #include "%s" names no file' % (rel, lineno, name))
                    continue
                if target is None or not target.startswith("src" + os.sep):
                    continue
                violating.add(rel)
                if rel not in ALLOWED:
                    errors.append('%s:%d: #include "%s": tools/ and bench/ use only '
                                  "include/convfind.h" % (rel, lineno, name))
    for rel in ALLOWED:
        if rel not in violating:
            errors.append("%s: in ALLOWED but includes no library-internal header any more: "
                          "remove it from tests/layers/check_layers.py and "
                          "docs/architecture.md" % rel)


def check_docs(root, errors):
    path = os.path.join(root, "docs", "architecture.md")
    if not os.path.isfile(path):
        errors.append("docs/architecture.md is missing")
        return
    with open(path, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"<!-- layers:begin -->\n```\n(.*?)\n```\n<!-- layers:end -->", text, re.S)
    if not m:
        errors.append("docs/architecture.md: no ```-block between <!-- layers:begin --> and "
                      "<!-- layers:end -->")
    elif m.group(1) != table():
        errors.append("docs/architecture.md: the layer table differs from the rules; it "
                      "should read (check_layers.py --table):\n" + table())


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    if "--table" in argv[2:]:
        print(table())
        return 0
    root = argv[1]
    errors = []
    ranks = rank_of()
    edges = check_src(root, ranks, errors)
    for cyc in cycles(edges):
        errors.append("include cycle between directories: %s (%s)" % (
            " -> ".join(cyc),
            ", ".join(edges[(a, b)] for a, b in zip(cyc, cyc[1:]))))
    check_outside(root, errors)
    check_docs(root, errors)
    print("tools/ and bench/ files still allowed to include library-internal headers "
          "(%d):" % len(ALLOWED))
    for rel in ALLOWED:
        print("  " + rel)
    for e in errors:
        print("FAIL " + e)
    print("%s: %d directories of src/, %d include edges between them, %d problems"
          % ("FAILED" if errors else "passed", len({a for a, _ in edges} | {b for _, b in edges}),
             len(edges), len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
