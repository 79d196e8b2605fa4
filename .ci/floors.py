#!/usr/bin/env python3
"""Fails when edgert's modules import each other in a circle, or clap is used below the command
line (docs/architecture.md, floors).

Every `crate::…` and `super::…` path in non-test code of runtime/src is an edge from its file's
module to the module it names; test files and `mod tests` blocks are left out (tests may import
from any floor). Two checks: no two files' modules import each other, and the graph of top-level
modules (`backend`, `capture`, `preprocess`, …) has no cycle. And no file outside cli/ names
clap: the library's closed sets of values implement `Choice`, which cli/choices.rs makes clap values.
"""
import collections
import glob
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "runtime", "src")


def module_of(path):
    parts = path[:-3].split("/")
    return tuple(parts[:-1] if parts[-1] in ("mod", "lib", "main") else parts)


def main():
    os.chdir(ROOT)
    files = [f for f in glob.glob("**/*.rs", recursive=True)
             if not re.search(r"(^|/)tests?\.rs$|_tests\.rs$|/tests/", f)]
    modules = {module_of(f) for f in files}
    edges = set()
    for f in files:
        me = module_of(f)
        text = re.sub(r"#\[cfg\(test\)\]\s*mod tests\s*\{.*", "", open(f).read(), flags=re.S)
        for m in re.finditer(r"\b(crate|super)((?:::\w+)+)", text):
            target = ([] if m.group(1) == "crate" else list(me[:-1])) + m.group(2).strip(":").split("::")
            named = next((tuple(target[:k]) for k in range(len(target), 0, -1) if tuple(target[:k]) in modules), None)
            if named and named != me and me[:len(named)] != named and named[:len(me)] != me:
                edges.add((me, named))
    found = [f"{'::'.join(a)} <-> {'::'.join(b)}" for a, b in edges if (b, a) in edges and a < b]
    graph = collections.defaultdict(set)
    for a, b in edges:
        if a[0] != b[0]:
            graph[a[0]].add(b[0])
    for start in sorted(graph):
        stack, seen = [(start, [start])], set()
        while stack:
            node, path = stack.pop()
            for nxt in sorted(graph[node]):
                if nxt == start:
                    found.append(" -> ".join(path + [start]))
                elif nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, path + [nxt]))
    clap = sorted(f for f in files
                  if not f.startswith("cli/") and f != "main.rs"
                  and re.search(r"\bclap\b", re.sub(r"//.*", "", open(f).read())))
    if found:
        print("module cycles:\n  " + "\n  ".join(sorted(set(found))))
    if clap:
        print("clap outside cli/ (make the type a `Choice`, see cli/choices.rs):\n  " + "\n  ".join(clap))
    if found or clap:
        return 1
    print(f"module cycles: none ({len(files)} files, {len(edges)} imports between modules); clap only in cli/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
