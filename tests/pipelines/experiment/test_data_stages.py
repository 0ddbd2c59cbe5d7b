"""The data-generation and basis-extraction stages under SequentialRunner (smoke env)."""

import numpy as np
import pytest
from kedro.io import DataCatalog, MemoryDataset
from kedro.runner import SequentialRunner

from mom_pipeline.lp import reduced_cost_operator, reduced_costs
from kedro.pipeline import Pipeline

from mom_pipeline.pipelines.experiment import data_pipeline


class KeptDataset(MemoryDataset):
    """A MemoryDataset the runner cannot release, so the test can inspect it afterwards."""

    def _release(self) -> None:
        pass


def _run(figure, params):
    catalog = DataCatalog({f"params:{figure}.experiment": MemoryDataset(params[figure]["experiment"])})
    for name in ("problem_data", "solutions", "data_summary", "basis_summary"):
        catalog[f"{figure}.{name}"] = KeptDataset(copy_mode="assign")
    stages = Pipeline(data_pipeline(), namespace=figure)
    SequentialRunner().run(stages, catalog)
    return {name: catalog.load(f"{figure}.{name}") for name in ("problem_data", "solutions", "basis_summary")}


@pytest.mark.slow
def test_shortest_path_stage_outputs(smoke_params):
    out = _run("fig1", smoke_params)
    spec = smoke_params["fig1"]["experiment"]
    n_cells = len(spec["sweep"]["values"]) * spec["trials"]
    assert len(out["problem_data"]) == len(out["solutions"]) == n_cells
    # smoke env soft-merges: sizes shrink, the rest of the experiment stays from base
    assert spec["problem"] == "shortest_path" and spec["fixed"]["eps_bar"] == 0.0
    for data, sol in zip(out["problem_data"], out["solutions"]):
        assert sol.basis_mode == "solver"
        assert sol.train.x.shape == (spec["fixed"]["n_train"], 40) and sol.train.basis.shape[1] == 24
        # no sample dropped, and the bases are dual feasible for the true costs (Lemma 1)
        M, _ = reduced_cost_operator(data.data.lp.A, sol.train.basis)
        assert reduced_costs(M, data.data.train.C).min() >= -1e-9
        np.testing.assert_allclose(sol.test.objective, np.einsum("tn,tn->t", data.data.test.C, sol.test.x))
    summary = out["basis_summary"]
    assert set(summary["basis_mode"]) == {"solver"} and (summary["mean_support"] == 8).all()


def test_support_mode_and_determinism(smoke_params):
    params = {"fig3": {"experiment": dict(smoke_params["fig3"]["experiment"], basis_mode="support")}}
    first = _run("fig3", params)
    second = _run("fig3", params)
    for a, b in zip(first["problem_data"], second["problem_data"]):
        np.testing.assert_array_equal(a.data.train.C, b.data.train.C)
    assert {s.basis_mode for s in first["solutions"]} == {"support"}
    # trials differ from one another (each has its own seed)
    assert not np.array_equal(first["problem_data"][0].data.train.Z, first["problem_data"][1].data.train.Z)
