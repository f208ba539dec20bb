"""The package's shape: few modules at the top, no module over 500 lines,
and no module importing itself back through others (top-level imports or
imports inside functions)."""

import ast
from pathlib import Path

import pytest

import sklearn_pdp

ROOT = Path(sklearn_pdp.__file__).resolve().parent
MODULES = {}
for _path in sorted(ROOT.rglob("*.py")):
    _parts = ("sklearn_pdp",) + _path.relative_to(ROOT).with_suffix("").parts
    _package = _parts[-1] == "__init__"
    MODULES[".".join(_parts[:-1] if _package else _parts)] = (_path, _package)


def _imports(name):
    """The package's modules that module ``name`` imports (top-level or not)."""
    path, package = MODULES[name]
    here = name.split(".") if package else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(here[:len(here) - node.level + 1] + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base
                       for a in node.names]
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            # a package importing its own modules is how it exports them
            if target and target != name and not name.startswith(target + "."):
                found.add(target)
    return found


def test_few_modules_at_the_top():
    top = [m for m, (_, package) in MODULES.items() if not package and m.count(".") == 1]
    assert len(top) <= 10, sorted(top)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_module_under_500_lines(name):
    with open(MODULES[name][0], encoding="utf-8") as f:
        assert sum(1 for _ in f) <= 500


def test_no_import_cycle():
    graph = {name: _imports(name) for name in MODULES}
    done, path = set(), []

    def visit(name):
        if name in path:
            cycle = path[path.index(name):] + [name]
            pytest.fail("import cycle: " + " -> ".join(cycle))
        if name in done:
            return
        path.append(name)
        for target in sorted(graph[name]):
            visit(target)
        path.pop()
        done.add(name)

    for name in sorted(graph):
        visit(name)
