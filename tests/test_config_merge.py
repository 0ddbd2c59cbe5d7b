"""The plain merge of the parameter files (mom_pipeline.config_merge) against Kedro's
OmegaConfigLoader: the same parameters, key order and value types included, or OmegaConf's
own result or error where the plain merge declines."""

from pathlib import Path

import pytest
from kedro.config import OmegaConfigLoader

from mom_pipeline.config_merge import plain_parameters
from mom_pipeline.settings import CONFIG_LOADER_ARGS, ProjectConfigLoader

CONF = Path(__file__).resolve().parents[1] / "conf"
ARGS = {key: value for key, value in CONFIG_LOADER_ARGS.items() if key != "default_run_env"}

BASE_FILES = {
    "parameters.yml": "_grid: &grid [1.0e-6, 1.0e-3, 1, 10.0]\n"
                      "_cell: &cell {estimator: MOM, grid: {lam: *grid}, params: {tol: 1e-8}}\n"
                      "fig1:\n  experiment:\n    trials: 30\n    seed: 7\n    figure: \"1\"\n"
                      "    methods: {MOM: *cell, OLS: {estimator: OLS}, Ridge: {<<: *cell, estimator: Ridge}}\n"
                      "    plot: {log: true, title: null, limits: [0, .5]}\n",
    "parameters_other.yml": "_grid: [2, 3]\nfig2:\n  experiment: {trials: 5, sweep: {values: [1, 2]}, noise: .inf}\n",
    "nested/parameters_more.yml": "fig1:\n  report: {columns: [{name: a}, {name: b}]}\n",
}
ENV_FILES = {"parameters.yml": "fig1:\n  experiment: {trials: 2, methods: {MOM: {grid: {lam: [1]}}, OLS: null}}\n"
                               "fig3: {experiment: {trials: 1}}\n",
             "parameters_other.yml": "fig2:\n  experiment: {sweep: {}, plot: {log: false}}\n"}


def typed(value):
    """`value` with each container's key order and each scalar's type spelled out (1 == 1.0 == True)."""
    if isinstance(value, dict):
        return ["dict", [[key, typed(item)] for key, item in value.items()]]
    if isinstance(value, list):
        return ["list", [typed(item) for item in value]]
    return [type(value).__name__, repr(value)]


def write_conf(root: Path, envs: dict[str, dict[str, str]]) -> Path:
    for env, files in envs.items():
        (root / env).mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (root / env / name).parent.mkdir(parents=True, exist_ok=True)
            (root / env / name).write_text(text)
    return root


def kedro_result(conf: Path, **kwargs):
    """OmegaConfigLoader's parameters, or its error as (type, message)."""
    try:
        return OmegaConfigLoader(str(conf), **kwargs)["parameters"]
    except Exception as error:  # the error itself is what is compared
        return (type(error), str(error))


def project_result(conf: Path, **kwargs):
    """ProjectConfigLoader's parameters with the anchor keys Kedro keeps, or its error."""
    try:
        loader = ProjectConfigLoader(str(conf), **kwargs)
        plain = plain_parameters(loader)
        return plain if plain is not None else loader["parameters"]
    except Exception as error:
        return (type(error), str(error))


RUNTIME = [
    {},
    {"fig1": {"experiment": {"trials": 3}}},
    {"fig1": {"experiment": {"methods": {"MOM": {"grid": {"lam": [0.5, 5]}}, "New": {"estimator": "OLS"}}}}},
    {"fig1": {"experiment": {"plot": None, "seed": "7"}}, "fig9": {"x": 1.5}},
    {"fig1": {"experiment": {"trials": {"a": 1}}}},  # a mapping replaces a number
    {"fig2": {"experiment": {"sweep": {"values": []}}}},
]


@pytest.mark.parametrize("strategy, runtime", [*(("soft", runtime) for runtime in RUNTIME),
                                               *(("destructive", runtime) for runtime in RUNTIME[:2])])
def test_plain_merge_is_omegaconfs_on_anchors_merge_keys_nested_files_and_runtime_params(tmp_path, runtime, strategy):
    conf = write_conf(tmp_path, {"base": BASE_FILES, "smoke": ENV_FILES, "empty": {}})
    for env in ("base", "smoke", "empty"):
        kwargs = dict(base_env="base", default_run_env=env, runtime_params=runtime,
                      merge_strategy={"parameters": strategy})
        plain = plain_parameters(OmegaConfigLoader(str(conf), **kwargs))
        assert plain is not None, env
        assert typed(plain) == typed(kedro_result(conf, **kwargs)), env


def test_the_merged_values_share_no_container(tmp_path):
    """YAML aliases parse to one object; the merge gives each place its own, as OmegaConf does."""
    conf = write_conf(tmp_path, {"base": BASE_FILES, "smoke": ENV_FILES})
    loader = OmegaConfigLoader(str(conf), base_env="base", default_run_env="base")
    methods = plain_parameters(loader)["fig1"]["experiment"]["methods"]
    methods["MOM"]["grid"]["lam"].append(99)
    assert methods["Ridge"]["grid"]["lam"] == [1.0e-6, 1.0e-3, 1, 10.0]
    assert plain_parameters(loader)["fig1"]["experiment"]["methods"]["MOM"]["grid"]["lam"] == [1.0e-6, 1.0e-3, 1, 10.0]


DECLINED = {
    "interpolation": ({"base": {"parameters.yml": "a: {b: 1, c: '${a.b}'}\n"}}, {}),
    "escaped interpolation": ({"base": {"parameters.yml": "a: {b: '\\\\${x}'}\n"}}, {}),
    "runtime interpolation": ({"base": {"parameters.yml": "a: {b: 1, c: 2}\n"}}, {"a": {"c": "${a.b}"}}),
    "missing value": ({"base": {"parameters.yml": "a: {b: 1}\n"}, "smoke": {"parameters.yml": "a: {b: '???'}\n"}}, {}),
    "list over mapping": ({"base": {"parameters.yml": "a: {b: {c: 1}}\n"}}, {"a": {"b": [1]}}),
    "mapping over list": ({"base": {"parameters.yml": "a: {b: [1]}\n"}, "smoke": {"parameters.yml": "a: {b: {c: 1}}\n"}}, {}),
    "same key in two files": ({"base": {"parameters.yml": "a: {b: 1}\n", "parameters_2.yml": "a: {b: 2}\n"}}, {}),
    "invalid yaml": ({"base": {"parameters.yml": "a: [1, 2\n"}}, {}),
    "duplicate yaml key": ({"base": {"parameters.yml": "a: 1\na: 2\n"}}, {}),
    "integer key": ({"base": {"parameters.yml": "a: {1: x}\n"}}, {}),
    "list file": ({"base": {"parameters.yml": "- 1\n"}}, {}),
    "no parameter files": ({"base": {"catalog.yml": "x: {type: MemoryDataset}\n"}}, {}),
    "no environment folder": ({"base": {"parameters.yml": "a: 1\n"}}, "no smoke"),
}


@pytest.mark.parametrize("case", DECLINED)
def test_what_only_omegaconf_can_tell_goes_to_omegaconf_with_its_result_or_error(tmp_path, case):
    envs, runtime = DECLINED[case]
    conf = write_conf(tmp_path, envs)
    env = "missing" if runtime == "no smoke" else "smoke"
    runtime = {} if runtime == "no smoke" else runtime
    kwargs = dict(base_env="base", default_run_env=env, runtime_params=runtime, merge_strategy={"parameters": "soft"})
    assert plain_parameters(OmegaConfigLoader(str(conf), **kwargs)) is None
    assert typed(project_result(conf, **kwargs)) == typed(kedro_result(conf, **kwargs))


PROJECT_RUNTIME = [
    {"fig1": {"experiment": {"trials": 1, "methods": {"MOM": {"grid": {"lam": [0.1]}}}}}},
    {"fig3": {"experiment": {"sweep": {"values": [50]}}}, "inverse": {"model": {"lamda": 1}}},
]


@pytest.mark.slow
@pytest.mark.parametrize("env", sorted(path.name for path in CONF.iterdir() if path.is_dir()))
def test_every_project_environment_merges_as_omegaconf_does(env):
    for runtime in [{}, *PROJECT_RUNTIME] if env == "smoke" else [{}]:
        kwargs = dict(env=env, runtime_params=runtime, **ARGS)
        plain = plain_parameters(OmegaConfigLoader(str(CONF), **kwargs))
        assert plain is not None, runtime  # the project's files take the plain merge
        expected = kedro_result(CONF, **kwargs)
        assert typed(plain) == typed(expected), runtime
        # the project's loader: the same, without the anchor helpers
        without_anchors = {key: value for key, value in expected.items() if not key.startswith("_")}
        assert typed(ProjectConfigLoader(str(CONF), **kwargs)["parameters"]) == typed(without_anchors), runtime


@pytest.mark.parametrize("strategy", ["Soft", "hard", 1])
def test_a_strategy_is_read_as_omegaconfigloader_reads_it(tmp_path, strategy):
    conf = write_conf(tmp_path, {"base": BASE_FILES, "smoke": ENV_FILES})
    kwargs = dict(base_env="base", default_run_env="smoke", merge_strategy={"parameters": strategy})
    assert (plain_parameters(OmegaConfigLoader(str(conf), **kwargs)) is None) == (strategy != "Soft")
    assert typed(project_result(conf, **kwargs)) == typed(kedro_result(conf, **kwargs))
