#!/usr/bin/env bash
# Checks that no two source files under src/ depend on each other, even
# through others: lists every edge from one file to another (a `use` of
# `crate::`, `super::`, `self::` or a child module, and the same paths
# written inline in code, e.g. `crate::report::live::stats_thread(..)`)
# and reports each cycle among the files. A name a `mod.rs` re-exports
# (`pub use plan::Plan`) counts as the file that defines it; `mod x;`
# itself is no edge, nor is a file's use of itself. Comments and string
# literals are skipped, and so are visibility paths (`pub(in crate::x)`);
# `#[cfg(test)]` modules count like any code. Each binary (src/main.rs,
# src/bin/x.rs, src/bin/x/main.rs and its modules) is a crate of its own:
# its `crate::` paths lead to its own files, `tqfwd::` to the library's.
#
#   scripts/check-imports.sh            # src/ of this repository
#   scripts/check-imports.sh --edges    # also print every edge
#   scripts/check-imports.sh DIR        # another src/ tree
#
# Exit 1 when there is a cycle, or an edge between src/forward/ and
# src/report/ (kept apart: both use src/counters/). Before the real tree
# it checks a small tree with a known cycle and a planted edge between
# the two, so a checker that finds nothing cannot pass.
set -euo pipefail
cd "$(dirname "$0")/.."

check() {
    python3 - "$@" <<'PY'
import os
import re
import sys

args = sys.argv[1:]
show_edges = "--edges" in args
args = [a for a in args if a != "--edges"]
root = args[0] if args else "src"

def strip(text):
    """The code of `text` with comments and string/char literals blanked
    (lengths kept, so braces still nest)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i)); i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j): depth += 1; j += 2
                elif text.startswith("*/", j): depth -= 1; j += 2
                else: j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j])); i = j
        elif re.match(r'b?r#*"', text[i:i + 40]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'(b?r)(#*)"', text[i:])
            end = '"' + m.group(2)
            j = text.find(end, i + len(m.group(0)))
            j = n if j < 0 else j + len(end)
            out.append(re.sub(r"[^\n]", " ", text[i:j])); i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j])); i = j
        elif c == "'":
            m = re.match(r"'(\\(x..|u\{[0-9a-fA-F]+\}|.)|[^\\'])'", text[i:])
            if m:
                out.append(" " * len(m.group(0))); i += len(m.group(0))
            else:  # a lifetime
                out.append(c); i += 1
        else:
            out.append(c); i += 1
    return "".join(out)

# Every file, its crate and its module path in that crate. The library:
# src/lib.rs = [], src/a/mod.rs = [a], src/a/b.rs = [a, b]. Each binary is
# a crate of its own, with its own `crate::` root: src/main.rs, src/bin/x.rs
# and src/bin/x/main.rs are roots ([]), src/bin/x/a.rs = [a] and
# src/bin/x/a/b.rs = [a, b] in crate bin/x. A binary reaches the library
# as `tqfwd::`.
files = {}
for d, _, names in os.walk(root):
    for f in names:
        if f.endswith(".rs"):
            p = os.path.relpath(os.path.join(d, f), root)
            files[p] = None

def crate_and_module(p):
    parts = p[:-3].split("/")
    if p == "main.rs":
        return "main", []
    if parts[0] == "bin":
        if len(parts) == 2:
            return "bin/" + parts[1], []
        crate, parts = "bin/" + parts[1], parts[2:]
        if parts == ["main"]:
            return crate, []
    else:
        crate = "lib"
        if p == "lib.rs":
            return crate, []
    if parts[-1] == "mod":
        parts = parts[:-1]
    return crate, parts

mods = {}
for p in files:
    crate, mod = crate_and_module(p)
    mods[(crate, tuple(mod))] = p
crate_name = "tqfwd"

def file_of(path):
    """The file that holds module path `path` = (crate, [segments]) (its
    longest prefix that is a file), and the rest of the path."""
    crate, segs = path
    for k in range(len(segs), -1, -1):
        if (crate, tuple(segs[:k])) in mods:
            return mods[(crate, tuple(segs[:k]))], list(segs[k:])
    return "lib.rs", list(segs)

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"

def use_trees(code):
    """(start offset, text) of each `use ...;` in `code`."""
    for m in re.finditer(r"(?<![A-Za-z0-9_])use\s+", code):
        end = code.find(";", m.end())
        if end > 0:
            yield m.start(), code[m.end():end]

def expand(tree):
    """`a::{b, c::{d as e, self}}` -> [(["a","b"], "b"), (["a","c","d"], "e"), (["a","c"], "c")]."""
    tree = re.sub(r"\s+", "", tree)
    out = []
    def go(prefix, t):
        # split t at top-level commas
        parts, depth, cur = [], 0, ""
        for ch in t:
            if ch == "{": depth += 1
            if ch == "}": depth -= 1
            if ch == "," and depth == 0:
                parts.append(cur); cur = ""
            else:
                cur += ch
        if cur: parts.append(cur)
        for part in parts:
            if not part: continue
            if "{" in part:
                head, inner = part.split("{", 1)
                inner = inner[:inner.rfind("}")]
                go(prefix + [s for s in head.split("::") if s], inner)
            else:
                segs = [s for s in part.split("::") if s]
                if segs and segs[-1] == "self":
                    segs = segs[:-1]
                if segs:
                    out.append((prefix + segs, segs[-1]))
    go([], tree)
    return out

def expand_use(text):
    # keep `as` aliases: rewrite `x as y` to `x@y` before spaces go
    text = re.sub(r"(" + IDENT + r")\s+as\s+(" + IDENT + r")", r"\1@\2", text)
    res = []
    for segs, last in expand(text):
        alias = last
        if "@" in segs[-1]:
            segs[-1], alias = segs[-1].split("@")
        if alias == "_":
            alias = None
        res.append((segs, alias))
    return res

# Per file: its code, the module of each offset (inline `mod x { }`
# blocks nest), its child modules, its `use` paths, its re-exports.
info = {}
for p in sorted(files):
    text = open(os.path.join(root, p), encoding="utf-8").read()
    # A visibility path (`pub(in crate::dpdk)`) says where an item may be
    # seen, not what the file uses: blanked like a comment.
    code = re.sub(r"pub\s*\(\s*in\s+[^)]*\)", lambda m: " " * len(m.group(0)), strip(text))
    crate, base = crate_and_module(p)
    # inline modules: (start, end, name)
    inline = []
    for m in re.finditer(r"(?<![A-Za-z0-9_])mod\s+(" + IDENT + r")\s*\{", code):
        depth, j = 1, m.end()
        while j < len(code) and depth:
            if code[j] == "{": depth += 1
            elif code[j] == "}": depth -= 1
            j += 1
        inline.append((m.start(), j, m.group(1)))
    def module_at(off, base=base, inline=inline):
        path = list(base)
        for s, e, name in inline:
            if s <= off < e:
                path.append(name)
        return path
    children = set(re.findall(r"(?<![A-Za-z0-9_])mod\s+(" + IDENT + r")\s*[;{]", code))
    info[p] = dict(code=code, module_at=module_at, children=children, crate=crate, base=base)

def absolute(p, off, segs):
    """The path (crate, [segments]) of `segs` as written at offset `off` of
    file `p`, or None when it leaves this project (std, clap, ...)."""
    i = info[p]
    crate = i["crate"]
    here = i["module_at"](off)
    s = list(segs)
    if s[0] == "crate":
        return crate, s[1:]
    if s[0] == crate_name and crate != "lib":
        return "lib", s[1:]
    if s[0] in ("super", "self"):
        cur = list(here)
        while s and s[0] in ("super", "self"):
            if s[0] == "super":
                if not cur:
                    return None
                cur = cur[:-1]
            s = s[1:]
        return crate, cur + s
    if s[0] in i["children"]:
        return crate, here + s
    return None

# Re-exports: file -> {name: crate path}
reexports = {p: {} for p in info}
uses = {p: [] for p in info}
for p, i in info.items():
    for off, tree in use_trees(i["code"]):
        public = re.search(r"pub(\([^)]*\))?\s*$", i["code"][max(0, off - 20):off]) is not None
        for segs, alias in expand_use(tree):
            if segs[-1] == "*":
                a = absolute(p, off, segs[:-1])
                if a is not None:
                    uses[p].append((off, a, None, "::".join(segs)))
                continue
            a = absolute(p, off, segs)
            if a is None:
                continue
            uses[p].append((off, a, alias, "::".join(segs)))
            if public and alias:
                reexports[p][alias] = a

def resolve(path, depth=0):
    f, rest = file_of(path)
    if rest and depth < 8 and rest[0] in reexports.get(f, {}):
        crate, segs = reexports[f][rest[0]]
        target = (crate, segs + rest[1:])
        if target != path:
            return resolve(target, depth + 1)
    return f

edges = {}
def add(a, b, why):
    if a != b:
        edges.setdefault(a, {}).setdefault(b, why)

for p, i in info.items():
    code = i["code"]
    aliases = {}
    use_spans = []
    for off, tree in use_trees(code):
        use_spans.append((off, code.find(";", off)))
    for off, a, alias, written in uses[p]:
        add(p, resolve(a), "use " + written)
        if alias:
            aliases[alias] = a
    # inline paths: crate::a::b, super::x, self::x, child::x, alias::x
    for m in re.finditer(r"(?<![A-Za-z0-9_:])(" + IDENT + r")((?:::" + IDENT + r")+)", code):
        if any(s <= m.start() <= e for s, e in use_spans):
            continue
        segs = [m.group(1)] + [x for x in m.group(2).split("::") if x]
        a = absolute(p, m.start(), segs)
        if a is None and segs[0] in aliases:
            a = (aliases[segs[0]][0], aliases[segs[0]][1] + segs[1:])
        if a is None:
            continue
        add(p, resolve(a), "::".join(segs))

if show_edges:
    for a in sorted(edges):
        for b in sorted(edges[a]):
            print(f"{a} -> {b}    ({edges[a][b]})")

# Cycles: the strongly connected components with more than one file
# (Tarjan), each printed with one cycle through it.
index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]
sys.setrecursionlimit(10000)
def strong(v):
    index[v] = low[v] = counter[0]; counter[0] += 1
    stack.append(v); on.add(v)
    for w in edges.get(v, {}):
        if w not in index:
            strong(w); low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop(); on.discard(w); comp.append(w)
            if w == v: break
        if len(comp) > 1:
            comps.append(sorted(comp))
for v in sorted(set(edges) | {w for e in edges.values() for w in e}):
    if v not in index:
        strong(v)

def one_cycle(comp):
    start = comp[0]
    inside = set(comp)
    # shortest path from start back to start inside the component
    prev, frontier, seen = {}, [start], {start}
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(edges.get(v, {})):
                if w not in inside: continue
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(prev[path[-1]])
                    path.reverse()
                    return path + [start]
                if w not in seen:
                    seen.add(w); prev[w] = v; nxt.append(w)
        frontier = nxt
    return comp

n_edges = sum(len(e) for e in edges.values())
for comp in comps:
    cyc = one_cycle(comp)
    print("cycle: " + " -> ".join(f"{root}/{f}" for f in cyc))
    for a, b in zip(cyc, cyc[1:]):
        print(f"    {root}/{a} -> {root}/{b}: {edges[a][b]}")
    if len(comp) > len(cyc) - 1:
        print("    (files in this circle: " + ", ".join(f"{root}/{f}" for f in comp) + ")")
# Folders kept apart in both directions: the stages write the counters
# (src/counters/), the reports read them, and neither imports the other.
APART = [("forward/", "report/")]
apart = [(a, b) for a in sorted(edges) for b in sorted(edges[a])
         for x, y in APART
         if (a.startswith(x) and b.startswith(y)) or (a.startswith(y) and b.startswith(x))]
for a, b in apart:
    print(f"apart: {root}/{a} -> {root}/{b}: {edges[a][b]}")
print(f"{len(info)} files, {n_edges} edges between them, {len(comps)} cycle(s), "
      f"{len(apart)} edge(s) between folders kept apart")
sys.exit(1 if comps or apart else 0)
PY
}

# The checker must find two known cycles: in the library, a -> b -> mod.rs's
# re-export of a; in a binary crate, whose `crate::` is its own root (its
# module `m` is not the library's), m -> n -> m.
selftest=$(mktemp -d)
trap 'rm -rf "$selftest"' EXIT
mkdir -p "$selftest/m" "$selftest/bin/x"
cat >"$selftest/bin/x/main.rs" <<'EOF'
mod m;
mod n;
fn main() { n::run(tqfwd::c::C) }
EOF
cat >"$selftest/bin/x/m.rs" <<'EOF'
pub struct M;
pub fn make() -> M { crate::n::touch(); M }
EOF
cat >"$selftest/bin/x/n.rs" <<'EOF'
use crate::m::M;
pub fn touch() {}
pub fn run(_: tqfwd::c::C) { let _m: M = super::m::make(); }
EOF
cat >"$selftest/lib.rs" <<'EOF'
pub mod m;
pub mod c;
EOF
cat >"$selftest/m/mod.rs" <<'EOF'
pub mod a;
pub mod b;
pub use a::A;
EOF
cat >"$selftest/m/a.rs" <<'EOF'
use super::b::{self, B}; // "crate::c" in a comment is no edge
pub struct A(B);
EOF
cat >"$selftest/m/b.rs" <<'EOF'
pub struct B;
pub fn f() -> usize { let _ = "crate::c::C"; std::mem::size_of::<crate::m::A>() }
EOF
cat >"$selftest/c.rs" <<'EOF'
pub struct C;
EOF
mkdir -p "$selftest/forward" "$selftest/report"
cat >"$selftest/forward/s.rs" <<'EOF'
pub fn s() -> u64 { crate::report::r::R }
EOF
cat >"$selftest/report/r.rs" <<'EOF'
pub const R: u64 = 0;
EOF
if out=$(check "$selftest"); then
    echo "check-imports: self-test: the cycles m/a.rs -> m/b.rs and bin/x/m.rs -> bin/x/n.rs were not found" >&2
    echo "$out" >&2
    exit 2
fi
if ! grep -q "^cycle: $selftest/m/a.rs -> $selftest/m/b.rs -> $selftest/m/a.rs\$" <<<"$out" ||
    ! grep -q "^cycle: $selftest/bin/x/m.rs -> $selftest/bin/x/n.rs -> $selftest/bin/x/m.rs\$" <<<"$out" ||
    ! grep -q ", 2 cycle(s), 1 edge(s) between folders kept apart\$" <<<"$out" ||
    ! grep -q "^apart: $selftest/forward/s.rs -> $selftest/report/r.rs" <<<"$out" ||
    grep -q "/c\.rs" <<<"$out"; then
    echo "check-imports: self-test: unexpected report:" >&2
    echo "$out" >&2
    exit 2
fi

check "$@"
