"""Small RBF kernel MOM problems (knapsack samples in the kernel's row space) for the working-set tests."""

from mom_pipeline.methods.kernels import KernelMOM
from mom_pipeline.methods.mom_problem import operators_of_bases
from mom_pipeline.problems import generate_knapsack


def rbf_kernel_problem(n_train: int, degree: int, seed: int, gamma: float, rbf_norm: str = "squared"):
    """(M, features): the reduced-cost operators of the samples' bases and their RBF kernel
    features in the row space, from knapsack data with U[-1,1] features."""
    trial = generate_knapsack(n_train, 0, degree=degree, feature_low=-1.0, seed=seed)
    solution = trial.lp.solve(trial.train.C)
    model = KernelMOM(kernel="rbf", rbf_norm=rbf_norm, gamma=gamma).fit(trial.train.Z, solution.x, lp=trial.lp,
                                                                      basis=solution.basis)
    features = model.transform(trial.train.Z) @ model.row_space_
    return operators_of_bases(trial.lp.A, solution.basis), features
