#!/usr/bin/env python3
"""No circle inside a folder of src/, enforced at build time (meson.build
runs this as the build_by_default target 'circles' over every folder's
objects). check_layers.py keeps the folders' arrows pointing down; this
keeps the files inside one folder in an order too: if a.c calls a function
defined in b.c, b.c must not reach back to a.c through any chain of calls.

What counts is read from the object files, not from the includes: most
folders have one header for all their files (attn.h, rlvk.h, rope.h), so
includes say nothing about which file uses which. nm -P lists each
object's undefined symbols (U) and its global definitions; an edge a -> b
is a symbol a leaves undefined that b defines as a function (T, W, i).
References to data (D, B, R, C, V) are no edges: a registry names its
entries by data (rope_scaling.c's table of const rope_scaling entries,
pe.c's families, exp_registry.c's kinds) while each entry calls the
registry's helpers; that seam is the registry's plugin direction, not a
circle. Static functions (t) never cross a file.

A circle (a strongly connected set of files) is printed with one cycle
through it and every call inside it, and fails the build. Usage:

  check_circles.py NM SRC_DIR STAMP OBJECT...

Each OBJECT is meson's object of a source under SRC_DIR (its path with '/'
as '_', e.g. src_attn_attn_gpu.c.o); its folder is the path's first part.
"""
import collections
import os
import subprocess
import sys

FUNCTION_TYPES = set("TWi")


def source_names(src):
    """meson's object basename -> source path relative to the tree root."""
    top = os.path.dirname(os.path.abspath(src))
    names = {}
    for dirpath, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".c"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, f), top)
            key = rel.replace(os.sep, "_") + ".o"
            if key in names:
                raise SystemExit("circles: %s and %s give the same object name" % (names[key], rel))
            names[key] = rel
    return names


def symbols(nm, objs):
    """{obj: (undefined set, {defined function})} from one nm -P -A run."""
    out = subprocess.run([nm, "-P", "-A"] + objs, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit("circles: %s failed: %s" % (nm, out.stderr.strip()))
    und = collections.defaultdict(set)
    funcs = collections.defaultdict(set)
    for line in out.stdout.splitlines():
        where, _, rest = line.rpartition(": ")
        parts = rest.split()
        if not where or len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == "U":
            und[where].add(name)
        elif kind in FUNCTION_TYPES:
            funcs[where].add(name)
    return und, funcs


def strongly_connected(nodes, edges):
    """Tarjan's algorithm (iterative); the sets of more than one node."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def one_cycle(comp, edges):
    """A shortest cycle through the first file of comp (breadth first)."""
    start, inside = comp[0], set(comp)
    prev, queue = {start: None}, [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(edges[v]):
            if w == start:
                path = []
                while v is not None:
                    path.append(v)
                    v = prev[v]
                return path[::-1] + [start]
            if w in inside and w not in prev:
                prev[w] = v
                queue.append(w)
    return comp + [comp[0]]


def main(argv):
    nm, src, stamp, objs = argv[1], argv[2], argv[3], argv[4:]
    names = source_names(src)
    und, funcs = symbols(nm, objs)
    by_folder = collections.defaultdict(list)
    path_of = {}
    for o in objs:
        base = os.path.basename(o)
        if base not in names:
            raise SystemExit("circles: %s is not the object of a source under %s" % (o, src))
        path_of[o] = names[base]
        by_folder[names[base].split("/")[1]].append(o)
    bad, n_edges = [], 0
    for folder in sorted(by_folder):
        members = sorted(by_folder[folder], key=lambda o: path_of[o])
        owner = {}
        for o in members:
            for s in funcs[o]:
                owner[s] = o
        edges = collections.defaultdict(dict)
        for o in members:
            for s in und[o]:
                d = owner.get(s)
                if d is not None and d != o:
                    edges[o].setdefault(d, set()).add(s)
        n_edges += sum(len(v) for v in edges.values())
        short = lambda o: os.path.relpath(path_of[o], "src/" + folder)
        for comp in strongly_connected(members, edges):
            cycle = one_cycle(comp, edges)
            text = short(cycle[0])
            for a, b in zip(cycle, cycle[1:]):
                text += " -> %s (%s)" % (short(b), ", ".join(sorted(edges[a][b])))
            lines = ["src/%s/: a circle of %d files: %s" % (folder, len(comp), text)]
            for a in comp:
                for b in comp:
                    if b in edges[a]:
                        lines.append("    %s calls %s: %s" % (path_of[a], path_of[b],
                                                             ", ".join(sorted(edges[a][b]))))
            bad.append("\n".join(lines))
    if bad:
        sys.stderr.write("circles: %d circle(s) between the files of a folder (move the helper "
                         "that closes it into the file below; tools/check_circles.py):\n"
                         % len(bad))
        sys.stderr.write("\n".join(bad) + "\n")
        return 1
    with open(stamp, "w") as f:
        f.write("%d file-to-file call edges checked over %d folders (%d objects): no circle\n"
                % (n_edges, len(by_folder), len(objs)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
