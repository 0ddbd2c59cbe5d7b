"""Project settings: YAML anchor helpers (top-level `_` keys) do not leak into the parameters."""

from pathlib import Path

from mom_pipeline.settings import ProjectConfigLoader

CONF = Path(__file__).resolve().parents[1] / "conf"


def test_anchor_helpers_are_not_parameters():
    parameters = ProjectConfigLoader(str(CONF), base_env="base", default_run_env="local")["parameters"]
    assert not [key for key in parameters if key.startswith("_")]
    # the experiments that use the anchors still receive their resolved content
    assert parameters["fig1"]["experiment"]["methods"]["MOM"]["grid"]["lam"][0] == 1e-6
