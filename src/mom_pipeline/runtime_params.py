"""Refuse runtime parameters (``kedro run --params``) that no node would read.

Kedro merges ``--params "fig9.experiment.trials=1"`` into the parameters even when no
pipeline reads ``fig9``, so a mistyped namespace or key would be ignored without a word. Before
any node runs, every runtime key must either lie under a typed node input (an experiment
spec, ``compute``, ``storage``: their own validation names unknown keys) or name a
namespace and a first-level key that the configuration files already define (deeper keys may
be new in mappings that no typed input covers). The error names the key and the
nearest valid one. Keys under a typed input are validated by its type, for every registered
pipeline, not only those of the run.
"""

from __future__ import annotations

import inspect
import typing

from kedro.framework.hooks import hook_impl
from pydantic import BaseModel

from mom_pipeline.experiments.spec import SpecError, nearest


def dotted_keys(values: dict, prefix: str = "") -> list[str]:
    """Leaf paths of a nested mapping: {'a': {'b': 1}} -> ['a.b']."""
    out = []
    for key, value in values.items():
        path = f"{prefix}{key}"
        out += dotted_keys(value, f"{path}.") if isinstance(value, dict) and value else [path]
    return out


def typed_parameters(pipelines) -> set[str]:
    """Names of ``params:`` node inputs whose node argument is a Pydantic model."""
    typed = set()
    for pipeline in pipelines:
        for node in pipeline.nodes:
            try:
                hints = typing.get_type_hints(node.func)
                names = list(inspect.signature(node.func).parameters)
            except (TypeError, NameError, ValueError):
                continue
            for name, dataset in zip(names, node.inputs):
                hint = hints.get(name)
                if dataset.startswith("params:") and inspect.isclass(hint) and issubclass(hint, BaseModel):
                    typed.add(dataset.removeprefix("params:"))
    return typed


def _container(value) -> str | None:
    return "mapping" if isinstance(value, dict) else "list" if isinstance(value, (list, tuple)) else None


def check_container_types(runtime: dict, configured, prefix: str = "") -> None:
    """SpecError for a runtime value that cannot be merged into the configured one: a list for
    a mapping or a mapping for a list (omegaconf's merge would stop with "Cannot merge
    incompatible container types", naming no key), or an empty mapping for a non-empty one
    (the merge would keep every configured key: nothing would change)."""
    for key, given in (runtime or {}).items():
        path, expected = f"{prefix}{key}", configured.get(key) if isinstance(configured, dict) else None
        want, got = _container(expected), _container(given)
        if want is None:
            continue
        shown = list(expected)[:5]
        if got is not None and got != want:
            example = (f"a key of it ({path}.{next(iter(expected))}=...)" if want == "mapping" and expected
                       else f"a list ({path}=[...])")
            raise SpecError(f"--params {path}={given!r}: {path} is a {want} in the configuration files (here "
                            f"{'with the keys ' if want == 'mapping' else ''}{shown}), so a {got} cannot replace it; "
                            f"give {example}")
        if got == "mapping" and not given and expected:
            raise SpecError(f"--params {path}={{}}: an empty mapping changes nothing ({path} is merged with the "
                            f"configured keys {shown}); set the keys to change ({path}.<key>=...)")
        if got == "mapping":
            check_container_types(given, expected, f"{path}.")


def check_runtime_params(runtime: dict, configured: dict, typed: set[str]) -> None:
    """SpecError for the first runtime key that is neither under a typed input nor configured,
    or whose value cannot be merged into the configured one (`check_container_types`)."""
    check_container_types(runtime, configured)
    configured_keys = set(dotted_keys(configured))
    for path in dotted_keys(runtime or {}):
        if any(path == t or path.startswith(f"{t}.") for t in typed) or path in configured_keys:
            continue
        parts = path.split(".")
        node, depth = configured, 0
        while depth < len(parts) - 1 and isinstance(node, dict) and parts[depth] in node:
            node, depth = node[parts[depth]], depth + 1
        if depth >= 2:
            continue  # a new key inside a free-form mapping (e.g. inverse.model's MOM arguments)
        siblings = list(node) if isinstance(node, dict) else []
        where = ".".join(parts[:depth]) or "the parameters"
        raise SpecError(f"--params {path}: no parameter {parts[depth]!r} in {where}{nearest(parts[depth], siblings)}; "
                        "nothing would read it (valid keys there: "
                        f"{sorted(siblings)[:20]})")


class RuntimeParameterHooks:
    # First of the project's hooks: a refused --params stops the run before the tracking hook
    # starts its MLflow process (about 6 CPU-s of imports and store set-up for a run that never
    # begins).
    @hook_impl(tryfirst=True)
    def after_context_created(self, context) -> None:
        loader = context.config_loader
        runtime = getattr(loader, "runtime_params", None) or {}
        if not runtime:
            return
        from kedro.framework.project import pipelines
        from kedro.framework.project import settings

        files_only = settings.CONFIG_LOADER_CLASS(conf_source=str(loader.conf_source), env=loader.env,
                                                  **settings.CONFIG_LOADER_ARGS)
        typed = typed_parameters(pipelines.values())
        check_runtime_params(runtime, files_only["parameters"], typed)
        if any(path == t or path.startswith(f"{t}.") for path in dotted_keys(runtime) for t in typed):
            # A run validates the typed inputs of its own pipelines only; reading the context's
            # parameters validates every registered pipeline's, so `--params
            # inverse.model.lamda=1` is refused in a run of the figures as well.
            context.params  # noqa: B018
