"""A two-variable LP whose prescriptions are unbounded outside the training range (tests of
the inverse layer and of the prescribe pipeline)."""

import pandas as pd


def two_choice_tables(z) -> dict:
    """min c'x over x_0 + x_1 >= 1, x >= 0 (no upper bound): x_0 = 1 is observed when z < 0,
    x_1 = 1 otherwise. The learnt costs of x_0 (x_1) fall below the slack's far enough left
    (right) of the training range: that context's LP is unbounded."""
    ids = [f"obs-{t:02d}" for t in range(len(z))]
    return {"features": pd.DataFrame({"id": ids, "z": z}),
            "decisions": pd.DataFrame({"id": ids, "x_0": (z < 0).astype(float), "x_1": (z >= 0).astype(float)}),
            "constraints": pd.DataFrame({"id": ["*", "*"], "kind": ["ub", "ub"], "row": [0, 0], "col": [0, 1],
                                         "value": [-1.0, -1.0]}),
            "rhs": pd.DataFrame({"id": ["*"], "kind": ["ub"], "row": [0], "rhs": [-1.0]}),
            "bounds": None}
