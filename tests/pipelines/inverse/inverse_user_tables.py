"""The user's tables of the inverse pipeline tests: the shipped example's generator, written where
`kedro run --pipelines=inverse` reads them (data/01_raw/inverse/)."""

from mom_pipeline.inverse import make_example_dataset

TABLES = ("features", "decisions", "constraints", "rhs", "bounds", "new_contexts")


def example_tables(n_observations=60):
    return make_example_dataset(n_observations=n_observations, seed=3)


def write_user_tables(project, tables, without=()):
    folder = project / "data" / "01_raw" / "inverse"
    folder.mkdir(parents=True, exist_ok=True)
    for name in TABLES:
        if name not in without:
            tables[name].to_csv(folder / f"{name}.csv", index=False)
