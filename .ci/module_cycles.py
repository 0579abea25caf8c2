#!/usr/bin/env python3
"""Module import cycles of a crate (issue #15: none in softrnic).

usage: module_cycles.py CRATE/src[/MODULE] [--top] [--tests]

Builds the graph of `use crate::`, `crate::`, `super::` and `self::` paths
between the crate's files (each path resolved to the longest module prefix
that is a file) and prints its strongly connected components of more than
one module; `--top` collapses modules to their top-level module first.
A parent's `mod child;` is not an edge. Exit status 1 if any cycle exists.
`use` groups are followed at any depth (`super::{a, b}`, `super::super::x`,
`self::`), relative to the inline module they sit in; comments, string
literals and `pub(in ...)` are not paths. Test code (`#[cfg(test)] mod`,
inline or a file) is left out, as tests may reach across floors; `--tests`
puts it back.
A folder below `src/` (src/driver) is the module it holds: its own
`crate::driver::...` paths are followed, paths elsewhere in the crate are not.
"""
import os, re, sys
root = sys.argv[1]  # crates/softrnic/src, or src/driver
# The module path of `root` inside its crate: '' for a crate's src/,
# 'driver' for src/driver.
_parts = os.path.normpath(root).split(os.sep)
prefix = '::'.join(_parts[len(_parts) - _parts[::-1].index('src'):]) if 'src' in _parts else ''
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
    if prefix:
        if path == prefix:
            return ''
        if not path.startswith(prefix + '::'):
            return None
        path = path[len(prefix) + 2:]
    segs = path.split('::')
    for i in range(len(segs), 0, -1):
        m = '::'.join(segs[:i])
        if m in files:
            return m
    return None
def strip(src):
    """Comments, string and char literals and `pub(in ...)` out, so that
    braces and paths left are code."""
    src = re.sub(r'/\*.*?\*/', '', src, flags=re.S)
    src = re.sub(r'//[^\n]*', '', src)
    src = re.sub(r'r(#*)"(.*?)"\1', '""', src, flags=re.S)
    src = re.sub(r'b?"(\\.|[^"\\])*"', '""', src, flags=re.S)
    src = re.sub(r"b?'(\\.|[^\\'])'", "' '", src)
    src = re.sub(r'pub\s*\(\s*in\s+[^)]*\)', 'pub', src)
    return src
CFG_TEST = r'(#\[cfg\(test\)\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?)?'
def inline_mods(src):
    """(start, end, name, is_test) of each inline `mod name { ... }` block."""
    out = []
    for mm in re.finditer(CFG_TEST + r'\bmod\s+([A-Za-z_][A-Za-z0-9_]*)\s*\{', src):
        depth = 0
        for j in range(mm.end() - 1, len(src)):
            if src[j] == '{': depth += 1
            elif src[j] == '}':
                depth -= 1
                if depth == 0:
                    out.append((mm.end(), j, mm.group(2), mm.group(1) is not None))
                    break
    return out
def test_children(src):
    """Names of the `#[cfg(test)] mod name;` files a module declares."""
    return {mm.group(2) for mm in re.finditer(CFG_TEST + r'\bmod\s+([A-Za-z_][A-Za-z0-9_]*)\s*;', src) if mm.group(1)}
def split_group(inner):
    depth = 0; cur = ''; out = []
    for ch in inner:
        if ch == '{': depth += 1
        if ch == '}': depth -= 1
        if ch == ',' and depth == 0:
            out.append(cur); cur = ''
        else: cur += ch
    out.append(cur)
    return [o for o in out if o.strip()]
def expand(prefix, s):
    """Paths named by one `use` tree, each a list of segments."""
    s = re.sub(r'\s+as\s+[A-Za-z_][A-Za-z0-9_]*', '', s)
    s = re.sub(r'\s+', '', s)
    if '{' in s:
        i = s.index('{')
        pre = [x for x in s[:i].split('::') if x]
        res = []
        for o in split_group(s[i+1:s.rindex('}')]):
            res += expand(prefix + pre, o)
        return res
    segs = [x for x in s.split('::') if x]
    if segs and segs[-1] in ('self', '*'): segs = segs[:-1]
    return [prefix + segs]
def anchor(base, segs):
    """Absolute module path of `segs` (starting crate/super/self) seen from
    module `base`, or None for other roots (std, extern crates)."""
    if not segs: return None
    if segs[0] == 'crate': return segs[1:]
    if segs[0] not in ('super', 'self'): return None
    cur = list(base)
    while segs and segs[0] in ('super', 'self'):
        if segs[0] == 'super':
            if not cur: return None
            cur = cur[:-1]
        segs = segs[1:]
    return cur + segs
with_tests = '--tests' in sys.argv
tests = set()
if not with_tests:
    for m, p in files.items():
        for name in test_children(strip(open(p).read())):
            tests.add('::'.join(([m] if m else []) + [name]))
    for m in files:
        if any(m == t or m.startswith(t + '::') for t in list(tests)):
            tests.add(m)
edges = {m: set() for m in files if m not in tests}
for m in edges:
    p = files[m]
    src = strip(open(p).read())
    mods = inline_mods(src)
    if not with_tests:
        # Test code is blanked out (kept as spaces, so offsets hold).
        for a, b, _, is_test in mods:
            if is_test: src = src[:a] + ' ' * (b - a) + src[b:]
    here = [x for x in (prefix.split('::') if prefix else []) + (m.split('::') if m else []) if x]
    def base_at(pos):
        inner = sorted((a, name) for a, b, name, _ in mods if a <= pos <= b)
        return here + [name for _, name in inner]
    def add(segs):
        if segs is None: return
        t = resolve('::'.join(segs))
        if t is not None and t != m and t not in tests: edges[m].add(t)
    used = []
    for um in re.finditer(r'\buse\s+((?:crate|super|self)(?:::|\s)[^;]*);', src, re.S):
        used.append((um.start(), um.end()))
        base = base_at(um.start())
        for segs in expand([], um.group(1)):
            add(anchor(base, segs))
    for um in re.finditer(r'\b((?:crate|super|self)(?:::(?:super|self))*)::([A-Za-z_][A-Za-z0-9_:]*)', src):
        if any(a <= um.start() < b for a, b in used): continue
        segs = um.group(1).split('::') + [x for x in um.group(2).split('::') if x]
        add(anchor(base_at(um.start()), segs))
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
