"""Tuning: validation split, grid search against a by-hand validation loop, radius grids."""

from typing import ClassVar

import numpy as np
import pytest

from mom_pipeline.methods.base import CostModel, check_features
from mom_pipeline.methods.baselines import OLS, Ridge
from mom_pipeline.methods.tuning import (
    data_driven_radius_grid,
    grid_search,
    radius_grid,
    validation_split,
)
from mom_pipeline.lp import StandardFormLP
from mom_pipeline.metrics import per_sample_metrics
from mom_pipeline.problems import generate_knapsack, generate_shortest_path


class SignedOLS(CostModel):
    """OLS times a sign: +1 decides like OLS, -1 picks the worst decision for OLS's costs.
    Records what each fit received (class-level log) to check the data the search passes."""

    needs_costs: ClassVar[bool] = True
    name: ClassVar[str] = "SignedOLS"
    log: ClassVar[list] = []

    def __init__(self, sign: float = 1.0, fail: bool = False):
        self.sign = sign
        self.fail = fail

    def fit(self, Z, X_star=None, *, A=None, b=None, lp=None, basis=None, C=None):
        if self.fail:
            raise RuntimeError("solver failure")
        SignedOLS.log.append(dict(n=len(Z), basis=None if basis is None else basis.copy(), C=C))
        self.coef_ = self.sign * OLS().fit(Z, C=C).coef_
        return self

    def predict_cost(self, Z):
        return check_features(Z) @ self.coef_.T


class InverseOnly(SignedOLS):
    """A model that does not need the costs: grid_search must not hand them over."""

    needs_costs: ClassVar[bool] = False

    def fit(self, Z, X_star=None, *, A=None, b=None, lp=None, basis=None, C=None):
        assert C is None
        self.coef_ = self.sign * np.linalg.lstsq(Z, X_star, rcond=None)[0].T
        return self


@pytest.fixture(scope="module")
def trial():
    return generate_shortest_path(80, 0, degree=2, eps_bar=0.3, eta_bar=0.3, seed=11)


def test_validation_split_is_a_seeded_partition():
    train, val = validation_split(100, 0.25, random_state=3)
    assert len(val) == 25 and len(train) == 75
    np.testing.assert_array_equal(np.sort(np.concatenate([train, val])), np.arange(100))
    again = validation_split(100, 0.25, random_state=3)
    np.testing.assert_array_equal(val, again[1])
    assert not np.array_equal(val, validation_split(100, 0.25, random_state=4)[1])
    assert [len(part) for part in validation_split(2, 0.01)] == [1, 1]
    with pytest.raises(ValueError):
        validation_split(1)


def test_grid_search_picks_the_clear_best_cell_and_refits_on_all_samples(trial):
    Z, C = trial.train.Z, trial.train.C
    basis = trial.lp.solve(C).basis
    SignedOLS.log.clear()
    result = grid_search(SignedOLS, {"sign": [-1.0, 1.0, -2.0]}, Z, None, trial.lp, C, basis=basis,
                         problem="shortest_path", random_state=5)
    assert result.best_params == {"sign": 1.0}
    scores = result.scores["mean_relative_loss"].to_numpy()
    assert scores[1] < 0.5 * min(scores[0], scores[2])
    assert result.scores["sign"].tolist() == [-1.0, 1.0, -2.0]
    # Three cell fits on the 60 training samples with the matching bases, then one refit on all 80.
    assert [entry["n"] for entry in SignedOLS.log] == [60, 60, 60, 80]
    for entry in SignedOLS.log[:3]:
        np.testing.assert_array_equal(entry["basis"], basis[result.train_idx])
    np.testing.assert_array_equal(SignedOLS.log[3]["basis"], basis)
    np.testing.assert_allclose(result.best_model.coef_, OLS().fit(Z, C=C).coef_)


def test_grid_search_scores_equal_a_by_hand_validation_loop(trial):
    Z, C, lp = trial.train.Z, trial.train.C, trial.lp
    X_star = lp.solve(C).x
    lams = [1e-2, 1e2, 1e4]
    result = grid_search(Ridge, {"lam": lams}, Z, X_star, lp, C, None, "shortest_path", random_state=1)
    train, val = validation_split(len(Z), 0.25, random_state=1)
    by_hand = []
    for lam in lams:
        decisions = Ridge(lam=lam).fit(Z[train], C=C[train]).decide(Z[val], lp).x
        by_hand.append(per_sample_metrics(C[val], decisions, X_star[val], "shortest_path")["relative_loss"].mean())
    np.testing.assert_allclose(result.scores["mean_relative_loss"], by_hand, rtol=1e-12)
    assert result.best_params == {"lam": lams[int(np.argmin(by_hand))]}
    np.testing.assert_allclose(result.best_model.coef_, Ridge(lam=result.best_params["lam"]).fit(Z, C=C).coef_)


def test_ties_go_to_the_first_cell_and_runs_are_deterministic(trial):
    Z, C = trial.train.Z, trial.train.C
    # Positive rescalings of the same costs give identical decisions: a tie.
    first = grid_search(SignedOLS, {"sign": [3.0, 1.0]}, Z, None, trial.lp, C, None, "shortest_path",
                        random_state=2, progress=True)
    again = grid_search(SignedOLS, {"sign": [3.0, 1.0]}, Z, None, trial.lp, C, None, "shortest_path",
                        random_state=2)
    assert first.scores["mean_relative_loss"].nunique() == 1
    assert first.best_params == {"sign": 3.0}
    np.testing.assert_array_equal(first.val_idx, again.val_idx)
    np.testing.assert_array_equal(first.scores["mean_relative_loss"], again.scores["mean_relative_loss"])


def test_costs_are_withheld_from_inverse_methods_and_failures_can_be_recorded():
    knapsack = generate_knapsack(40, 1, degree=1, seed=0)
    Z, C = knapsack.train.Z, knapsack.train.C
    result = grid_search(InverseOnly, {"sign": [1.0]}, Z, None, knapsack.lp, C, None, "knapsack")
    assert np.isfinite(result.scores["mean_relative_loss"]).all()
    recorded = grid_search(SignedOLS, {"fail": [True, False]}, Z, None, knapsack.lp, C, None, "knapsack",
                           on_error="nan")
    assert recorded.best_params == {"fail": False}
    assert "solver failure" in recorded.scores.loc[0, "error"]
    with pytest.raises(RuntimeError, match="solver failure"):
        grid_search(SignedOLS, {"fail": [True]}, Z, None, knapsack.lp, C, None, "knapsack")


RADIUS_FACTORS = np.linspace(0.8, 2.0, 7)


def test_radius_grids():
    V = np.array([[3.0, 0.0], [0.0, 4.0]])
    np.testing.assert_allclose(radius_grid(V, RADIUS_FACTORS), RADIUS_FACTORS * 5.0)
    np.testing.assert_allclose(radius_grid(5.0, factors=[1.0, 2.0]), [5.0, 10.0])
    with pytest.raises(ValueError):
        radius_grid(np.zeros((2, 2)), RADIUS_FACTORS)
    trial = generate_shortest_path(30, 0, degree=1, seed=0)
    grid = data_driven_radius_grid(OLS, trial.train.Z, lp=trial.lp, C=trial.train.C, factors=RADIUS_FACTORS)
    norm = np.linalg.norm(OLS().fit(trial.train.Z, C=trial.train.C).coef_)
    np.testing.assert_allclose(grid, RADIUS_FACTORS * norm)


def _project_parameters(env: str) -> dict:
    """The project's parameters (conf/base with `env` soft-merged over it), as a run loads them."""
    from pathlib import Path

    from mom_pipeline.settings import ProjectConfigLoader

    conf = Path(__file__).resolve().parents[2] / "conf"
    return ProjectConfigLoader(str(conf), base_env="base", default_run_env=env)["parameters"]


def test_paper_grids_are_in_the_parameters():
    """The YAML is the only source of grids: the paper's ranges are what the figures tune."""
    parameters = _project_parameters("local")
    methods = parameters["fig1"]["experiment"]["methods"]
    lam = methods["MOM"]["grid"]["lam"]
    steps = methods["MOM-OGD"]["grid"]["step_size"]
    assert (min(lam), max(lam), len(lam)) == (1e-6, 1e2, 9)
    assert (min(steps), max(steps), len(steps)) == (1e-3, 1e1, 5)
    np.testing.assert_allclose(methods["MOM-OGD"]["radius_factors"], RADIUS_FACTORS)


@pytest.mark.slow
def test_figures_default_to_the_settings_that_drew_the_published_figures():
    """Where the paper's text and its released code differ, conf/base follows the released code
    (RBF kernels with the unsquared norm, figure 3 up to T = 2000, features U[-1,1]^4) and the
    text_features environment holds the text's settings (squared norm, T = 5000, U[0,1]^4)."""
    released, text = _project_parameters("local"), _project_parameters("text_features")
    rbf = [(figure, name) for figure in ("fig4", "fig6", "fig7") for name in ("RbfMOM", "RbfRidge")
           if name in released[figure]["experiment"]["methods"]]
    assert len(rbf) == 5  # figure 4 has no kernel ridge
    for figure, name in rbf:
        assert released[figure]["experiment"]["methods"][name]["params"]["rbf_norm"] == "unsquared"
        if figure != "fig7":  # the text_features environment is for the knapsack figures
            assert text[figure]["experiment"]["methods"][name]["params"]["rbf_norm"] == "squared"
    assert released["fig3"]["experiment"]["sweep"]["values"] == [100, 200, 500, 1000, 2000]
    assert text["fig3"]["experiment"]["sweep"]["values"] == [100, 200, 500, 1000, 5000]
    for figure in ("fig3", "fig4", "fig5", "fig6"):
        assert released[figure]["experiment"]["fixed"]["feature_low"] == -1.0
        assert text[figure]["experiment"]["fixed"]["feature_low"] == 0.0


def test_per_sample_constraints_are_split_with_the_samples():
    knapsack = generate_knapsack(24, 1, degree=1, eta_bar=0.2, seed=4)
    T = len(knapsack.train)
    # Per-sample copies of the constraints with sample-specific budgets: (T, m, n) and (T, m).
    A = np.repeat(knapsack.lp.A[None], T, axis=0)
    b = np.repeat(knapsack.lp.b[None], T, axis=0) * np.linspace(0.8, 1.0, T)[:, None]
    b[:, 1:] = 1.0  # keep x <= 1
    lp = StandardFormLP(A=A, b=b)
    C = knapsack.train.C
    X_star = lp.solve(C).x
    result = grid_search(Ridge, {"lam": [1e-3, 1e3]}, knapsack.train.Z, X_star, lp, C, None, "knapsack")
    val = result.val_idx
    decisions = Ridge(lam=1e-3).fit(knapsack.train.Z[result.train_idx], C=C[result.train_idx]).decide(
        knapsack.train.Z[val], lp.subset(val)).x
    expected = per_sample_metrics(C[val], decisions, X_star[val], "knapsack")["relative_loss"].mean()
    assert result.scores.loc[0, "mean_relative_loss"] == pytest.approx(expected, rel=1e-9, abs=1e-12)
    assert result.best_model.coef_.shape == (lp.n, knapsack.train.Z.shape[1])


def test_grid_search_fits_spo_plus_cells_together_with_the_same_result(trial, monkeypatch):
    from mom_pipeline.methods.baselines import SPOPlus

    Z, C, lp = trial.train.Z, trial.train.C, trial.lp
    X_star = lp.solve(C).x
    grid = {"lam": [1e-6, 1e-2], "step_size": [0.01, 1.0]}
    make = lambda **params: SPOPlus(n_steps=30, **params)  # noqa: E731
    joint_fits = []
    fit_many = SPOPlus.fit_many
    monkeypatch.setattr(SPOPlus, "fit_many", classmethod(
        lambda cls, models, *args, **kwargs: joint_fits.append(len(models)) or fit_many(models, *args, **kwargs)))
    together = grid_search(make, grid, Z, X_star, lp, C, None, "shortest_path", random_state=2)
    assert joint_fits == [4]
    monkeypatch.delattr(SPOPlus, "fit_many")
    one_by_one = grid_search(make, grid, Z, X_star, lp, C, None, "shortest_path", random_state=2)
    np.testing.assert_array_equal(together.scores["mean_relative_loss"], one_by_one.scores["mean_relative_loss"])
    assert together.best_params == one_by_one.best_params
    np.testing.assert_array_equal(together.best_model.coef_, one_by_one.best_model.coef_)


def test_grid_search_says_when_the_joint_fit_fails_and_fits_the_cells_one_by_one(trial, monkeypatch, caplog):
    """A joint fit that raises falls back to one cell at a time (each cell's own error is then
    recorded), and the log says so: that path is many times slower, and its cause is a bug."""
    from mom_pipeline.methods.baselines import SPOPlus

    Z, C, lp = trial.train.Z, trial.train.C, trial.lp
    X_star = lp.solve(C).x
    monkeypatch.setattr(SPOPlus, "fit_many", classmethod(
        lambda cls, models, *args, **kwargs: (_ for _ in ()).throw(RuntimeError("solver gave up"))))
    make = lambda **params: SPOPlus(n_steps=30, **params)  # noqa: E731
    with caplog.at_level("WARNING", logger="mom_pipeline.methods.tuning"):
        result = grid_search(make, {"lam": [1e-6, 1e-2]}, Z, X_star, lp, C, None, "shortest_path", random_state=2)
    assert "SPOPlus.fit_many failed on the 2-cell grid (RuntimeError: solver gave up)" in caplog.text
    assert result.fallbacks == ("SPOPlus.fit_many failed on the 2-cell grid (RuntimeError: solver gave up); "
                                "fitting its cells one by one",)
    assert result.scores["mean_relative_loss"].notna().all()


def test_kernel_mom_is_refitted_along_the_lam_path_to_the_same_optimum(monkeypatch, caplog):
    """The chosen kernel MOM cell is refitted on all samples along the grid's lam values from the
    largest down to the chosen one (the path adds its own intermediate values as warm starts); it
    is the same optimum as a cold fit."""
    from mom_pipeline.methods.kernels import KernelMOM

    data = generate_knapsack(80, 0, degree=4, eps_bar=0.0, feature_low=-1.0, seed=5)
    Z, C, lp = data.train.Z, data.train.C, data.lp
    solution = lp.solve(C)
    grid = {"gamma": [0.5, 2.0], "lam": [1e-6, 1e-4, 1e-2, 1.0]}
    make = lambda **params: KernelMOM(kernel="rbf", **params)  # noqa: E731
    paths = []
    fit_many = KernelMOM.fit_many.__func__
    monkeypatch.setattr(KernelMOM, "fit_many", classmethod(
        lambda cls, models, *args, **kwargs: paths.append([m.lam for m in models]) or fit_many(cls, models, *args,
                                                                                                **kwargs)))
    result = grid_search(make, grid, Z, solution.x, lp, C, solution.basis, "knapsack", random_state=1)
    chosen = result.best_params["lam"]
    path = paths[-1]
    assert chosen < max(grid["lam"])  # so the refit has a path
    above = sorted((lam for lam in grid["lam"] if lam > chosen), reverse=True)
    assert path == above + [chosen]
    cold = KernelMOM(kernel="rbf", **result.best_params).fit(Z, solution.x, lp=lp, basis=solution.basis)
    assert result.best_model.objective_ == pytest.approx(cold.objective_, rel=1e-7)
    np.testing.assert_array_equal(result.best_model.decide(Z, lp).x, cold.decide(Z, lp).x)

    # A path that fails is said in the log, and the chosen cell is fitted alone.
    monkeypatch.setattr(KernelMOM, "fit_many", classmethod(
        lambda cls, models, *args, **kwargs: (_ for _ in ()).throw(RuntimeError("path failed"))
        if len(models) > 1 else fit_many(cls, models, *args, **kwargs)))
    with caplog.at_level("WARNING", logger="mom_pipeline.methods.tuning"):
        fallback = grid_search(make, grid, Z, solution.x, lp, C, solution.basis, "knapsack", random_state=1)
    if fallback.best_params["lam"] < max(grid["lam"]):
        assert "refit path" in caplog.text and "path failed" in caplog.text
        assert any("refit path" in message for message in fallback.fallbacks)
    assert result.fallbacks == ()
    assert fallback.best_model.objective_ == pytest.approx(cold.objective_, rel=1e-7)
