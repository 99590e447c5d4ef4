#!/usr/bin/env python3
"""Prints the import cycles among a package's modules, counting imports inside functions too.

    python .ci/import_cycles.py [PACKAGE_DIR]     (default: bert_keras; from the repository root)

Exit 1 if there is a cycle. A package's __init__ re-exporting its children is not a cycle; an
import moved into a function to dodge a cycle still is one (marked 'local').
"""
import ast
import os
import sys

root = sys.argv[1] if len(sys.argv) > 1 else "bert_keras"
pkg = os.path.basename(os.path.normpath(root))
mods = {}
for d, _, files in os.walk(root):
    for f in files:
        if f.endswith(".py"):
            path = os.path.join(d, f)
            rel = os.path.relpath(path, os.path.dirname(os.path.normpath(root)))
            rel = rel[:-3].replace(os.sep, ".")
            mods[rel.removesuffix(".__init__")] = path


def resolve(name):
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


edges = {m: set() for m in mods}
local = set()  # (from, to) pairs imported only inside a function
for m, path in mods.items():
    is_pkg = path.endswith("__init__.py")
    tree = ast.parse(open(path, encoding="utf-8").read())
    top = set(map(id, tree.body))
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = m if is_pkg else m.rpartition(".")[0]
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            if node.level:
                mod = base + "." + node.module if node.module else base
            else:
                mod = node.module or ""
            targets = [mod + "." + a.name for a in node.names] + [mod]
        for t in targets:
            r = resolve(t)
            if r and r != m and r.startswith(pkg) and not (is_pkg and r.startswith(m + ".")) \
                    and not m.startswith(r + "."):
                if id(node) in top:
                    local.discard((m, r))
                elif r not in edges[m]:
                    local.add((m, r))
                edges[m].add(r)

cycles, state, stack = [], {}, []


def visit(m):
    state[m] = 1
    stack.append(m)
    for n in sorted(edges[m]):
        if state.get(n) == 1:
            cycles.append(stack[stack.index(n):] + [n])
        elif n not in state:
            visit(n)
    stack.pop()
    state[m] = 2


for m in sorted(mods):
    if m not in state:
        visit(m)
for c in cycles:
    hops = [a + (" -(local)-> " if (a, b) in local else " -> ") for a, b in zip(c, c[1:])]
    print("import cycle: " + "".join(hops) + c[-1])
sys.exit(1 if cycles else 0)
