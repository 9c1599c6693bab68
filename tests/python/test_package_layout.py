"""The `strata` package's layout: its modules import in layers, with no circle.

Every `import` and `from ... import` of a strata module, at module level or
inside a function, is an edge of the import graph read here with `ast`
(docs/python-api.md draws the layers). A module may import only modules of
its own layer or a lower one, and the graph has no cycle: a circle means a
layer is missing. Importing a parent package to reach its submodules is
Python's mechanism, not an edge; an explicit `import strata` is one.

Lazy imports (inside a function) are allowed only of optional third-party
dependencies (xarray, zarr, distributed, tqdm, cloudpickle), so that
`import strata` needs numpy alone; a lazy import of a strata module is
refused like any other edge that goes up, and also on its own (the layer it
hides would not be visible at the top of the module).
"""
import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

import strata

# The source tree (the build tree's package is symlinks to it, possibly with
# stale links to modules since renamed).
PACKAGE_DIR = Path(strata.__file__).resolve().parent

# Lowest first. A module not listed is in the top layer ("integrations"),
# where a new module (an executor, an I/O format) may import any other.
LAYERS = [
    ("engine", ["strata._strata", "strata._recipe", "strata._core", "strata._spec",
                "strata.callbacks", "strata._external", "strata._dask", "strata._ray"]),
    ("handles", ["strata._ops", "strata._indexing", "strata._execute", "strata._zarr_io",
                 "strata._blocks", "strata._regroup"]),
    ("array", ["strata.array_api.array_object"]),
    ("namespace", ["strata.array_api.creation_functions", "strata.array_api.data_type_functions",
                   "strata.array_api.elementwise_functions",
                   "strata.array_api.indexing_functions",
                   "strata.array_api.linear_algebra_functions",
                   "strata.array_api.manipulation_functions",
                   "strata.array_api.searching_functions", "strata.array_api.set_functions",
                   "strata.array_api.sorting_functions",
                   "strata.array_api.statistical_functions",
                   "strata.array_api.utility_functions", "strata.array_api.inspection",
                   "strata.array_api"]),
    ("functions", ["strata._io", "strata._compute", "strata._block_functions"]),
    ("extensions", ["strata.linalg", "strata.fft", "strata.random", "strata.diagnostics"]),
    ("numpy", ["strata._numpy_protocol"]),
    ("namespace package", ["strata"]),
    ("integrations", []),
]
LAYER_OF = {m: i for i, (_, mods) in enumerate(LAYERS) for m in mods}
TOP = len(LAYERS) - 1

# Third-party modules a strata module may import inside a function, and why.
LAZY_THIRD_PARTY = {
    "xarray": "strata.xarray's optional dependency",
    "zarr": "zarr-python, for stores given as zarr objects (optional)",
    "distributed": "the dask executor's, imported when it first runs",
    "dask": "the dask executor's graph types",
    "tqdm": "the progress bar's (optional)",
    "cloudpickle": "the dask executor ships map_blocks functions with it",
    "ray": "the ray executor's (extra strata[ray]), imported when it first runs",
    "pandas": "xarray's",
    "pyarrow": "strata.xarray's Parquet writer (extra strata[parquet])",
    "inspect": "the standard library",
}


def module_name(path):
    rel = path.relative_to(PACKAGE_DIR.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def strata_modules():
    return {module_name(p): p for p in sorted(PACKAGE_DIR.rglob("*.py"))
            if "__pycache__" not in p.parts}


def resolve(importer, is_package, level, target):
    """The absolute name of a relative import's base."""
    if level == 0:
        return target
    base = importer.split(".") if is_package else importer.split(".")[:-1]
    base = base[:len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def imports_of(name, path, modules):
    """[(imported strata module, line, inside a function)] of one module."""
    tree = ast.parse(path.read_text(), str(path))
    is_package = path.name == "__init__.py"
    out = []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            nested = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                       ast.Lambda))
            if isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name == "strata" or alias.name.startswith("strata."):
                        out.append((alias.name, child.lineno, in_function))
            elif isinstance(child, ast.ImportFrom):
                base = resolve(name, is_package, child.level, child.module)
                if base == "strata" or base.startswith("strata."):
                    for alias in child.names:
                        sub = f"{base}.{alias.name}"
                        # `from . import _core` imports a module; `from ._core
                        # import x` imports from one.
                        out.append((sub if sub in modules else base, child.lineno, in_function))
            visit(child, nested)
    visit(tree, False)
    return out


# The C++ extension module (no source to read; it imports nothing of ours).
EXTENSION = "strata._strata"


def import_graph():
    modules = strata_modules()
    known = set(modules) | {EXTENSION}
    return modules, {name: imports_of(name, path, known) for name, path in modules.items()}


def layer(module):
    if module in LAYER_OF:
        return LAYER_OF[module]
    parent = module.rpartition(".")[0]
    return layer(parent) if parent in LAYER_OF and parent != "strata" else TOP


def test_every_module_is_parsed():
    modules, graph = import_graph()
    assert "strata" in modules and "strata.array_api.array_object" in modules
    # The listed layers name modules that exist (a rename updates the list).
    missing = sorted(m for m in LAYER_OF if m not in modules and m != EXTENSION)
    assert not missing, f"LAYERS names modules that do not exist: {missing}"


def test_imports_go_down_the_layers():
    _, graph = import_graph()
    upward = []
    for importer, edges in graph.items():
        for imported, line, _ in edges:
            if layer(imported) > layer(importer):
                upward.append(f"{importer}:{line} imports {imported} "
                              f"({LAYERS[layer(importer)][0]} -> {LAYERS[layer(imported)][0]})")
    assert not upward, "imports that go up the layers:\n" + "\n".join(upward)


def test_no_import_cycle():
    _, graph = import_graph()
    succ = {m: sorted({t for t, _, _ in edges if t in graph and t != m})
            for m, edges in graph.items()}
    state, stack, cycles = {}, [], []

    def dfs(m):
        state[m] = "open"
        stack.append(m)
        for t in succ[m]:
            if state.get(t) == "open":
                cycles.append(stack[stack.index(t):] + [t])
            elif t not in state:
                dfs(t)
        stack.pop()
        state[m] = "done"
    for m in sorted(succ):
        if m not in state:
            dfs(m)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_no_lazy_import_of_a_strata_module():
    _, graph = import_graph()
    lazy = [f"{importer}:{line} imports {imported} inside a function"
            for importer, edges in graph.items() for imported, line, inside in edges if inside]
    assert not lazy, "\n".join(lazy)


def test_lazy_imports_are_of_optional_dependencies_only():
    modules = strata_modules()
    found = []
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for inner in ast.walk(node):
                if isinstance(inner, ast.Import):
                    roots = [a.name.split(".")[0] for a in inner.names]
                elif isinstance(inner, ast.ImportFrom) and inner.level == 0:
                    roots = [inner.module.split(".")[0]]
                else:
                    continue
                found += [f"{name}:{inner.lineno} imports {r}" for r in roots
                          if r not in LAZY_THIRD_PARTY and r != "strata"]
    assert not found, ("lazy imports not in LAZY_THIRD_PARTY (add them there with the reason, "
                       "or import at the top):\n" + "\n".join(found))


def test_the_checker_finds_a_cycle(tmp_path, monkeypatch):
    """The graph reader sees a function-level import that closes a circle."""
    pkg = tmp_path / "strata"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from . import a\n")
    (pkg / "a.py").write_text("from .b import f\n")
    (pkg / "b.py").write_text("def f():\n    from .a import g\n    return g\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE_DIR", pkg)
    _, graph = import_graph()
    assert ("strata.a", 2, True) in graph["strata.b"]
    with pytest.raises(AssertionError, match="strata.a -> strata.b -> strata.a"):
        test_no_import_cycle()
    with pytest.raises(AssertionError, match="strata.b:2 imports strata.a inside a function"):
        test_no_lazy_import_of_a_strata_module()


PUBLIC_MODULES = sorted(m for m in strata_modules()
                        if not any(part.startswith("_") for part in m.split(".")))


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_module_imports_in_a_fresh_interpreter(name):
    """Each public module imports first thing in a new interpreter (no module
    relies on another having been imported before it; a private module is
    imported with the package, which each of these imports first)."""
    r = subprocess.run([sys.executable, "-c", f"import {name}"], env=os.environ.copy(),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"import {name} failed:\n{r.stderr[-3000:]}"
