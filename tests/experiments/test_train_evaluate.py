"""Training and evaluation of one trial, outside Kedro."""

import numpy as np
import pandas as pd
import pytest

from mom_pipeline.experiments import generate_experiment, parse_spec, solve_experiment
from mom_pipeline.experiments.evaluate import evaluate_trial, trial_summary
from mom_pipeline.experiments.identity import TrialMismatchError
from mom_pipeline.metrics import per_sample_metrics
from mom_pipeline.experiments.train import SpecError, hyperparameter_rows, parse_methods, train_trial

SPEC = {"name": "t", "problem": "shortest_path", "sweep": {"param": "degree", "values": [2]},
        "fixed": {"n_train": 40, "n_test": 20}, "trials": 2, "seed": 3,
        "methods": {"MOM": {"estimator": "MOM", "grid": {"lam": [1e-3, 1e-1]}},
                    "MOM (x* only)": {"estimator": "MOM", "x_star_only": True},
                    "OLS": {"estimator": "OLS"}}}


def test_train_then_evaluate_and_refuse_models_of_other_data():
    spec = parse_spec(SPEC)
    trials = generate_experiment(spec)
    solutions = solve_experiment(trials, "solver")
    trained = train_trial(spec, trials[0], solutions[0])
    assert set(trained) == {"MOM", "MOM (x* only)", "OLS"}
    assert trained["MOM"].best_params["lam"] in (1e-3, 1e-1) and len(trained["MOM"].tuning_scores) == 2
    table = evaluate_trial(spec, trials[0], solutions[0], trained)
    assert len(table) == 3 * 20 and (table["regret"] >= -1e-9).all()
    assert set(trial_summary(table)["method"]) == set(trained)
    # each method's rows are its decisions' per-sample metrics with the trial's keys, in order
    data = trials[0].data
    for label, tm in trained.items():
        C_hat = tm.model.predict_cost(data.test.Z)
        expected = per_sample_metrics(data.test.C, data.lp.solve(C_hat).x, solutions[0].test.x, "shortest_path",
                                      C_hat=C_hat).reset_index()
        rows = table[table["method"] == label].reset_index(drop=True)
        pd.testing.assert_frame_equal(rows[expected.columns], expected, check_exact=True)
        keys = rows[["experiment", "setting", "setting_value", "trial", "fit_seconds", "generation", "data_key"]]
        assert keys.drop_duplicates().values.tolist() == [["t", "degree", 2.0, 0, tm.fit_seconds,
                                                           trials[0].generation, trials[0].key]]
    assert list(table["method"].unique()) == list(trained) and table["exact"].dtype == bool
    with pytest.raises(ValueError, match="setting 0, trial 0 has no trained method"):
        evaluate_trial(spec, trials[0], solutions[0], {})
    # models trained on trial 0 must not be evaluated as trial 1's
    with pytest.raises(TrialMismatchError, match="belong to other data"):
        evaluate_trial(spec, trials[1], solutions[1], trained)
    # nor solutions of one trial with another's data (issue 12, item 2)
    with pytest.raises(TrialMismatchError, match="solutions of setting 0, trial 1 belong to other data"):
        train_trial(spec, trials[1], solutions[0])


def test_method_config_errors():
    # the spec refuses a bad method configuration when it is parsed, before any work
    bad = dict(SPEC, methods={"OLS": {"estimator": "OLS", "x_star_only": True}})
    with pytest.raises(SpecError, match="needs the costs"):
        parse_spec(bad)
    bad = dict(SPEC, methods={"MOM": {"estimator": "MOM", "params": {"lam": 1.0}, "grid": {"lam": [1.0]}}})
    with pytest.raises(SpecError, match="both fixed"):
        parse_spec(bad)
    bad = dict(SPEC, methods={"MOM": {"estimator": "MOM", "grid": {"alpha": [1.0]}}})
    with pytest.raises(SpecError, match="no hyperparameter 'alpha'"):
        parse_spec(bad)
    bad = dict(SPEC, methods={"X": {"estimator": "Magic"}})
    with pytest.raises(SpecError, match="unknown estimator"):
        parse_spec(bad)
    assert [m.label for m in parse_methods(parse_spec(SPEC))] == list(SPEC["methods"])
    assert np.isfinite(parse_spec(SPEC).seed)


def test_a_method_set_to_null_is_left_out():
    spec = parse_spec(dict(SPEC, methods={**SPEC["methods"], "MOM (x* only)": None}))
    assert [m.label for m in parse_methods(spec)] == ["MOM", "OLS"]
    with pytest.raises(SpecError, match="every method is set to null"):
        parse_methods(parse_spec(dict(SPEC, methods={"OLS": None})))


def test_a_joint_fit_fallback_is_logged_with_the_trial_by_the_main_process(monkeypatch, caplog):
    """A tuning fallback (here: the joint grid fit raises) is not logged inside the training,
    which may run in a worker whose log has neither Kedro's format nor the trial's name; it
    travels with the trained method and `log_failed_cells` logs it with the trial."""
    from mom_pipeline.experiments.train import log_failed_cells
    from mom_pipeline.methods.mom import MOM

    spec = parse_spec(dict(SPEC, trials=1, methods={"MOM": {"estimator": "MOM", "grid": {"lam": [1e-2, 1.0]}}}))
    trials = generate_experiment(spec)
    solutions = solve_experiment(trials, "solver")
    monkeypatch.setattr(MOM, "fit_many", classmethod(
        lambda cls, models, *args, **kwargs: (_ for _ in ()).throw(RuntimeError("joint fit broke"))))
    with caplog.at_level("WARNING"):
        trained = train_trial(spec, trials[0], solutions[0])
    assert "joint fit broke" not in caplog.text
    assert trained["MOM"].fallbacks and "joint fit broke" in trained["MOM"].fallbacks[0]
    with caplog.at_level("WARNING"):
        log_failed_cells(spec, 0, 0, trained)
    assert f"{spec.name}: setting 0, trial 0: MOM tuning: MOM.fit_many failed on the 2-cell grid" in caplog.text
    # and outside a trial's training, grid_search's own warning is back
    import logging

    assert not logging.getLogger("mom_pipeline.methods.tuning").filters


@pytest.fixture()
def failing_gamma(monkeypatch):
    """KernelRidge's fit fails at gamma = 0.5 (a value its constraints allow: invalid ones are
    refused by the spec before any training)."""
    from mom_pipeline.methods.baselines import KernelRidgeCost

    kernel = KernelRidgeCost._kernel

    def failing(self, X, Y):
        if self.gamma == 0.5:
            raise np.linalg.LinAlgError("Eigenvalues did not converge")
        return kernel(self, X, Y)

    monkeypatch.setattr(KernelRidgeCost, "_kernel", failing)


def test_failed_grid_cells_are_logged_and_counted(caplog, failing_gamma):
    """Issue 12, item 4: a grid value that makes a fit fail is logged and counted."""
    from mom_pipeline.experiments.train import log_failed_cells

    spec = parse_spec(dict(SPEC, trials=1, methods={
        "KRR": {"estimator": "KernelRidge", "params": {"kernel": "rbf"}, "grid": {"gamma": [0.5, 1.0]}}}))
    trials = generate_experiment(spec)
    solutions = solve_experiment(trials, "solver")
    trained = train_trial(spec, trials[0], solutions[0])
    with caplog.at_level("WARNING"):
        log_failed_cells(spec, 0, 0, trained)
    assert "KRR grid cell {'gamma': 0.5} failed" in caplog.text and "Eigenvalues did not converge" in caplog.text
    (row,) = hyperparameter_rows(spec, 0, 2, 0, trained)
    assert row["grid_cells"] == 2 and row["failed_cells"] == 1 and row["params"] == "gamma=1"


def test_a_cell_failing_in_every_trial_is_warned_once_then_summarized(caplog, failing_gamma):
    """A grid cell that fails in every trial (SPO+ diverging at lam x step_size >= 100 does, in
    the paper's grids) gives one warning when it first fails, debug lines for the other trials,
    and one summary warning with the count; the trials' tables still count it."""
    from mom_pipeline.experiments.train import log_failed_cell_summary, log_failed_cells

    spec = parse_spec(dict(SPEC, trials=3, methods={
        "KRR": {"estimator": "KernelRidge", "params": {"kernel": "rbf"}, "grid": {"gamma": [0.5, 1.0]}}}))
    trials = generate_experiment(spec)
    solutions = solve_experiment(trials, "solver")
    trained = [train_trial(spec, trial, solution) for trial, solution in zip(trials, solutions)]
    seen = {}
    with caplog.at_level("DEBUG", logger="mom_pipeline.experiments.train"):
        for trial, methods in zip(trials, trained):
            log_failed_cells(spec, trial.setting, trial.trial, methods, seen)
        log_failed_cell_summary(spec.name, seen, len(trials))
    failures = [r for r in caplog.records if "grid cell {'gamma': 0.5} failed and is skipped" in r.getMessage()]
    assert [r.levelname for r in failures] == ["WARNING", "DEBUG", "DEBUG"]
    (summary,) = [r for r in caplog.records if "failed in" in r.getMessage()]
    assert summary.levelname == "WARNING"
    assert "KRR grid cell {'gamma': 0.5} failed in 3 of the 3 trials trained" in summary.getMessage()
    assert all(row["failed_cells"] == 1 for methods, trial in zip(trained, trials)
               for row in hyperparameter_rows(spec, trial.setting, trial.setting_value, trial.trial, methods))


def test_a_diverging_grid_cell_is_reported_once_at_info_with_its_count(caplog):
    """SPO+ at lam x step_size >= 100 diverges in every trial of the paper's grids: an expected
    outcome of the grid search, said once per figure at INFO with the count, not as warnings."""
    from mom_pipeline.experiments.train import log_failed_cell_summary, log_failed_cells

    spec = parse_spec(dict(SPEC, trials=2, methods={"SPO+": {
        "estimator": "SPOPlus", "params": {"batch_size": 5, "n_steps": 200},
        "grid": {"lam": [1e-3, 100.0], "step_size": [1e-2, 10.0]}}}))
    trials = generate_experiment(spec)
    solutions = solve_experiment(trials, "solver")
    seen, errors = {}, {}
    with caplog.at_level("DEBUG", logger="mom_pipeline.experiments.train"):
        for trial, solution in zip(trials, solutions):
            log_failed_cells(spec, trial.setting, trial.trial, train_trial(spec, trial, solution), seen, errors)
        log_failed_cell_summary(spec.name, seen, len(trials), errors)
    assert seen, "no cell diverged"
    assert not [r for r in caplog.records if r.levelname == "WARNING"]
    summaries = [r for r in caplog.records if "diverged in" in r.getMessage()]
    assert len(summaries) == len(seen) and {r.levelname for r in summaries} == {"INFO"}
    assert any("grid cell {'lam': 100.0, 'step_size': 10.0} diverged in 2 of the 2 trials trained" in r.getMessage()
               for r in summaries)
