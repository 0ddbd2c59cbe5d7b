"""Standardized features inside a linear cost model's fit, with Theta mapped back to the user's units.

MOM's regularizer and its solvers see the features as given: a column in micrometres or epoch
seconds (values around 1e7..1e9) next to columns around 1 makes the QP badly conditioned and
the penalty meaningless. `FeatureStandardizer` rescales every column to unit spread before the
fit and `coef_to_user` maps the learned Theta back, so that Theta z in the user's units equals
Theta_std z_std: decisions do not depend on the units a column is written in.

* Every column is divided by its root mean square, which keeps the model class and the
  regularizer's geometry of features already on a unit scale (intercept included).
* With an intercept column (the constant column, e.g. ``add_intercept: true``), a column
  whose offset dominates its spread (epoch seconds: 1.7e9 +- 1e6) is centred and divided by
  its standard deviation instead; the intercept absorbs the centring.
A column that cannot be standardized (non-finite values, constant when it is not the one
intercept) raises `FeatureScaleError` naming it. (After standardizing no value can lie more
than sqrt(T) spreads out, so a column cannot stay extreme; when a solver still fails,
`most_extreme_feature` names the feature and observation to look at first.)
"""

from __future__ import annotations

import numpy as np

# A column whose |mean| exceeds this many standard deviations is centred when there is an
# intercept: divided by its root mean square alone it would be nearly collinear with the intercept.
CENTER_ABOVE = 10.0
# The name of the constant column the inverse pipeline appends (`inverse.add_intercept`).
INTERCEPT_NAME = "intercept"


class FeatureScaleError(ValueError):
    """A feature column that cannot be used in the fit; the message names it."""


class FeatureStandardizer:
    """z_std = (z - mean_) / scale_ column by column; the intercept column (if any) is kept at 1.

    Learned: mean_ (d,), scale_ (d,), intercept_index_ and intercept_value_ (None without
    an intercept column), feature_names_.
    """

    def fit(self, Z, feature_names=None) -> "FeatureStandardizer":
        Z = np.asarray(Z, dtype=float)
        d = Z.shape[1]
        names = [str(name) for name in (feature_names if feature_names is not None else range(d))]
        if len(names) != d:
            raise ValueError(f"{len(names)} feature names for {d} columns")
        for j in range(d):
            bad = np.flatnonzero(~np.isfinite(Z[:, j]))
            if bad.size:
                raise FeatureScaleError(f"feature {names[j]!r} has a NaN or infinite value (observation {bad[0]})")
        constant = np.flatnonzero(Z.max(axis=0) == Z.min(axis=0))
        zero = [names[j] for j in constant if Z[0, j] == 0]
        if zero:
            raise FeatureScaleError(f"feature(s) {zero} are constant zero: drop them")
        # A column named "intercept" (the one `add_intercept` appends) is the intercept, so the
        # message names the user's own constant columns, not the appended one.
        constant = sorted(constant, key=lambda j: names[j] != INTERCEPT_NAME)
        if len(constant) > 1:
            raise FeatureScaleError(f"feature(s) {[names[j] for j in constant[1:]]} are constant: they carry no "
                                    f"information beyond the intercept {names[constant[0]]!r}; drop them")
        self.intercept_index_ = int(constant[0]) if constant else None
        self.intercept_value_ = float(Z[0, constant[0]]) if constant else None
        self.feature_names_ = names
        mean, std = Z.mean(axis=0), Z.std(axis=0)
        # Centre (into the intercept) only the columns whose offset dominates their spread.
        center = (np.abs(mean) > CENTER_ABOVE * std) if self.intercept_index_ is not None else np.zeros(d, bool)
        if self.intercept_index_ is not None:
            center[self.intercept_index_] = False
        self.mean_ = np.where(center, mean, 0.0)
        self.scale_ = np.where(center, std, np.sqrt(np.mean(Z**2, axis=0)))
        return self

    def transform(self, Z) -> np.ndarray:
        return (np.asarray(Z, dtype=float) - self.mean_) / self.scale_

    def coef_to_user(self, Theta_std) -> np.ndarray:
        """Theta in the user's units: Theta z = Theta_std z_std for every z."""
        Theta_std = np.asarray(Theta_std, dtype=float)
        Theta = Theta_std / self.scale_
        if self.intercept_index_ is not None:
            Theta[:, self.intercept_index_] -= (Theta @ self.mean_) / self.intercept_value_
        return Theta

    def most_extreme_feature(self, Z) -> tuple[str, int, float]:
        """(name, observation, |value|) of the largest standardized entry: where a solver failure looks first."""
        Z_std = np.abs(self.transform(Z))
        row, column = np.unravel_index(int(np.argmax(Z_std)), Z_std.shape)
        return self.feature_names_[column], int(row), float(Z_std[row, column])
