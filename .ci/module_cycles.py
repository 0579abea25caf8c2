#!/usr/bin/env python3
"""Module import cycles of a crate (issue #15: none in softrnic).

usage: module_cycles.py CRATE/src [--top]

Builds the graph of `use crate::`, `crate::`, `super::` and `self::` paths
between the crate's files (each path resolved to the longest module prefix
that is a file) and prints its strongly connected components of more than
one module; `--top` collapses modules to their top-level module first.
A parent's `mod child;` is not an edge. Exit status 1 if any cycle exists.
"""
import os, re, sys
root = sys.argv[1]  # crates/softrnic/src
files = {}
for dp, _, fns in os.walk(root):
    for fn in fns:
        if fn.endswith('.rs'):
            p = os.path.join(dp, fn)
            rel = os.path.relpath(p, root)[:-3]
            parts = rel.split('/')
            if parts[-1] in ('mod', 'lib'):
                parts = parts[:-1]
            files['::'.join(parts)] = p
def resolve(path):
    # longest prefix that is a module file
    segs = path.split('::')
    for i in range(len(segs), 0, -1):
        m = '::'.join(segs[:i])
        if m in files:
            return m
    return None
edges = {m: set() for m in files}
for m, p in files.items():
    src = open(p).read()
    # strip comments
    src = re.sub(r'//[^\n]*', '', src)
    # crate:: paths, including inside use {...} groups
    for um in re.finditer(r'use\s+crate::([^;]+);', src, re.S):
        body = um.group(1)
        def expand(prefix, s):
            s = s.strip()
            if '{' in s:
                i = s.index('{')
                pre = s[:i].rstrip(':').strip()
                inner = s[i+1:s.rindex('}')]
                depth = 0; cur = ''; out = []
                for ch in inner:
                    if ch == '{': depth += 1
                    if ch == '}': depth -= 1
                    if ch == ',' and depth == 0:
                        out.append(cur); cur = ''
                    else: cur += ch
                out.append(cur)
                res = []
                for o in out:
                    if o.strip():
                        res += expand((prefix + '::' + pre) if pre else prefix, o)
                return res
            s = s.split(' as ')[0].strip()
            if s in ('self',): return [prefix]
            return [(prefix + '::' + s) if prefix else s]
        for path in expand('', body):
            t = resolve(path.strip(':'))
            if t is not None and t != m: edges[m].add(t)
    for um in re.finditer(r'(?<!use )\bcrate::([A-Za-z_][A-Za-z0-9_:]*)', src):
        t = resolve(um.group(1).strip(':'))
        if t is not None and t != m: edges[m].add(t)
    for um in re.finditer(r'\bself::([A-Za-z_][A-Za-z0-9_:]*)', src):
        base = m.split('::') if m else []
        t = resolve('::'.join(base + [um.group(1)]).strip(':'))
        if t is not None and t != m: edges[m].add(t)
    # super:: imports
    for um in re.finditer(r'\bsuper::([A-Za-z_][A-Za-z0-9_:]*)', src):
        base = m.split('::')
        isdir = p.endswith('mod.rs')
        parent = base[:-1] if not isdir else base[:-1]
        t = resolve('::'.join(parent + [um.group(1)]).strip(':'))
        if t is None: t = '::'.join(parent) if '::'.join(parent) in files else None
        if t is not None and t != m: edges[m].add(t)
if '--top' in sys.argv:
    top = lambda x: x.split('::')[0]
    e2 = {}
    for a, bs in edges.items():
        e2.setdefault(top(a), set())
        for b in bs:
            if top(b) != top(a): e2[top(a)].add(top(b))
    edges = e2
# Tarjan
idx = {}; low = {}; st = []; on = set(); sccs = []; c = [0]
sys.setrecursionlimit(10000)
def sc(v):
    idx[v] = low[v] = c[0]; c[0] += 1; st.append(v); on.add(v)
    for w in edges[v]:
        if w not in idx: sc(w); low[v] = min(low[v], low[w])
        elif w in on: low[v] = min(low[v], idx[w])
    if low[v] == idx[v]:
        comp = []
        while True:
            w = st.pop(); on.discard(w); comp.append(w)
            if w == v: break
        sccs.append(comp)
for v in edges:
    if v not in idx: sc(v)
bad = [s for s in sccs if len(s) > 1]
for s in bad:
    print(len(s), sorted(s))
    for v in sorted(s):
        print('   ', v, '->', sorted(x for x in edges[v] if x in s))
print('cycles:', len(bad))
sys.exit(1 if bad else 0)
