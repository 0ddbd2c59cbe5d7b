"""Models are reused only while the code that trained them is unchanged (issue 51 item 2):
the code identity is derived from the modules a method runs, not declared by hand."""

import json
import logging
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import mom_pipeline
from mom_pipeline.datasets import ModelTrainingDataset
from mom_pipeline.experiments import generate_experiment, parse_spec, solve_experiment
from mom_pipeline.experiments.code_identity import code_identity, source_commit
from mom_pipeline.experiments.compute import ComputeConfig, StorageConfig
from mom_pipeline.methods.registry import METHODS
from mom_pipeline.pipelines.experiment.nodes import plan_training

SPEC = {"name": "fig1", "problem": "shortest_path", "sweep": {"param": "degree", "values": [2]},
        "fixed": {"n_train": 30, "n_test": 10}, "trials": 1, "seed": 5,
        "methods": {"MOM": {"estimator": "MOM", "grid": {"lam": [1e-2, 1.0]}},
                    "Ridge": {"estimator": "Ridge", "grid": {"lam": [1.0]}}}}
SOLVER = Path("solvers") / "hinge_working_set.py"  # MOM's exact working-set method
CONSTANT = re.compile(r"^(RESTRICTED_CLARABEL_TOL = .+)$", re.MULTILINE)

# Trains SPEC through its models dataset in `folder` with the package found first on the path
# (a copy), and prints the labels it trained.
SCRIPT = """
import json, logging, sys
from pathlib import Path
import mom_pipeline
import mom_pipeline.experiments.train as train_module
from mom_pipeline.datasets import ModelTrainingDataset
from mom_pipeline.experiments import generate_experiment, parse_spec, solve_experiment
from mom_pipeline.experiments.compute import ComputeConfig, StorageConfig
from mom_pipeline.pipelines.experiment.nodes import plan_training
assert mom_pipeline.__file__.startswith(sys.argv[2]), mom_pipeline.__file__
logging.basicConfig(level=logging.INFO, stream=sys.stderr)
calls, original = [], train_module.train_method
def counting(spec, config, trial, solutions):
    calls.append(config.label)
    return original(spec, config, trial, solutions)
train_module.train_method = counting
spec = parse_spec(json.loads(sys.argv[1]))
data = generate_experiment(spec)
plan = plan_training(data, solve_experiment(data, spec.basis_mode, spec.name), spec, ComputeConfig(), StorageConfig())
folder = Path(sys.argv[3])
ModelTrainingDataset(str(folder / spec.name / "models.json"), method_index=str(folder / "method_index")).save(plan)
print(json.dumps(sorted(set(calls))))
"""


@pytest.fixture(scope="module")
def package_copy(tmp_path_factory):
    """A copy of the package whose solver differs in comments and docstrings only."""
    root = tmp_path_factory.mktemp("copy")
    shutil.copytree(Path(mom_pipeline.__file__).parent, root / "mom_pipeline",
                    ignore=shutil.ignore_patterns("__pycache__"))
    solver = root / "mom_pipeline" / SOLVER
    text = solver.read_text().replace('"""', '"""An edited docstring. ', 1)
    solver.write_text("# an edited comment\n" + text.replace("\ndef ", "\n# another comment\ndef ", 1))
    return root


def _in(copy: Path, script: str, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(copy), "MOM_PROGRESS": "0"}
    result = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, env=env,
                            timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.strip().splitlines()[-1], result.stderr


def _identities(copy: Path) -> dict:
    script = ("import json\nfrom mom_pipeline.methods.registry import METHODS\n"
              "from mom_pipeline.experiments.code_identity import code_identity\n"
              "print(json.dumps({name: code_identity(name) for name in METHODS}))")
    return json.loads(_in(copy, script)[0])


def _edit_solver(copy: Path) -> None:
    solver = copy / "mom_pipeline" / SOLVER
    text, count = CONSTANT.subn(r"\1 * 0.5", solver.read_text())
    assert count == 1, f"the constant to edit is no longer in {SOLVER}"
    solver.write_text(text)


@pytest.mark.slow  # copies the package and runs Python on each copy
def test_the_identity_follows_the_code_a_method_runs(package_copy, tmp_path):
    here = {name: code_identity(name) for name in METHODS}
    assert _identities(package_copy) == here  # comments, docstrings and the folder change nothing
    edited = tmp_path / "edited"
    shutil.copytree(package_copy, edited)
    _edit_solver(edited)
    changed = _identities(edited)
    assert changed["MOM"] != here["MOM"] and changed["KernelMOM"] != here["KernelMOM"]
    # methods that never import the working-set solver keep theirs
    assert changed["OnlineMOM"] == here["OnlineMOM"] and changed["PFYL"] == here["PFYL"]


@pytest.mark.slow
def test_a_trial_is_trained_again_after_its_solver_changed(package_copy, tmp_path, caplog):
    """The issue's reproduction: edit a solver's numerics and rerun; the old models came back."""
    spec = parse_spec(SPEC)
    data = generate_experiment(spec)
    plan = plan_training(data, solve_experiment(data, spec.basis_mode, spec.name), spec, ComputeConfig(),
                        StorageConfig())
    ModelTrainingDataset(str(tmp_path / "fig1" / "models.json"), method_index=str(tmp_path / "index")).save(plan)
    stored = next(iter((tmp_path / "fig1" / "trials").glob("*.pkl")))
    # the same code elsewhere (comments and docstrings aside): nothing is trained, and the log
    # says what trained the reused trial
    trained, log = _in(package_copy, SCRIPT, json.dumps(SPEC), str(package_copy), str(tmp_path))
    assert json.loads(trained) == []
    assert f"reusing finished trial: 1 of 1, from {stored.parent}, trained at {source_commit() or 'an unknown commit'} (code " in log
    edited = tmp_path / "edited"
    shutil.copytree(package_copy, edited)
    _edit_solver(edited)
    trained, log = _in(edited, SCRIPT, json.dumps(SPEC), str(edited), str(tmp_path))
    assert "MOM" in json.loads(trained)


def test_a_stored_method_records_what_trained_it(tmp_path, caplog):
    spec = parse_spec(SPEC)
    data = generate_experiment(spec)
    solutions = solve_experiment(data, spec.basis_mode, spec.name)
    dataset = ModelTrainingDataset(str(tmp_path / "fig1" / "models.json"), method_index=str(tmp_path / "index"))
    dataset.save(plan_training(data, solutions, spec, ComputeConfig(), StorageConfig()))
    methods = dataset.load().load(0, 0).methods
    assert {label: m.code for label, m in methods.items()} == {"MOM": code_identity("MOM"),
                                                               "Ridge": code_identity("Ridge")}
    assert {m.commit for m in methods.values()} == {source_commit()}
    with caplog.at_level(logging.INFO):  # another experiment on the same data reuses them, saying so
        other = parse_spec({**SPEC, "name": "fig6"})
        ModelTrainingDataset(str(tmp_path / "fig6" / "models.json"), method_index=str(tmp_path / "index")).save(
            plan_training(data, solutions, other, ComputeConfig(), StorageConfig()))
    assert f"reusing MOM, Ridge, trained on the same data, from {tmp_path / 'fig1' / 'trials'}" in caplog.text
    assert f"trained at {source_commit() or 'an unknown commit'} (code " in caplog.text
