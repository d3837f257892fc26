#!/usr/bin/env python3
"""The house rules that types cannot state, checked on the sources (run by scripts/test.sh).

- No import circle of more than 3 files inside any crate. A file imports another when it names
  a module of the same crate the other file defines (`use crate::a::b`, `crate::a::f()`,
  `super::x`, `self::child::y`, `child::z`); a name the crate root re-exports (`crate::Engine`) counts as
  an import of the file that defines it. The crate root's own `mod`/`pub use` lines are its
  table of contents, not imports, and test code (an inline `#[cfg(test)] mod`, `tests.rs`,
  `testing.rs`) is skipped. Circles are the strongly connected components of that graph.
- `crates/engine/src` at most 8,000 lines; `crates/cli/src` at most 2,000.
- The engine depends on no store crate, embedder or LLM client (normal dependencies).

Exit status 1 with one line per broken rule.
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_CIRCLE = 3
LINE_LIMITS = {"crates/engine/src": 8000, "crates/cli/src": 2000}
ENGINE_FORBIDDEN = ["mnemos-store-sqlite", "mnemos-store-postgres", "mnemos-embed", "mnemos-llm",
                    "mnemos-offline"]

CHILD_RE = re.compile(r"(?<![:\w])([a-z_][a-z0-9_]*)::")
PATH_RE = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
GROUP_RE = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)*)::\{([^;]*?)\}", re.S)
REEXPORT_RE = re.compile(r"pub use ([a-z_][a-z0-9_]*)(?:::[a-z_][a-z0-9_:]*)?::\{([^}]*)\}|"
                         r"pub use ([a-z_][a-z0-9_]*)(?:::[a-z_][a-z0-9_:]*)?::([A-Za-z_][A-Za-z0-9_]*);")


def modules(src: Path) -> dict:
    """Module path (tuple) -> file, for every file of a crate's `src`."""
    out = {}
    for file in src.rglob("*.rs"):
        rel = file.relative_to(src).with_suffix("")
        parts = list(rel.parts)
        if parts in (["lib"], ["main"]):
            parts = []
        elif parts[-1] == "mod":
            parts = parts[:-1]
        out[tuple(parts)] = file
    return out


def code_of(file: Path) -> str:
    text = file.read_text(encoding="utf-8")
    # An inline test module runs to the end of the file (the house's convention).
    block = re.search(r"#\[cfg\(test\)\]\s*(pub(\([a-z]+\))? )?mod [a-z_]+ \{", text)
    text = text if block is None else text[: block.start()]
    text = re.sub(r"#\[cfg\(test\)\]\s*(pub(\([a-z]+\))? )?mod [a-z_]+;", "", text)
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))


def root_reexports(mods: dict) -> dict:
    """Name -> module path, for what the crate root re-exports from its modules."""
    root = mods.get(())
    if root is None:
        return {}
    out = {}
    for m in REEXPORT_RE.finditer(code_of(root)):
        if m.group(1):
            for name in m.group(2).split(","):
                name = name.strip().split(" as ")[-1].strip()
                if name:
                    out[name] = (m.group(1),)
        else:
            out[m.group(4)] = (m.group(3),)
    return out


def resolve(here: tuple, head: str, rest: list, mods: dict, reexports: dict):
    """The module file a path names (the longest existing module prefix), or None."""
    if head == "crate":
        base = []
    elif head == "super":
        base = list(here[:-1])
        while rest and rest[0] == "super":
            base, rest = base[:-1], rest[1:]
    else:
        base = list(here)
    if head == "crate" and len(rest) == 1 and tuple(rest) not in mods:
        target = reexports.get(rest[0])
        return target if target in mods else None
    for cut in range(len(rest), -1, -1):
        candidate = tuple(base + rest[:cut])
        if candidate in mods and (cut > 0 or head != "crate"):
            return candidate
    return None


def edges(mods: dict) -> dict:
    reexports = root_reexports(mods)
    graph = {m: set() for m in mods}
    for here, file in mods.items():
        if here == () or file.name in ("tests.rs", "testing.rs"):
            continue
        code = code_of(file)
        paths = [(m.group(1), m.group(2)) for m in PATH_RE.finditer(code)]
        for m in GROUP_RE.finditer(code):
            for item in m.group(3).replace("\n", " ").split(","):
                item = item.strip().split(" as ")[0].strip()
                if item and "{" not in item and item != "self":
                    paths.append((m.group(1), m.group(2) + "::" + item))
        for m in CHILD_RE.finditer(code):
            if here + (m.group(1),) in mods and m.group(1) not in ("crate", "super", "self"):
                paths.append(("self", "::" + m.group(1)))
        for head, tail in paths:
            rest = [p for p in tail.split("::") if p]
            target = resolve(here, head, rest, mods, reexports)
            if target is not None and target != here and target != ():
                graph[here].add(target)
    return graph


def circles(graph: dict) -> list:
    """Strongly connected components with more than one file (Tarjan, iterative)."""
    index, low, on_stack, stack, out, counter = {}, {}, set(), [], [], [0]
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def count_lines(folder: Path) -> int:
    return sum(len(f.read_text(encoding="utf-8").splitlines()) for f in folder.rglob("*.rs"))


def engine_dependencies() -> list:
    manifest = (ROOT / "crates/engine/Cargo.toml").read_text(encoding="utf-8")
    normal = manifest.split("[dependencies]", 1)[1].split("\n[", 1)[0]
    return [dep for dep in ENGINE_FORBIDDEN if re.search(rf"^{re.escape(dep)}\b", normal, re.M)]


def main() -> int:
    problems = []
    largest = 0
    for src in sorted((ROOT / "crates").glob("*/src")):
        crate = src.parent.name
        for component in circles(edges(modules(src))):
            largest = max(largest, len(component))
            if len(component) > MAX_CIRCLE:
                names = ", ".join("::".join(m) for m in component)
                problems.append(f"{crate}: an import circle of {len(component)} files: {names}")
    for folder, limit in LINE_LIMITS.items():
        lines = count_lines(ROOT / folder)
        if lines > limit:
            problems.append(f"{folder}: {lines} lines (at most {limit})")
    for dep in engine_dependencies():
        problems.append(f"crates/engine depends on {dep}")
    for problem in problems:
        print(problem)
    if not problems:
        engine = count_lines(ROOT / "crates/engine/src")
        cli = count_lines(ROOT / "crates/cli/src")
        print(f"architecture: largest import circle {largest} files; engine {engine} lines, "
              f"cli {cli} lines")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
