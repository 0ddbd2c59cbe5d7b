import numpy as np
import pytest

from mom_pipeline.experiments import SpecError, parse_spec

BASE = {"name": "x", "problem": "shortest_path", "sweep": {"param": "degree", "values": [1, 2]},
        "fixed": {"n_train": 10, "n_test": 5}, "trials": 2, "seed": 1}


def test_seeds_are_per_cell_and_stable():
    spec = parse_spec(BASE)
    a = np.random.default_rng(spec.trial_seed(1, 0)).random()
    b = np.random.default_rng(spec.trial_seed(1, 0)).random()
    c = np.random.default_rng(spec.trial_seed(0, 1)).random()
    assert a == b != c
    assert spec.cells() == [(0, 0), (0, 1), (1, 0), (1, 1)]


@pytest.mark.parametrize("change, message", [
    ({"problem": "tsp"}, "unknown problem"),
    ({"sweep": {"param": "grid", "values": [1]}}, "sweep.param"),
    ({"sweep": {"param": "degree", "values": []}}, "sweep.values"),
    ({"trials": 0}, "trials"),
    ({"basis_mode": "magic"}, "basis_mode"),
    ({"fixed": {"n_train": 10, "n_test": 5, "bogus": 1}}, "shortest_path settings: unknown parameter 'bogus'"),
    ({"fixed": {"degree": 2, "n_train": 1, "n_test": 1}}, "both swept and fixed"),
    ({"plot": {"metric": "regret"}}, "plot.metric"),
    ({"plot": {"sharey": True}}, "experiment.plot: unknown parameter 'sharey' \\(did you mean 'share_y'"),
    ({"problem": "knapsack", "fixed": {"n_train": 10, "n_test": 5}, "plot": {"metric": "relative_loss_released"}},
     "for knapsack the released metric is the paper's"),
    ({"plot": {"regret": "relative"}}, "plot.regret draws an online experiment's curves; 'x' is offline"),
    ({"mode": "online", "plot": {"regret": "normalized"}}, "plot.regret"),
    ({"mode": "online", "methods": {"P": {"estimator": "Perceptron", "params": {"update_rule": "parallel"}}}},
     "params.update_rule = 'parallel' is not a valid value"),
    ({"mode": "online", "methods": {"O": {"estimator": "OnlineMOM", "params": {"look_ahead": "false"}}}},
     "params.look_ahead = 'false' is not a valid value"),
])
def test_bad_specs_are_named(change, message):
    with pytest.raises(SpecError, match=message):
        parse_spec({**BASE, **change})


def test_missing_key_is_named():
    params = dict(BASE)
    del params["seed"]
    with pytest.raises(SpecError, match="seed: Field required"):
        parse_spec(params)


# Issue 12, items 4 and 9: parameter mistakes are errors that name the parameter.
@pytest.mark.parametrize("change, message", [
    ({"trails": 1}, r"unknown parameter 'trails' \(did you mean 'trials'\?\)"),
    ({"trials": 1.7}, "trials"),
    ({"trials": "abc"}, "trials"),
    ({"seed": -1}, "seed"),
    ({"fixed": {"n_train": 10, "n_test": 0}}, "n_test must be >= 1"),
    ({"fixed": {"n_train": 10.5, "n_test": 5}}, "n_train must be an integer"),
    ({"sweep": {"param": "degree", "values": [1, 2.5]}}, "degree must be an integer"),
    ({"sweep": {"param": "degree", "valeus": [1]}}, "did you mean 'values'"),
    ({"methods": {"M": {"estimator": "MOMM"}}}, r"unknown estimator 'MOMM' \(did you mean 'MOM'\?\)"),
    ({"methods": {"M": {"estimator": "MOM", "grid": {"lamb": [1.0]}}}}, r"no hyperparameter 'lamb' \(did you mean 'lam'\?\)"),
    ({"methods": {"M": {"estimator": "MOM", "gird": {"lam": [1.0]}}}}, "did you mean 'grid'"),
    # issue 51 item 11: each trial's fit failed inside the models' save ("fig1.models: Failed while saving data")
    ({"methods": {"Ridge": {"estimator": "Ridge", "grid": {"lam": [1.0, -1.0]}}}},
     r"methods.Ridge: method 'Ridge': grid.lam = -1.0 is not a valid value: The 'lam' parameter of Ridge must be"),
    ({"methods": {"M": {"estimator": "MOM", "grid": {"lam": [0.0]}}}}, r"grid.lam = 0.0 .* range \(0.0, inf\)"),
    ({"methods": {"S": {"estimator": "SPOPlus", "grid": {"lam": [0.1], "step_size": [-1.0]}}}}, r"grid.step_size = -1.0"),
    ({"methods": {"RF": {"estimator": "RandomForest", "params": {"n_estimators": 0}}}}, r"params.n_estimators = 0"),
    ({"methods": {"O": {"estimator": "OnlineMOM", "radius_factors": [1.0, 0.0]}}}, r"radius_factors must be positive"),
])
def test_parameter_mistakes_are_named(change, message):
    with pytest.raises(SpecError, match=message):
        parse_spec({**BASE, **change})


def test_online_experiments_may_have_no_test_samples():
    spec = parse_spec({**BASE, "mode": "online", "fixed": {"n_train": 10, "n_test": 0}})
    assert spec.setting_kwargs(0)["n_test"] == 0


@pytest.mark.parametrize("params, message", [
    ({"backend": "spark"}, "backend"), ({"n_jobs": 1.5}, "n_jobs"), ({"n_jobs": 0}, "n_jobs"),
    ({"backnd": "loky"}, "did you mean 'backend'"), ({"backend": "dask"}, "dask_address"),
])
def test_compute_mistakes_are_named(params, message):
    from mom_pipeline.experiments.compute import ComputeConfig

    with pytest.raises(ValueError, match=message):
        ComputeConfig.from_params(params)


def test_storage_mistakes_are_named():
    from mom_pipeline.experiments.compute import StorageConfig

    assert StorageConfig.from_params(None).keep_models == "light"
    with pytest.raises(ValueError, match="keep_models"):
        StorageConfig.from_params({"keep_models": "some"})
    with pytest.raises(ValueError, match="did you mean 'keep_models'"):
        StorageConfig.from_params({"keep_model": "all"})


def test_method_params_fill_the_methods_that_accept_them_and_leave_the_rest():
    methods = {"PFYL": {"estimator": "PFYL", "params": {"batch_size": 32}},
               "DBB": {"estimator": "DBB", "params": {"n_epochs": 3}},  # its own value wins
               "SPO+": {"estimator": "SPOPlus", "grid": {"n_epochs": [1, 2]}},  # tuned: left alone
               "LS": {"estimator": "OLS"}}
    spec = parse_spec({**BASE, "method_params": {"n_epochs": 200}, "methods": methods})
    assert spec.methods["PFYL"].params == {"batch_size": 32, "n_epochs": 200}
    assert spec.methods["DBB"].params == {"n_epochs": 3}
    assert spec.methods["SPO+"].params == {} and spec.methods["SPO+"].grid == {"n_epochs": [1, 2]}
    assert spec.methods["LS"].params == {}
    with pytest.raises(SpecError, match=r"method_params \['n_epoch'\] is a hyperparameter of none.*'n_epochs'"):
        parse_spec({**BASE, "method_params": {"n_epoch": 200}, "methods": methods})
    with pytest.raises(SpecError, match="n_epochs. parameter of PFYL must be an int in the range"):
        parse_spec({**BASE, "method_params": {"n_epochs": 0}, "methods": methods})
