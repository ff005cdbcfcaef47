#!/usr/bin/env python3
"""Lists include circles in src/, at two levels.

Modules: a module is a .c/.cu file together with its .h of the same name
(resize.c + resize.h); module A depends on module B when a file of A includes
a header of B. A circle is a strongly connected group holding two or more
modules that have a .c/.cu (a header-only helper such as color_pixel.h,
included by its module's files and including its module's header, is part
of that module, not a circle).
Folders: the first folder under src/ (core, cuda, codec, io, ops, pipeline);
folder A depends on B when a file of A includes a header of B.

Prints each circle and the include lines inside it. Exit status 1 when there
is a module circle.

    python3 tools/include_cycles.py [src]
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def modules(root):
    files = {}
    for d, _, names in os.walk(root):
        for n in names:
            if n.endswith(('.c', '.cu', '.h', '.cuh', '.inc')):
                p = os.path.relpath(os.path.join(d, n), root)
                files[p] = open(os.path.join(d, n), errors='replace').read()
    return files


def resolve(root, includer, inc, files):
    for base in (os.path.dirname(includer), ''):
        p = os.path.normpath(os.path.join(base, inc))
        if p in files:
            return p
    return None


def module_of(path):
    return os.path.splitext(path)[0]


def folder_of(path):
    return path.split(os.sep)[0] if os.sep in path else '.'


def circles(files, root, group):
    edges = {}
    for f, text in files.items():
        for inc in INCLUDE.findall(text):
            target = resolve(root, f, inc, files)
            if not target:
                continue
            a, b = group(f), group(target)
            if a != b:
                edges.setdefault(a, {}).setdefault(b, []).append(f'{f} -> {target}')
    # Tarjan's strongly connected components.
    index, low, stack, on, sccs, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(sorted(comp))

    for v in sorted({group(f) for f in files}):
        if v not in index:
            visit(v)
    return sorted(sccs), edges


def report(title, sccs, edges):
    for comp in sccs:
        print(f'{title} circle: ' + ' <-> '.join(comp))
        members = set(comp)
        for a in comp:
            for b, lines in sorted(edges.get(a, {}).items()):
                if b in members:
                    for line in lines:
                        print('    ' + line)
    if not sccs:
        print(f'no {title} circles')


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else 'src'
    files = modules(root)
    implemented = {module_of(f) for f in files if f.endswith(('.c', '.cu'))}
    sccs, edges = circles(files, root, module_of)
    sccs = [c for c in sccs if len(implemented.intersection(c)) >= 2]
    report('module', sccs, edges)
    folder_sccs, folder_edges = circles(files, root, folder_of)
    report('folder', folder_sccs, folder_edges)
    return 1 if sccs else 0


if __name__ == '__main__':
    sys.exit(main())
