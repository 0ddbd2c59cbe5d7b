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
    ({"sweep": {"param": "grid", "values": [1]}}, "cannot sweep"),
    ({"sweep": {"param": "degree", "values": []}}, "empty"),
    ({"trials": 0}, "trials"),
    ({"basis_mode": "magic"}, "basis_mode"),
    ({"fixed": {"n_train": 10, "n_test": 5, "bogus": 1}}, "unknown shortest_path settings"),
    ({"fixed": {"degree": 2, "n_train": 1, "n_test": 1}}, "both swept and fixed"),
])
def test_bad_specs_are_named(change, message):
    with pytest.raises(SpecError, match=message):
        parse_spec({**BASE, **change})


def test_missing_key_is_named():
    params = dict(BASE)
    del params["seed"]
    with pytest.raises(SpecError, match="'seed'"):
        parse_spec(params)
