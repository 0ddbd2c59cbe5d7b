"""Project settings: YAML anchor helpers (top-level `_` keys) do not leak into the parameters."""

from pathlib import Path

from mom_pipeline.settings import ProjectConfigLoader

CONF = Path(__file__).resolve().parents[1] / "conf"


def test_anchor_helpers_are_not_parameters():
    parameters = ProjectConfigLoader(str(CONF), base_env="base", default_run_env="local")["parameters"]
    assert not [key for key in parameters if key.startswith("_")]
    # the experiments that use the anchors still receive their resolved content
    assert parameters["fig1"]["experiment"]["methods"]["MOM"]["grid"]["lam"][0] == 1e-6



def test_a_loader_merges_its_parameters_once_and_every_read_gets_its_own_copy(tmp_path, monkeypatch):
    from kedro.config import OmegaConfigLoader

    for env, text in (("base", "_anchor: &grid [1, 2]\nfig1:\n  experiment: {trials: 10, grid: *grid}\n"),
                      ("smoke", "fig1:\n  experiment: {trials: 2}\n")):
        (tmp_path / env).mkdir()
        (tmp_path / env / "parameters.yml").write_text(text)
    import mom_pipeline.settings

    merges = []  # either merge: the plain one (these files have no interpolations) or OmegaConf's
    merge, plain = OmegaConfigLoader.__getitem__, mom_pipeline.settings.plain_parameters
    monkeypatch.setattr(OmegaConfigLoader, "__getitem__",
                        lambda self, key: merges.append(key) or merge(self, key))
    monkeypatch.setattr(mom_pipeline.settings, "plain_parameters",
                        lambda loader: merges.append("parameters") or plain(loader))
    loader = ProjectConfigLoader(str(tmp_path), base_env="base", default_run_env="smoke",
                                 merge_strategy={"parameters": "soft"},
                                 runtime_params={"fig1": {"experiment": {"trials": 3}}})
    first = loader["parameters"]
    assert first == {"fig1": {"experiment": {"trials": 3, "grid": [1, 2]}}}  # no anchor helper
    first["fig1"]["experiment"]["grid"].append(99)  # a reader changing its copy
    assert loader["parameters"] == {"fig1": {"experiment": {"trials": 3, "grid": [1, 2]}}}
    assert merges.count("parameters") == 1
    loader.runtime_params = {"fig1": {"experiment": {"trials": 4}}}  # other runtime parameters: merged again
    assert loader["parameters"]["fig1"]["experiment"]["trials"] == 4 and merges.count("parameters") == 2
    loader["parameters"] = {"only": 1}  # set on the loader, as Kedro allows: returned as set
    assert loader["parameters"] == {"only": 1}
