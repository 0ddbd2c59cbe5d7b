"""Central finite differences of per-sample losses, for the gradient tests of the DFL methods."""

import numpy as np


def central_differences(loss_of, C_hat, h=1e-6):
    """d loss_t / d c_hat_tj by central differences, every (t, j) at once per column j."""
    grad = np.zeros_like(C_hat)
    for j in range(C_hat.shape[1]):
        step = np.zeros_like(C_hat)
        step[:, j] = h
        grad[:, j] = (loss_of(C_hat + step) - loss_of(C_hat - step)) / (2 * h)
    return grad
