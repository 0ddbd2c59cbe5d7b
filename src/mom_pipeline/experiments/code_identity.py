"""What code trained a model: a content hash of the modules it ran, derived, not declared.

`code_identity(estimator)` hashes the source of every module of this package that training
the estimator imports (its class's module and the training procedure, `experiments.train`,
followed through their imports to the modules that define each imported name) and the
versions of the third-party distributions those modules import. A change to an estimator's
or a solver's numerics therefore changes the identity of every method that runs it, and
only of those: editing Ridge does not retrain MOM. Each module's source is hashed as its
syntax tree without docstrings, so comments, docstrings and formatting change nothing.

The registry of methods is hashed but not followed (it imports every estimator; each
estimator's own modules are followed from its class). Cost: parsing the modules once per
process (`functools.cache`): 46 of the package's 91 modules for MOM, measured at 1.1 s for
MOM and 1.3 s for all thirteen estimators on this 2-core machine shared with other jobs
(mostly parsing and dumping the syntax trees; the installed distributions 0.4 s); then a
dictionary look-up. Only the main process computes it, when the training stage runs.

`source_commit()` is the git commit of the package's checkout, recorded with each trained
method so that a reuse can say what trained it; it is not part of any key.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.metadata
import subprocess
import sys
from pathlib import Path

PACKAGE = "mom_pipeline"
PACKAGE_DIR = Path(__file__).resolve().parents[1]
#: Where every training starts, besides the estimator's class (`experiments.train.train_method`).
TRAINING_MODULES = ("mom_pipeline.experiments.train",)
#: Hashed, but their imports are not followed (the registry imports every estimator).
LEAVES = frozenset({"mom_pipeline.methods.registry"})


def _path(module: str) -> Path | None:
    """The source file of a module of this package (a package's __init__), or None."""
    base = PACKAGE_DIR.joinpath(*module.split(".")[1:])
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    return None


def _is_package(module: str) -> bool:
    path = _path(module)
    return path is not None and path.name == "__init__.py"


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return tree


def _absolute(module: str, node: ast.ImportFrom) -> str:
    """The module an ``from ... import`` statement of `module` imports from."""
    if not node.level:
        return node.module or ""
    package = module.split(".") if _is_package(module) else module.split(".")[:-1]
    base = package[:len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


@functools.cache
def _parsed(module: str) -> tuple[str, tuple, dict, frozenset]:
    """(hash of the source without docstrings, the package's modules it imports as
    (module, name or None) pairs, {name: (module, name)} of its top-level
    ``from ... import``, top-level names of the third-party modules it imports)."""
    tree = _strip_docstrings(ast.parse(_path(module).read_text()))
    imports, bindings, external = [], {}, set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == PACKAGE:
                    imports.append((alias.name, None))
                else:
                    external.add(alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(module, node)
            if source.split(".")[0] != PACKAGE:
                if not node.level and source != "__future__":
                    external.add(source.split(".")[0])
                continue
            for alias in node.names:
                imports.append((source, None if alias.name == "*" else alias.name))
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            source = _absolute(module, node)
            for alias in node.names:
                bindings[alias.asname or alias.name] = (source, alias.name)
    digest = hashlib.sha256(ast.dump(tree).encode()).hexdigest()
    return digest, tuple(imports), bindings, frozenset(external - set(sys.stdlib_module_names))


def _defining_module(module: str, name: str | None, seen: frozenset = frozenset()) -> str | None:
    """The module of this package that `from module import name` runs for `name`: a submodule
    of that name, else the module a package's __init__ re-exports it from, else `module`."""
    if name is not None:
        if _path(f"{module}.{name}") is not None:
            return f"{module}.{name}"
        if _is_package(module) and (module, name) not in seen:
            source = _parsed(module)[2].get(name)
            if source is not None and source[0].split(".")[0] == PACKAGE and _path(source[0]) is not None:
                return _defining_module(source[0], source[1], seen | {(module, name)})
    return module if _path(module) is not None else None


@functools.cache
def _closure(roots: tuple[str, ...]) -> tuple[dict, frozenset]:
    """{module: source hash} of every module reached from `roots`, and the third-party names."""
    hashes, external, stack = {}, set(), list(roots)
    while stack:
        module = stack.pop()
        if module in hashes or _path(module) is None:
            continue
        digest, imports, _, names = _parsed(module)
        hashes[module] = digest
        external |= names
        if module in LEAVES:
            continue
        for source, name in imports:
            target = _defining_module(source, name)
            if target is not None and target not in hashes:
                stack.append(target)
    return hashes, frozenset(external)


@functools.cache
def _providers() -> dict:
    return importlib.metadata.packages_distributions()


@functools.cache
def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return ""


def _distribution_versions(names: frozenset) -> tuple:
    """(distribution, version) of the installed distributions that provide the top-level `names`."""
    return tuple(sorted({(dist, _version(dist)) for name in names for dist in _providers().get(name, ())}))


@functools.cache
def code_identity(estimator: str) -> str:
    """The identity of the code that trains `estimator` (a name of `methods.registry`): a
    hash of its modules' sources (docstrings aside), the third-party versions they import,
    and the Python version (see the module docstring)."""
    from ..methods.registry import method_entry

    roots = (method_entry(estimator).cls.__module__, *TRAINING_MODULES)
    hashes, external = _closure(tuple(sorted(roots)))
    payload = {"modules": sorted(hashes.items()), "libraries": _distribution_versions(external),
               "python": list(sys.version_info[:2])}
    return hashlib.sha256(repr(payload).encode()).hexdigest()[:16]


@functools.cache
def source_commit() -> str:
    """The git commit of the package's checkout, "+modified" when its sources differ from it;
    "" outside a git checkout."""
    def git(*args: str) -> str:
        result = subprocess.run(["git", "-C", str(PACKAGE_DIR), *args], capture_output=True, text=True, timeout=10)
        return result.stdout.strip() if result.returncode == 0 else ""

    try:
        commit = git("rev-parse", "--short=12", "HEAD")
        if not commit:
            return ""
        return commit + ("+modified" if git("status", "--porcelain", "--", ".") else "")
    except (OSError, subprocess.SubprocessError):
        return ""
