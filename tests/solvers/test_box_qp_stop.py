"""The interior-point box QP's stop relative to the objective it is the dual of
(`interior_point.box_qp(gap_rel=...)`): the returned point is certified within that tolerance."""

import cvxpy as cp
import numpy as np
import pytest

from mom_pipeline.solvers.interior_point import box_gap, box_qp


def _rank_deficient_box_qp(seed: int, k: int = 100, rank: int = 60):
    """A box QP whose matrix has rank below its size, like a kernel MOM's restricted dual."""
    rng = np.random.default_rng(seed)
    factor = rng.normal(size=(k, rank)) * rng.uniform(0.1, 3.0, size=k)[:, None]
    return factor @ factor.T, rng.normal(size=k), 0.5


def _optimum(Q, c, upper) -> float:
    a = cp.Variable(c.size)
    objective = 0.5 * cp.quad_form(a, cp.psd_wrap(Q)) + c @ a
    return float(cp.Problem(cp.Minimize(objective), [a >= 0, a <= upper]).solve(solver=cp.CLARABEL))


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("offset", [0.0, 50.0])
def test_relative_gap_stop_is_certified_against_cvxpy(seed, offset):
    Q, c, upper = _rank_deficient_box_qp(seed)
    f_ref = _optimum(Q, c, upper)
    rel = 1e-6
    a = box_qp(Q, c, upper, gap_tol=1e-30, gap_rel=rel, offset=offset).solution
    f = 0.5 * a @ Q @ a + c @ a
    gap = box_gap(Q, c, upper, a)
    assert a.min() >= 0 and a.max() <= upper
    assert gap <= rel * abs(f + offset)  # the certificate the stop promises ...
    assert f - f_ref <= gap + 1e-8 * abs(f_ref)  # ... bounds the distance to the optimum
    tight = box_qp(Q, c, upper, gap_tol=1e-12).solution  # the absolute stop alone, as before gap_rel
    assert 0.5 * tight @ Q @ tight + c @ tight <= f + 1e-9  # the looser stop is never better


def test_gap_at_a_round_off_floor_ends_the_iterations(monkeypatch):
    """A duality gap that stops falling above the stop (the round-off floor of tiny-lam kernel
    duals, emulated here by flooring the computed gap at 1e-7, with half steps so that no iterate
    reaches a bound and breaks the iterations down) ends them STALL_ITERATIONS iterations later
    with the last point, not after max_iter = 200 (the count before the rule)."""
    from mom_pipeline.solvers import interior_point

    Q, c, upper = _rank_deficient_box_qp(0)
    true_gap = interior_point.box_gap_of_gradient
    monkeypatch.setattr(interior_point, "box_gap_of_gradient", lambda g, u, a: max(true_gap(g, u, a), 1e-7))
    step = interior_point.longest_step
    monkeypatch.setattr(interior_point, "longest_step", lambda *pairs: 0.5 * step(*pairs))
    factorizations = []
    factor = interior_point.cho_factor_symmetric
    monkeypatch.setattr(interior_point, "cho_factor_symmetric",
                        lambda S, overwrite=False: factorizations.append(1) or factor(S, overwrite))
    with pytest.raises(interior_point.BoxQPStalled) as stalled:
        box_qp(Q, c, upper, tol=0.0, gap_tol=1e-12)
    assert len(factorizations) < 100
    assert box_gap(Q, c, upper, stalled.value.iterate) <= 1e-6  # the floor's point: close to the optimum
