"""Input checks shared by every layer (`lp/`, `methods/`, `metrics`, `inverse/`).

Ground floor: imports nothing from the project, so that any module can use it. One rule
for batches of samples: a (T, n) float array with only finite entries, and an error that
names the array, the first bad sample and its column.
"""

from __future__ import annotations

import numpy as np


def first_non_finite(arr: np.ndarray) -> tuple[int, ...] | None:
    """The index of the first NaN or infinite entry of `arr` (row-major), or None."""
    bad = ~np.isfinite(arr)
    if not bad.any():
        return None
    return tuple(int(i) for i in np.argwhere(bad)[0])


def check_finite(name: str, arr: np.ndarray, *, per_sample: bool, error: type[Exception] = ValueError) -> None:
    """Raise `error` when `arr` has a NaN or infinite entry, naming its sample (the leading
    axis, when `per_sample`) and its index within the sample."""
    where = first_non_finite(arr)
    if where is None:
        return
    value = arr[where]
    if per_sample:
        inner = f" at index {where[1:]}" if len(where) > 2 else f" in column {where[1]}" if len(where) == 2 else ""
        raise error(f"{name}: sample {where[0]} has a non-finite (NaN or infinite) entry ({value}){inner}")
    raise error(f"{name} has a non-finite (NaN or infinite) entry ({value}) at index {where}")


def as_float_array(name: str, values, error: type[Exception] = ValueError) -> np.ndarray:
    """`values` as a float array; a non-numeric input raises `error` naming `name`."""
    try:
        return np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise error(f"{name} must be a numeric array: {exc}") from exc


def finite_samples(name: str, values, *, n_samples: int | None = None, n_columns: int | None = None,
                   min_samples: int = 0, one_sample_as_row: bool = False, shape_hint: str = "",
                   error: type[Exception] = ValueError) -> np.ndarray:
    """`values` as a finite (T, n) float array (one row per sample).

    Args:
        name: how the array is called in messages (e.g. "Z", "C", "X_star").
        n_samples / n_columns: required T / n (None: any).
        min_samples: the smallest T accepted (1 refuses an empty batch).
        one_sample_as_row: accept a vector (n,) as one sample (1, n).
        shape_hint: appended to a shape error, e.g. " to match Z and the LP".
        error: the exception type raised (ValueError by default, or a layer's own error).
    Raises:
        `error` naming the array and the expected shape, or the first sample with a NaN
        or infinite entry.
    """
    arr = as_float_array(name, values, error)
    if one_sample_as_row and arr.ndim == 1:
        arr = arr[None, :]
    expected = (n_samples, n_columns)
    if arr.ndim != 2 or any(want is not None and got != want for got, want in zip(arr.shape, expected)):
        rows = "T" if n_samples is None else n_samples
        columns = "n" if n_columns is None else n_columns
        raise error(f"{name} must be ({rows}, {columns}){shape_hint}; got shape {arr.shape}")
    if arr.shape[0] < min_samples:
        raise error(f"{name} has {arr.shape[0]} samples; at least {min_samples} needed")
    check_finite(name, arr, per_sample=True, error=error)
    return arr
