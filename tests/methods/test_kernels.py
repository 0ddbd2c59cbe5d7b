"""Kernel features and kernelized MOM."""

import numpy as np
import pytest
from sklearn.metrics.pairwise import polynomial_kernel, rbf_kernel

from mom_pipeline.lp import reduced_cost_operator
from mom_pipeline.methods.kernels import KernelFeatures, KernelMOM
from mom_pipeline.methods.mom import MOM, mom_objective
from mom_pipeline.methods.mom_problem import singular_values_and_rows
from mom_pipeline.problems import generate_knapsack


@pytest.fixture(scope="module")
def contexts():
    rng = np.random.default_rng(0)
    return rng.uniform(-1, 1, size=(30, 5)), rng.uniform(-1, 1, size=(7, 5))


@pytest.fixture(scope="module")
def trial():
    trial = generate_knapsack(40, 20, degree=4, eps_bar=0.2, seed=3)
    return trial, trial.lp.solve(trial.train.C).x


@pytest.mark.parametrize("degree, gamma", [(1, 1.0), (2, 0.5), (4, 3.0)])
def test_polynomial_features(contexts, degree, gamma):
    train, new = contexts
    features = KernelFeatures(kernel="poly", degree=degree, gamma=gamma, normalize=False).fit(train).transform(new)
    manual = (new @ train.T / gamma + 1.0) ** degree  # the paper: (z'z / gamma + 1)^degree
    np.testing.assert_allclose(features, manual, rtol=1e-12)
    sklearn = polynomial_kernel(new, train, degree=degree, gamma=1.0 / gamma, coef0=1.0)
    np.testing.assert_allclose(features, sklearn, rtol=1e-12)


@pytest.mark.parametrize("gamma", [0.1, 2.0])
def test_rbf_features_squared_and_unsquared(contexts, gamma):
    train, new = contexts
    distance = np.sqrt(((new[:, None, :] - train[None, :, :]) ** 2).sum(axis=2))
    squared = KernelFeatures(kernel="rbf", gamma=gamma).fit(train).transform(new)
    np.testing.assert_allclose(squared, np.exp(-distance**2 / gamma), rtol=1e-12)
    np.testing.assert_allclose(squared, rbf_kernel(new, train, gamma=1.0 / gamma), rtol=1e-12)
    unsquared = KernelFeatures(kernel="rbf", gamma=gamma, rbf_norm="unsquared").fit(train).transform(new)
    np.testing.assert_allclose(unsquared, np.exp(-distance / gamma), rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("kernel", ["poly", "rbf"])
def test_nystroem_landmarks_with_all_samples_permute_the_full_features(contexts, kernel):
    train, new = contexts
    full = KernelFeatures(kernel=kernel).fit(train).transform(new)
    landmarks = KernelFeatures(kernel=kernel, n_components=len(train), random_state=4).fit(train)
    order = landmarks.nystroem_.component_indices_
    np.testing.assert_allclose(landmarks.transform(new), full[:, order], rtol=1e-12)


def test_nystroem_feature_map_approximates_the_kernel(contexts):
    train, _ = contexts
    features = KernelFeatures(kernel="rbf", n_components=len(train), feature_map="nystroem").fit(train)
    Phi = features.transform(train)  # on the landmarks themselves the approximation is exact
    np.testing.assert_allclose(Phi @ Phi.T, rbf_kernel(train, gamma=1.0), atol=1e-6)


def test_unsquared_rbf_through_nystroem(contexts):
    train, new = contexts
    features = KernelFeatures(kernel="rbf", rbf_norm="unsquared", n_components=10, feature_map="nystroem")
    Phi = features.fit(train).transform(new)
    assert Phi.shape == (len(new), 10) and np.all(np.isfinite(Phi))


@pytest.mark.parametrize("kernel, degree", [("poly", 2), pytest.param("rbf", 2, marks=pytest.mark.slow)])
def test_kernel_mom_is_mom_on_the_full_kernel_features(trial, kernel, degree):
    """The row-space reduction inside KernelMOM is exact: same optimum as MOM (cvxpy) on
    the full T-dimensional features."""
    trial, X = trial
    Z, lam = trial.train.Z, 1e-3
    model = KernelMOM(kernel=kernel, degree=degree, lam=lam).fit(Z, X, lp=trial.lp)
    Phi = model.transform(Z)  # the normalized kernel features
    np.testing.assert_allclose(Phi * model.features_.scale_, KernelFeatures(kernel=kernel, degree=degree,
                               normalize=False).fit(Z).transform(Z), rtol=1e-12)
    reference = MOM(lam=lam, solver="cvxpy").fit(Phi, X, lp=trial.lp)
    M, _ = reduced_cost_operator(trial.lp.A, trial.lp.basis_from_solution(X))
    assert mom_objective(model.coef_, M, Phi, lam) == pytest.approx(reference.objective_, rel=1e-6)
    assert model.objective_ == pytest.approx(reference.objective_, rel=1e-6)
    assert model.coef_.shape == (trial.lp.n, len(Z))
    np.testing.assert_allclose(model.predict_cost(trial.test.Z),
                               model.transform(trial.test.Z) @ model.coef_.T, rtol=1e-12)


def test_kernel_mom_with_all_landmarks_predicts_like_the_full_features(trial):
    trial, X = trial
    Z = trial.train.Z
    full = KernelMOM(kernel="poly", degree=2, lam=1e-2).fit(Z, X, lp=trial.lp)
    landmarks = KernelMOM(kernel="poly", degree=2, lam=1e-2, n_components=len(Z), random_state=1).fit(Z, X, lp=trial.lp)
    scale = np.abs(full.predict_cost(trial.test.Z)).max()
    np.testing.assert_allclose(landmarks.predict_cost(trial.test.Z), full.predict_cost(trial.test.Z),
                               atol=1e-5 * scale)
    np.testing.assert_allclose(landmarks.decide(trial.test.Z, trial.lp).objective,
                               full.decide(trial.test.Z, trial.lp).objective, rtol=1e-6, atol=1e-9)


def test_normalized_features_reach_one(contexts):
    train, new = contexts
    raw = KernelFeatures(kernel="poly", degree=4, gamma=0.1, normalize=False).fit(train)
    scaled = KernelFeatures(kernel="poly", degree=4, gamma=0.1).fit(train)
    assert np.abs(scaled.transform(train)).max() == pytest.approx(1.0)
    np.testing.assert_allclose(scaled.transform(new) * scaled.scale_, raw.transform(new), rtol=1e-12)
    rbf = KernelFeatures(kernel="rbf").fit(train)
    assert rbf.scale_ == pytest.approx(1.0)  # k(z, z) = 1: RBF features are unchanged


def test_names_and_errors(contexts, trial):
    train, _ = contexts
    assert KernelMOM.needs_costs is False
    with pytest.raises(ValueError, match="'kernel' parameter of KernelFeatures must be a str among"):
        KernelFeatures(kernel="sigmoid").fit(train)
    with pytest.raises(ValueError, match="rbf_norm"):
        KernelFeatures(kernel="rbf", rbf_norm="cubed").fit(train)
    with pytest.raises(ValueError, match="gamma"):
        KernelFeatures(gamma=0.0).fit(train)
    with pytest.raises(ValueError, match="n_components"):
        KernelFeatures(n_components=len(train) + 1).fit(train)
    with pytest.raises(ValueError, match="features"):
        KernelFeatures().fit(train).transform(train[:, :-1])
    with pytest.raises(ValueError, match="'lam' parameter of KernelMOM must be"):  # a grid names its own estimator
        KernelMOM.fit_many([KernelMOM(lam=1.0), KernelMOM(lam=-1.0)], train, np.zeros((len(train), 3)),
                           A=np.ones((1, 3)), b=np.ones(1))
    trial, X = trial
    with pytest.raises(ValueError, match="lam"):
        KernelMOM(lam=-1.0).fit(trial.train.Z, X, lp=trial.lp)


def test_kernel_mom_fits_when_numpy_svd_does_not_converge(trial, monkeypatch):
    """numpy's divide-and-conquer SVD sometimes fails on rank-deficient polynomial kernel
    matrices (a figure-4 trial); the row-space reduction then uses LAPACK's QR-iteration SVD
    and the fit is the same."""
    trial, x_star = trial
    fit = lambda: KernelMOM(kernel="poly", degree=3, gamma=0.5, lam=1e-3).fit(  # noqa: E731
        trial.train.Z, x_star, lp=trial.lp)
    reference = fit()

    def not_converging(*args, **kwargs):
        raise np.linalg.LinAlgError("SVD did not converge")

    monkeypatch.setattr(np.linalg, "svd", not_converging)
    model = fit()
    assert model.solver_info_["feature_rank"] == reference.solver_info_["feature_rank"]
    assert model.objective_ == pytest.approx(reference.objective_, rel=1e-9)
    np.testing.assert_array_equal(model.decide(trial.test.Z, trial.lp).x, reference.decide(trial.test.Z, trial.lp).x)


@pytest.mark.parametrize("kernel, params", [("poly", dict(degree=3, gamma=0.5)), ("rbf", dict(gamma=2.0))])
def test_kernel_features_row_space_by_eigendecomposition_equals_the_svd(kernel, params):
    """Training kernel features are symmetric up to round-off, so `singular_values_and_rows`
    takes their eigendecomposition: the singular values and the row space must be the SVD's."""
    Z = np.random.default_rng(4).uniform(-1.0, 1.0, (60, 4))
    Phi = KernelMOM(kernel=kernel, **params)._features().fit(Z).transform(Z)
    singular, Vt = singular_values_and_rows(Phi)
    _, reference, reference_Vt = np.linalg.svd(Phi)
    assert np.allclose(singular, reference, rtol=0, atol=1e-12 * reference[0])
    rank = int((reference > 1e-10 * reference[0]).sum())
    assert rank == int((singular > 1e-10 * singular[0]).sum())
    assert 0 < rank < 60 if kernel == "poly" else rank == 60
    # The same row space: equal orthogonal projectors onto the leading directions.
    assert np.allclose(Vt[:rank].T @ Vt[:rank], reference_Vt[:rank].T @ reference_Vt[:rank], atol=1e-8)
    # A matrix that is not symmetric still goes to the SVD.
    wide = Phi[:, :40]
    singular, Vt = singular_values_and_rows(wide)
    assert np.allclose(singular, np.linalg.svd(wide, compute_uv=False))
