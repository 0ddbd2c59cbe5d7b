"""Issue 12 items 2, 4, 5, 7, 9, 10: runs through KedroSession on the smoke environment."""

import logging
from pathlib import Path

import pandas as pd
import pytest
from kedro.framework.session import KedroSession
from kedro.framework.startup import bootstrap_project


def _run(project: Path, params: dict | None = None, **options):
    bootstrap_project(project)
    with KedroSession.create(project_path=project, env="smoke", runtime_params=params or {}) as session:
        return session.run(pipeline_names=["shortest_path"], namespaces=["fig1"], **options)


def _latest(folder: Path) -> Path:
    return sorted(p for p in folder.iterdir() if p.is_dir())[-1] / folder.name


def _evaluation(project: Path) -> pd.DataFrame:
    table = pd.read_parquet(_latest(project / "data" / "07_model_output" / "fig1" / "evaluation.parquet"))
    return table.drop(columns="fit_seconds")


def _trial_files(project: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in (project / "data" / "06_models" / "fig1" / "trials").glob("*.pkl")}


def test_mixed_dataset_versions_stop_the_run(project_copy):
    """Item 2: bases of one run, data of another (another seed), then training alone."""
    _run(project_copy, to_nodes=["fig1.extract_bases"])
    _run(project_copy, {"fig1": {"experiment": {"seed": 7}}}, to_nodes=["fig1.generate_data"])
    with pytest.raises(Exception, match="problem_data of setting 0, trial 0 was generated with other parameters"):
        _run(project_copy, from_nodes=["fig1.plan_training"])
    with pytest.raises(Exception, match="solutions of setting 0, trial 0 belong to other data"):
        _run(project_copy, {"fig1": {"experiment": {"seed": 7}}}, from_nodes=["fig1.plan_training"])
    assert not (project_copy / "data" / "07_model_output").exists()


def test_models_survive_a_failed_run_and_corrupt_files_are_recomputed(fig1_project, monkeypatch, caplog):
    """Items 5, 6, 7 and 10: one file per trial, kept by a failed run, resumed in smoke runs."""
    project_copy = fig1_project  # after one run of figure 1
    first = _trial_files(project_copy)
    assert len(first) == 4  # 2 settings x 2 trials, one file each: no second copy anywhere
    assert sorted(p.name for p in (project_copy / "data" / "06_models").rglob("*.pkl")) == sorted(first)
    reference = _evaluation(project_copy)

    # a run with another grid fails during its second trial: every finished file stays
    import mom_pipeline.experiments.train as train

    original, calls = train.train_trial, []

    def failing(*args):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("killed")
        return original(*args)

    monkeypatch.setattr(train, "train_trial", failing)
    with pytest.raises(Exception, match="killed"):
        _run(project_copy, {"fig1": {"experiment": {"methods": {"MOM": {"grid": {"lam": [1.0e-2]}}}}}})
    monkeypatch.setattr(train, "train_trial", original)
    after = _trial_files(project_copy)
    assert all(after[name] == content for name, content in first.items()) and len(after) == 5

    # corrupt two files and leave a dead writer's temporary file: the rerun names them and recomputes
    trials = project_copy / "data" / "06_models" / "fig1" / "trials"
    names = sorted(first)
    (trials / names[0]).write_bytes(b"")
    (trials / names[1]).write_bytes(first[names[1]][:50])
    (trials / f".{names[2][:-4]}.999999999.tmp").write_bytes(b"partial")
    with caplog.at_level(logging.INFO):
        _run(project_copy)
    assert str(trials / names[0]) in caplog.text and str(trials / names[1]) in caplog.text
    # the smoke run resumed the two intact trials, said in one line
    assert caplog.text.count("reusing finished trial") == 1 and "fig1: reusing finished trials: 2 of" in caplog.text
    assert not list(trials.glob(".*.tmp"))
    pd.testing.assert_frame_equal(_evaluation(project_copy), reference)


def test_the_method_index_stays_in_the_project_whatever_the_working_directory(project_copy, tmp_path_factory,
                                                                            monkeypatch):
    """A session started from another folder (a notebook's) writes the method pointers into the
    project, as it does every dataset: not under the working directory."""
    elsewhere = tmp_path_factory.mktemp("notebooks")
    monkeypatch.chdir(elsewhere)
    _run(project_copy)
    assert list((project_copy / "data" / "06_models" / "method_index").glob("*.json"))
    assert not any(elsewhere.iterdir())


def test_a_relative_method_index_outside_a_path_entry_is_refused(tmp_path):
    from kedro.io import DatasetError

    from mom_pipeline.datasets import ModelTrainingDataset

    with pytest.raises(DatasetError, match=r"write it as method_index: \{path: data/06_models/method_index\}"):
        ModelTrainingDataset(str(tmp_path / "models.json"), method_index="data/06_models/method_index")
    with pytest.raises(DatasetError, match="must be"):
        ModelTrainingDataset(str(tmp_path / "models.json"), method_index={"pth": "x"})
    dataset = ModelTrainingDataset(str(tmp_path / "models.json"), method_index={"path": str(tmp_path / "index")})
    assert dataset._describe()["method_index"] == str(tmp_path / "index")


def test_resume_false_trains_again(fig1_project, caplog):
    project_copy = fig1_project  # after one run of figure 1
    first = _trial_files(project_copy)
    with caplog.at_level(logging.INFO):
        _run(project_copy, {"storage": {"resume": False}})
    assert "reusing finished trial" not in caplog.text and set(_trial_files(project_copy)) == set(first)


def test_disk_check_stops_before_writing(project_copy):
    """Issue 16: a trial that would not fit stops the run with a clear message."""
    with pytest.raises(Exception, match="not enough disk space"):
        _run(project_copy, {"storage": {"min_free_gb": 1.0e9}})
    trials = project_copy / "data" / "06_models" / "fig1" / "trials"
    assert not list(trials.iterdir())


@pytest.mark.parametrize("params, message", [
    ({"fig9": {"experiment": {"trials": 1}}}, r"no parameter 'fig9' in the parameters \(did you mean 'fig"),
    ({"inverse": {"on_invlid": "raise"}}, r"inverse: unknown parameter 'on_invlid' \(did you mean 'on_invalid'\?\)"),
    ({"inverse": {"model": {"lamda": 0.1}}}, r"inverse.model: unknown parameter 'lamda' \(did you mean 'lam'\?\)"),
    ({"inverse": {"model": {"lam": "abc"}}}, r"inverse.model.lam must be 'auto' \(chosen by validation\) or a positive"),
    ({"inverse": {"model": {"formulation": "duel"}}}, r"model.formulation\s+Input should be 'basis' or 'dual'"),
    ({"inverse": {"tuning": {"n_folds": 1}}}, r"tuning.n_folds\s+Input should be greater than or equal to 2"),
    ({"inverse_example": {"n_observation": 10}},
     r"inverse_example: unknown parameter 'n_observation' \(did you mean 'n_observations'\?\)"),
    ({"fig1": {"experiment": {"trails": 1}}}, r"unknown parameter 'trails' \(did you mean 'trials'\?\)"),
    ({"fig1": {"experiment": {"trials": 1.7}}}, "trials"),
    ({"fig1": {"experiment": {"seed": -1}}}, "seed"),
    ({"fig1": {"experiment": {"fixed": {"n_test": 0}}}}, "n_test must be >= 1"),
    ({"fig1": {"experiment": {"methods": {"MOM": {"estimator": "MOMM"}}}}}, "unknown estimator 'MOMM'"),
    ({"compute": {"backend": "spark"}}, "compute"),
    # issue 51 item 10: omegaconf's "Cannot merge incompatible container types", no key named
    ({"fig1": {"experiment": {"methods": []}}},
     r"--params fig1.experiment.methods=\[\]: fig1.experiment.methods is a mapping .*'MOM'.*a list cannot replace"),
    ({"inverse": {"tuning": {"lambdas": {"small": 1e-3}}}},
     r"inverse.tuning.lambdas is a list in the configuration files .* a mapping cannot replace it; give a list"),
    ({"fig1": {"experiment": {"methods": {}}}}, r"fig1.experiment.methods=\{\}: an empty mapping changes nothing"),
])
def test_parameter_mistakes_stop_before_any_work(project_copy, params, message):
    """Items 4 and 9: refused before any node runs, the parameter named."""
    with pytest.raises(Exception, match=message):
        _run(project_copy, params)
    assert not (project_copy / "data" / "03_primary").exists()


def test_runtime_parameter_rule():
    """New keys are refused at the namespace and first level only; typed inputs validate themselves."""
    from mom_pipeline.experiments.spec import SpecError
    from mom_pipeline.runtime_params import check_runtime_params

    configured = {"inverse": {"on_invalid": "report", "model": {"lam": 1.0}}, "fig1": {"experiment": {}}}
    typed = {"fig1.experiment"}
    check_runtime_params({"inverse": {"model": {"solver": "fast"}}}, configured, typed)  # estimator argument
    check_runtime_params({"fig1": {"experiment": {"trials": 2}}}, configured, typed)
    with pytest.raises(SpecError, match="no parameter 'experimnt' in fig1"):
        check_runtime_params({"fig1": {"experimnt": {"trials": 2}}}, configured, typed)
    check_runtime_params({"inverse": {"model": {}}}, {"inverse": {"model": {}}}, typed)  # nothing configured there
    with pytest.raises(SpecError, match=r"inverse.model is a mapping .*\['lam'\].*give a key of it \(inverse.model.lam"):
        check_runtime_params({"inverse": {"model": [1.0]}}, configured, typed)
