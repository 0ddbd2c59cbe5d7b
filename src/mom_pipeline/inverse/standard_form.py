"""Convert LPs in inequality form to the standard form A x' = b, x' >= 0 of the LP layer.

Original LP (n variables x):

    min c'x  s.t.  A_ub x <= b_ub,  A_eq x = b_eq,  lower <= x <= upper

with lower in R u {-inf} and upper in R u {+inf} (defaults 0 and +inf, as in
scipy.optimize.linprog). Standard-form columns, in this order:

1. one main column per original variable j, by the kind of its bounds:
   * "shift" (finite lower):            x'_j = x_j - lower_j
   * "flip"  (lower = -inf, finite upper): x'_j = upper_j - x_j
   * "free"  (no finite bound):         x'_j = x+_j = max(x_j, 0)
2. the negative part x-_j = max(-x_j, 0) of every free variable (x_j = x+_j - x-_j);
3. one slack per inequality row i:      s_i = b_ub_i - A_ub_i x;
4. one slack per boxed variable j (both bounds finite): u_j = upper_j - x_j, with the row
   x'_j + u_j = upper_j - lower_j.

Rows, in this order: the equality rows kept after dropping linearly dependent ones (the
LP layer needs full row rank; see `independent_rows`), the inequality rows, the bound rows.

The map back is affine: x = D x' + offset, with D (n, n') of entries +-1 and offset = lower
(shift), upper (flip) or 0 (free). Hence c'x = (D'c)'x' + c'offset: the standard-form cost is
`cost_to_standard(c) = c D` and the objective differs by the constant
`objective_constant(c) = c'offset` (zero when every variable has lower bound 0 and no
variable is flipped). Slack columns cost nothing.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg

from ..checks import finite_samples

# Relative tolerances: rank decisions on the equality rows, and consistency of the rhs of
# the dropped rows (relative to max(1, |b|_inf)).
RANK_TOL = 1e-10
CONSISTENCY_TOL = 1e-7


class StandardFormError(ValueError):
    """The constraints cannot be put in standard form (inconsistent, empty, bad bounds).

    ``sample`` is the 0-based index of the LP in a batch (None for a single LP).
    """

    def __init__(self, reason: str, sample: int | None = None):
        self.sample = sample
        self.reason = reason
        super().__init__(reason if sample is None else f"sample {sample}: {reason}")


@dataclass(frozen=True, eq=False)
class OriginalConstraints:
    """The constraints of the user's LPs in inequality form, shared or per sample.

    Each array is shared (no leading T axis) or per sample (leading axis T):
    A_ub (m_ub, n) | (T, m_ub, n); b_ub (m_ub,) | (T, m_ub); A_eq (m_eq, n) | (T, m_eq, n);
    b_eq (m_eq,) | (T, m_eq); lower, upper (n,) | (T, n) with -inf / +inf allowed.
    n_samples is T (None when every array is shared).
    """

    A_ub: np.ndarray
    b_ub: np.ndarray
    A_eq: np.ndarray
    b_eq: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    n_samples: int | None = None

    _ndim_shared = {"A_ub": 2, "b_ub": 1, "A_eq": 2, "b_eq": 1, "lower": 1, "upper": 1}

    def __post_init__(self):
        for name, ndim in self._ndim_shared.items():
            arr = np.asarray(getattr(self, name), dtype=float)
            if arr.ndim not in (ndim, ndim + 1):
                raise StandardFormError(f"{name} must have {ndim} or {ndim + 1} dimensions; got shape {arr.shape}")
            if arr.ndim == ndim + 1 and self.n_samples is not None and arr.shape[0] != self.n_samples:
                raise StandardFormError(f"{name} has {arr.shape[0]} samples but n_samples is {self.n_samples}")
            object.__setattr__(self, name, arr)
        if self.n_samples is None and not self.shared:
            raise StandardFormError("per-sample constraints need n_samples")

    @property
    def n(self) -> int:
        return self.lower.shape[-1]

    def is_per_sample(self, name: str) -> bool:
        return getattr(self, name).ndim > self._ndim_shared[name]

    @property
    def shared(self) -> bool:
        """True when every sample has the same constraints."""
        return not any(self.is_per_sample(name) for name in self._ndim_shared)

    def of(self, t: int) -> dict:
        """The constraints of sample t as keyword arguments of `to_standard_form`."""
        return {name: (getattr(self, name)[t] if self.is_per_sample(name) else getattr(self, name))
                for name in self._ndim_shared}

    def subset(self, index) -> "OriginalConstraints":
        """The constraints of the samples `index` (an integer array)."""
        index = np.asarray(index)
        parts = {name: (getattr(self, name)[index] if self.is_per_sample(name) else getattr(self, name))
                 for name in self._ndim_shared}
        return OriginalConstraints(**parts, n_samples=None if self.shared else len(index))


def _batched(arr: np.ndarray, shared_ndim: int) -> bool:
    return arr.ndim > shared_ndim


@dataclass(frozen=True, eq=False)
class StandardFormMap:
    """Maps between original solutions x (n,) and standard-form solutions x' (n',).

    x = D x' + offset and x' = split(G x + g), where split clips the main and negative
    columns of free variables (`split_columns`) at 0. D: (n, n') shared; offset (n,) or
    (T, n); G (n', n) or (T, n', n); g (n',) or (T, n'). eq_rows_kept: indices of the
    original equality rows kept in the standard form, (m_eq_kept,) or (T, m_eq_kept).
    column_names: a description of every standard-form column.
    """

    D: np.ndarray
    offset: np.ndarray
    G: np.ndarray
    g: np.ndarray
    split_columns: np.ndarray
    eq_rows_kept: np.ndarray
    column_names: tuple = field(default=())

    @property
    def n_orig(self) -> int:
        return self.D.shape[0]

    @property
    def n_std(self) -> int:
        return self.D.shape[1]

    @property
    def n_samples(self) -> int | None:
        """T when some part differs per sample, else None."""
        for arr, shared_ndim in ((self.offset, 1), (self.G, 2), (self.g, 1), (self.eq_rows_kept, 1)):
            if _batched(arr, shared_ndim):
                return arr.shape[0]
        return None

    def _check(self, X, n: int, what: str) -> np.ndarray:
        X = np.asarray(X, dtype=float)
        if X.ndim == 1:
            X = X[None, :]
        if X.ndim != 2 or X.shape[1] != n:
            raise ValueError(f"{what} must be (T, {n}); got shape {X.shape}")
        T = self.n_samples
        if T is not None and X.shape[0] != T:
            raise ValueError(f"{what} has {X.shape[0]} samples but the map is per sample with T = {T}")
        return X

    def to_original(self, X_std) -> np.ndarray:
        """x = D x' + offset for every row of X_std (T, n') -> (T, n)."""
        X_std = self._check(X_std, self.n_std, "X_std")
        return X_std @ self.D.T + self.offset

    def to_standard(self, X_orig) -> np.ndarray:
        """x' for every row of X_orig (T, n) -> (T, n'): the shifted/flipped variables, the
        positive and negative parts of free variables and the slacks that x determines."""
        X_orig = self._check(X_orig, self.n_orig, "X_orig")
        if self.G.ndim == 2:
            X_std = X_orig @ self.G.T + self.g
        else:
            X_std = np.einsum("tkn,tn->tk", self.G, X_orig) + self.g
        X_std[:, self.split_columns] = np.maximum(X_std[:, self.split_columns], 0.0)
        return X_std

    def cost_to_standard(self, C_orig) -> np.ndarray:
        """Standard-form costs c D (T, n') of original costs C_orig (T, n); slacks cost 0.

        c'x = (c D)'x' + objective_constant(c) for x = to_original(x')."""
        return self._check_costs(C_orig) @ self.D

    def objective_constant(self, C_orig) -> np.ndarray:
        """The constant c'offset (T,) that the variable shifts add to the objective."""
        C_orig = self._check_costs(C_orig)
        return np.einsum("tn,tn->t", C_orig, np.broadcast_to(self.offset, C_orig.shape))

    def _check_costs(self, C_orig) -> np.ndarray:
        return finite_samples("C_orig", C_orig, n_columns=self.n_orig, one_sample_as_row=True)

    def subset(self, index) -> "StandardFormMap":
        """The map of the samples `index` (the same object when nothing is per sample)."""
        if self.n_samples is None:
            return self
        index = np.asarray(index)
        pick = lambda arr, shared_ndim: arr[index] if _batched(arr, shared_ndim) else arr  # noqa: E731
        return StandardFormMap(D=self.D, offset=pick(self.offset, 1), G=pick(self.G, 2), g=pick(self.g, 1),
                               split_columns=self.split_columns, eq_rows_kept=pick(self.eq_rows_kept, 1),
                               column_names=self.column_names)


def _first_independent_rows(A_eq: np.ndarray, rank: int, tol: float) -> np.ndarray | None:
    """The first `rank` rows of A_eq, in order, that are linearly independent of the rows
    before them (Gram-Schmidt with re-orthogonalization); None if fewer are found."""
    basis = np.zeros((0, A_eq.shape[1]))
    kept = []
    for i, row in enumerate(A_eq):
        residual = row - basis.T @ (basis @ row)
        residual -= basis.T @ (basis @ residual)
        norm = np.linalg.norm(residual)
        if norm > tol * max(1.0, np.linalg.norm(row)):
            basis = np.vstack([basis, residual / norm])
            kept.append(i)
            if len(kept) == rank:
                return np.asarray(kept, dtype=np.int64)
    return None


def independent_rows(A_eq: np.ndarray, b_eq: np.ndarray) -> np.ndarray:
    """Indices (sorted) of a maximal set of linearly independent rows of A_eq.

    The rank r comes from a rank-revealing QR (column pivoting) of A_eq'; the rows kept are
    the first r rows that are independent of the rows before them, so a row that repeats or
    combines earlier rows is the one dropped. The dropped rows must be consistent: their rhs
    must be the same combination of the kept rhs as their rows are of the kept rows (else
    the equalities have no solution).

    Raises:
        StandardFormError when a dropped row is inconsistent.
    """
    m_eq, n = A_eq.shape
    if m_eq == 0:
        return np.zeros(0, dtype=np.int64)
    _, R, pivots = scipy.linalg.qr(A_eq.T, mode="economic", pivoting=True)
    diag = np.abs(np.diag(R))
    tol = RANK_TOL * max(m_eq, n)
    rank = int(np.sum(diag > tol * max(1.0, np.abs(A_eq).max())))
    kept = _first_independent_rows(A_eq, rank, tol) if 0 < rank < m_eq else None
    if kept is None:  # full rank, rank 0, or tolerances disagree: the QR pivots
        kept = np.sort(pivots[:rank])
    dropped = np.setdiff1d(np.arange(m_eq), kept)
    if dropped.size:
        if rank:
            # Rows dropped = Y @ rows kept; their rhs must be Y @ kept rhs.
            Y = np.linalg.lstsq(A_eq[kept].T, A_eq[dropped].T, rcond=None)[0].T
            implied = Y @ b_eq[kept]
        else:
            implied = np.zeros(dropped.size)
        gap = np.abs(b_eq[dropped] - implied)
        bad = np.flatnonzero(gap > CONSISTENCY_TOL * max(1.0, np.abs(b_eq).max()))
        if bad.size:
            row = int(dropped[bad[0]])
            raise StandardFormError(
                f"the equality constraints are inconsistent: eq row {row} is a combination of other rows "
                f"but its rhs differs from theirs by {gap[bad[0]]:.3g}"
            )
    return kept


def _check_vector(name: str, value, n: int, default: float) -> np.ndarray:
    if value is None:
        return np.full(n, default)
    arr = np.asarray(value, dtype=float)
    if arr.shape != (n,):
        raise StandardFormError(f"{name} must have shape ({n},); got {arr.shape}")
    return arr


def _check_rows(name_A: str, A, b, n: int) -> tuple[np.ndarray, np.ndarray]:
    if A is None:
        return np.zeros((0, n)), np.zeros(0)
    A = np.asarray(A, dtype=float).reshape(-1, n) if np.size(A) == 0 else np.asarray(A, dtype=float)
    b = np.asarray(b, dtype=float).reshape(-1)
    if A.ndim != 2 or A.shape[1] != n or b.shape != (A.shape[0],):
        raise StandardFormError(f"{name_A} must be (m, {n}) with a rhs of shape (m,); got {A.shape} and {b.shape}")
    if not (np.isfinite(A).all() and np.isfinite(b).all()):
        raise StandardFormError(f"{name_A} or its rhs has a NaN or infinite entry")
    return A, b


def to_standard_form(A_ub=None, b_ub=None, A_eq=None, b_eq=None, lower=None, upper=None,
                     n: int | None = None) -> tuple[np.ndarray, np.ndarray, StandardFormMap]:
    """One LP  A_ub x <= b_ub, A_eq x = b_eq, lower <= x <= upper  in standard form.

    Args:
        A_ub: (m_ub, n) or None; b_ub: (m_ub,). A_eq: (m_eq, n) or None; b_eq: (m_eq,).
        lower, upper: (n,) bounds, -inf / +inf allowed (defaults 0 and +inf).
        n: the number of variables when no matrix carries it.
    Returns:
        A (m', n') with full row rank, b (m',), and the StandardFormMap (shared).
    Raises:
        StandardFormError for bad shapes, NaN, lower > upper, inconsistent equalities or an
        LP without any constraint row after conversion.
    """
    if n is None:
        for arr in (A_ub, A_eq, lower, upper):
            if arr is not None and np.size(arr):
                n = np.shape(arr)[-1]
                break
        else:
            raise StandardFormError("cannot tell the number of variables: give n")
    A_ub, b_ub = _check_rows("A_ub", A_ub, b_ub, n)
    A_eq, b_eq = _check_rows("A_eq", A_eq, b_eq, n)
    lower = _check_vector("lower", lower, n, 0.0)
    upper = _check_vector("upper", upper, n, np.inf)
    if np.isnan(lower).any() or np.isnan(upper).any():
        raise StandardFormError("a bound is NaN (write -inf or inf for a missing bound)")
    bad = np.flatnonzero((lower > upper) | (lower == np.inf) | (upper == -np.inf))
    if bad.size:
        j = int(bad[0])
        raise StandardFormError(f"the bounds of x_{j} are empty: lower {lower[j]} > upper {upper[j]}")

    has_lower, has_upper = np.isfinite(lower), np.isfinite(upper)
    flip = ~has_lower & has_upper
    free = ~has_lower & ~has_upper
    boxed = has_lower & has_upper
    free_idx, boxed_idx = np.flatnonzero(free), np.flatnonzero(boxed)
    m_ub = A_ub.shape[0]
    n_std = n + free_idx.size + m_ub + boxed_idx.size
    minus_col = n + np.arange(free_idx.size)
    ub_slack_col = n + free_idx.size + np.arange(m_ub)
    bound_slack_col = n + free_idx.size + m_ub + np.arange(boxed_idx.size)

    sign = np.where(flip, -1.0, 1.0)
    D = np.zeros((n, n_std))
    D[np.arange(n), np.arange(n)] = sign
    D[free_idx, minus_col] = -1.0
    offset = np.where(has_lower, lower, np.where(flip, upper, 0.0))

    # x' = G x + g (then the free parts are clipped at 0).
    G = np.zeros((n_std, n))
    g = np.zeros(n_std)
    G[np.arange(n), np.arange(n)] = sign
    g[:n] = -sign * offset
    G[minus_col, free_idx] = -1.0
    G[ub_slack_col] = -A_ub
    g[ub_slack_col] = b_ub
    G[bound_slack_col, boxed_idx] = -1.0
    g[bound_slack_col] = upper[boxed_idx]

    kept = independent_rows(A_eq, b_eq)
    m_std = kept.size + m_ub + boxed_idx.size
    if m_std == 0:
        raise StandardFormError("the LP has no constraint rows (no equality, inequality or finite upper bound)")
    A = np.zeros((m_std, n_std))
    b = np.zeros(m_std)
    A[: kept.size, :] = A_eq[kept] @ D
    b[: kept.size] = b_eq[kept] - A_eq[kept] @ offset
    ub_rows = kept.size + np.arange(m_ub)
    A[ub_rows] = A_ub @ D
    A[ub_rows, ub_slack_col] = 1.0
    b[ub_rows] = b_ub - A_ub @ offset
    bound_rows = kept.size + m_ub + np.arange(boxed_idx.size)
    A[bound_rows, boxed_idx] = 1.0
    A[bound_rows, bound_slack_col] = 1.0
    b[bound_rows] = upper[boxed_idx] - lower[boxed_idx]

    kinds = np.where(free, "x+_{j}", np.where(flip, "upper_{j} - x_{j}", "x_{j} - lower_{j}"))
    names = [str(kind).format(j=j) for j, kind in enumerate(kinds)]
    names += [f"x-_{j}" for j in free_idx] + [f"slack_ub_{i}" for i in range(m_ub)]
    names += [f"upper_{j} - x_{j} (bound slack)" for j in boxed_idx]
    std_map = StandardFormMap(D=D, offset=offset, G=G, g=g, split_columns=np.concatenate([free_idx, minus_col]),
                              eq_rows_kept=kept, column_names=tuple(names))
    return A, b, std_map


def _stack(parts: list[np.ndarray]) -> np.ndarray:
    """One shared array when every sample has the same one, else the (T, ...) stack."""
    first = parts[0]
    if all(p.shape == first.shape and np.array_equal(p, first) for p in parts[1:]):
        return first
    return np.stack(parts)


def convert_samples(constraints: OriginalConstraints, n_samples: int | None = None):
    """Standard forms of every sample, keeping the samples that convert to the same shape.

    n_samples: T when the constraints are shared (else constraints.n_samples).

    Shared constraints are converted once (fast path). Per-sample constraints are converted
    one by one; a sample fails when its conversion raises, or when its standard form differs
    in size or column meaning from that of most samples (the LP layer needs one (m', n')).

    Returns:
        A ((m', n') or (T', m', n')), b ((m',) or (T', m')), the StandardFormMap, kept
        (T',) indices of the samples converted, and failures {sample: reason}.
    """
    if constraints.shared:
        A, b, std_map = to_standard_form(**constraints.of(0), n=constraints.n)
        return A, b, std_map, np.arange(n_samples or constraints.n_samples or 1), {}
    T = constraints.n_samples
    results, failures = {}, {}
    for t in range(T):
        try:
            results[t] = to_standard_form(**constraints.of(t), n=constraints.n)
        except StandardFormError as exc:
            failures[t] = exc.reason
    if not results:
        return None, None, None, np.zeros(0, dtype=np.int64), failures
    # The signature of a standard form: its size and the meaning of its columns (D).
    signatures = {t: (A.shape, std_map.D.tobytes()) for t, (A, _, std_map) in results.items()}
    majority = Counter(signatures.values()).most_common(1)[0][0]  # ties: the first sample's
    reference = next(t for t, signature in signatures.items() if signature == majority)
    ref_A, _, ref_map = results[reference]
    for t in list(results):
        if signatures[t] != signatures[reference]:
            A_t = results.pop(t)[0]
            failures[t] = (
                f"its standard form has {A_t.shape[0]} rows and {A_t.shape[1]} columns (or other variable kinds) "
                f"but most observations have {ref_A.shape[0]} rows and {ref_A.shape[1]} columns: use the same "
                "number of constraint rows (after dropping dependent equalities) and the same kinds of bounds"
            )
    kept = np.array(sorted(results), dtype=np.int64)
    # Samples that share A (only b or the bounds differ) keep one shared A: fast bases and
    # warm-started solves in the LP layer.
    A = _stack([results[t][0] for t in kept])
    b = _stack([results[t][1] for t in kept])
    maps = [results[t][2] for t in kept]
    std_map = StandardFormMap(
        D=ref_map.D, offset=_stack([mp.offset for mp in maps]), G=_stack([mp.G for mp in maps]),
        g=_stack([mp.g for mp in maps]), split_columns=ref_map.split_columns,
        eq_rows_kept=_stack([mp.eq_rows_kept for mp in maps]), column_names=ref_map.column_names,
    )
    return A, b, std_map, kept, failures


def to_standard_form_batch(constraints: OriginalConstraints) -> tuple[np.ndarray, np.ndarray, StandardFormMap]:
    """Standard forms of a batch of LPs (see `convert_samples`); raises on the first failure.

    Returns:
        A (m', n') shared or (T, m', n'); b (m',) or (T, m'); the StandardFormMap.
    Raises:
        StandardFormError naming the first sample that cannot be converted.
    """
    A, b, std_map, _, failures = convert_samples(constraints)
    if failures:
        t = min(failures)
        raise StandardFormError(failures[t], sample=t)
    return A, b, std_map
