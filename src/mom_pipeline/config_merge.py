"""The parameter files merged as plain Python containers, with OmegaConfigLoader's result.

Kedro's OmegaConfigLoader turns every parameter file into an OmegaConf tree, merges the trees
(with the runtime parameters) per environment, converts them back to containers, then turns
both environments' results into trees again for the soft merge. The project's files expand
(YAML anchors) to some 16,000 nodes, so one merge is about 2 CPU-s, paid by every `kedro run`
and by each of its loaders. Without interpolations the same result is a recursive merge of the
parsed YAML: this module does that in tens of milliseconds.

It is taken only where it gives exactly what OmegaConf would: the files read with OmegaConf's
own YAML loader (the same types, duplicate-key and alias-expansion checks), found by the
loader's own path helpers in the same order, and every value a plain mapping with string keys,
list, string, number, bool or null. Anything else - an interpolation (`${...}`), a missing value
(`???`), a file that does not parse, keys defined twice in one environment, a mapping merged
with a list, no parameter files, a remote or archived `conf_source` - returns None, and the
caller merges with OmegaConf, which gives its own result or its own error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from kedro.config import OmegaConfigLoader
from omegaconf._yaml import get_yaml_loader

_SCALARS = (str, int, float, bool, type(None))  # what OmegaConf keeps as it is (bool is an int)


class NotPlain(Exception):
    """The configuration needs OmegaConf itself (see the module docstring)."""


def plain_parameters(loader: OmegaConfigLoader) -> dict[str, Any] | None:
    """`loader`'s merged "parameters" as OmegaConfigLoader.__getitem__ would return them (top-level
    keys starting with "_" included), or None where only OmegaConf can tell (then call it)."""
    try:
        return _merged(loader)
    except NotPlain:
        return None


def _merged(loader: OmegaConfigLoader) -> dict[str, Any]:
    if loader._protocol != "file" or not loader.base_env:
        raise NotPlain
    strategy = loader.merge_strategy.get("parameters", "destructive")
    strategy = strategy.lower() if isinstance(strategy, str) else None
    if strategy not in ("soft", "destructive"):
        raise NotPlain  # OmegaConfigLoader names the accepted strategies in its error
    runtime = _checked(loader.runtime_params or {})
    run_env = loader.env or loader.default_run_env
    if not run_env:
        raise NotPlain
    base_files = _parsed_files(loader, loader.base_env)
    base = _environment(base_files, runtime)
    if run_env == loader.base_env:
        if not base_files:
            raise NotPlain
        return base
    env_files = _parsed_files(loader, run_env)
    if not base_files and not env_files:
        raise NotPlain  # OmegaConfigLoader's MissingConfigException
    env = _environment(env_files, runtime)
    if strategy == "destructive":
        return {**base, **env}  # the environment's top-level keys replace the base's
    return _merge(base, env)


def _environment(files: list[dict], runtime: dict) -> dict[str, Any]:
    """One environment's files merged in order, then the runtime parameters over them; nothing
    (not even the runtime parameters) where the environment has no parameter files."""
    merged: dict[str, Any] = {}
    for config in [*files, runtime] if files else ():
        merged = _merge(merged, config)
    return merged


def _merge(into: dict, update: dict) -> dict:
    """A new mapping: `update` merged into `into` as OmegaConf.merge does for plain values.
    Mappings merge key by key (an empty one changes nothing), any other value replaces, a
    mapping and a list do not merge (OmegaConf's error)."""
    out = {key: _copy(value) for key, value in into.items()}
    for key, value in update.items():
        old = out.get(key)
        if isinstance(old, dict) and isinstance(value, dict):
            out[key] = _merge(old, value)
        elif isinstance(old, dict) and isinstance(value, list) or isinstance(old, list) and isinstance(value, dict):
            raise NotPlain
        else:
            out[key] = _copy(value)
    return out


def _copy(value: Any) -> Any:
    """A copy sharing no container: YAML aliases parse to one object used in many places, and
    OmegaConf returns separate ones (a node changing its parameters changes no other's)."""
    if isinstance(value, dict):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy(item) for item in value]
    return value


def _checked(value: Any) -> Any:
    """`value` if OmegaConf would return it unchanged, else NotPlain."""
    if type(value) is dict:
        for key, item in value.items():
            if type(key) is not str:
                raise NotPlain
            _checked(item)
    elif type(value) is list:
        for item in value:
            _checked(item)
    elif type(value) not in _SCALARS or isinstance(value, str) and ("${" in value or value == "???"):
        raise NotPlain
    return value


def _parsed_files(loader: OmegaConfigLoader, env: str) -> list[dict]:
    """The parameter files of `env` parsed, in the order OmegaConfigLoader merges them (its set of
    matched paths, built the same way), after its check that no key is set in two of them."""
    folder = loader._get_conf_env_path(env)
    if not Path(folder).is_dir():
        raise NotPlain  # OmegaConfigLoader's MissingConfigException
    matches = []
    for pattern in loader.config_patterns["parameters"]:
        for found in loader._fs.glob(Path(f"{folder}/{pattern}").as_posix()):
            if not loader.ignore_hidden or not loader._is_hidden(found):
                matches.append(Path(found))
    files = [path for path in set(matches) if loader._is_valid_config_path(path)]
    parsed = []
    for path in files:
        try:
            config = yaml.load(path.read_bytes().decode("utf8"), Loader=get_yaml_loader())
        except (OSError, yaml.YAMLError, UnicodeDecodeError, ValueError) as error:
            raise NotPlain from error  # OmegaConfigLoader words its own error
        if config is not None and not isinstance(config, dict):
            raise NotPlain  # a file of a list or a string: OmegaConf's own handling
        parsed.append(_checked(config or {}))
    leaf_keys = [loader._get_all_keys(config) for config in parsed]
    for i, keys in enumerate(leaf_keys):
        for other in leaf_keys[i + 1:]:
            if any(not key.startswith("_") for key in keys & other):
                raise NotPlain  # OmegaConfigLoader names both files and the keys
    return parsed
