"""Helpers of the pipeline tests: make a project copy, run a registered pipeline in it, read its latest outputs."""

import contextlib
import copy
import functools
import hashlib
import json
import shutil
from pathlib import Path

from kedro.framework.session import KedroSession
from kedro.framework.startup import bootstrap_project

from mom_pipeline.tracking import LOCAL_ARTIFACTS, LOCAL_STORE, local_tracking_uri

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def parameters_read_once_per_content(getitem):
    """`getitem` (a config loader's __getitem__) with its "parameters" remembered by what they
    are made of: every file of the base and run environments' folders (their bytes), the
    environments, the merge strategy, the file patterns and the runtime parameters. The same
    content gives the remembered result (a copy: callers may change theirs); a changed file, an
    environment or a runtime parameter gives a new merge. Errors are never remembered."""
    remembered: dict[str, dict] = {}

    def content_key(loader) -> str:
        digest = hashlib.sha256()
        conf = Path(loader.conf_source)
        env = loader.env or loader.default_run_env
        digest.update(json.dumps([type(loader).__qualname__, loader.base_env, env, loader.merge_strategy,
                                  loader.config_patterns.get("parameters"), loader.runtime_params],
                                 sort_keys=True, default=repr).encode())
        for folder in dict.fromkeys((loader.base_env, env)):
            for path in sorted((conf / folder).rglob("*")) if (conf / folder).is_dir() else ():
                if path.is_file():
                    digest.update(str(path.relative_to(conf)).encode() + b"\0" + path.read_bytes() + b"\0")
        return digest.hexdigest()

    @functools.wraps(getitem)
    def __getitem__(loader, key):
        if key != "parameters" or key in loader.data:
            return getitem(loader, key)
        content = content_key(loader)
        if content not in remembered:
            remembered[content] = getitem(loader, key)
        return copy.deepcopy(remembered[content])

    return __getitem__


def empty_tracking_store_in(folder: Path) -> Path:
    """An MLflow store in `folder` that holds its tables and nothing else."""
    from mlflow.tracking import MlflowClient

    with contextlib.chdir(folder):  # the store's default experiment keeps its artifacts here
        MlflowClient(tracking_uri=local_tracking_uri(folder)).search_experiments()
    return folder / LOCAL_STORE


def make_project_copy(folder: Path, tracking_store: Path) -> Path:
    """A copy of the project's conf and pyproject in `folder` so runs write nothing here."""
    shutil.copytree(PROJECT_ROOT / "conf", folder / "conf", ignore=shutil.ignore_patterns("local"))
    (folder / "conf" / "local").mkdir()
    shutil.copy(PROJECT_ROOT / "pyproject.toml", folder / "pyproject.toml")
    shutil.copy(tracking_store, folder / LOCAL_STORE)
    (folder / "data").mkdir()
    (folder / "logs").mkdir()  # conf/logging.yml's log file (the repository keeps the folder)
    (folder / "src").mkdir()  # the package itself is installed; bootstrap only needs the folder
    return folder


def continue_project(template: Path, project: Path, tracking_store: Path) -> Path:
    """`project` (a project copy) set to the state of `template`, a project copy after some runs:
    its inputs and every dataset version, as if those runs had been made in `project`. The
    tracking store starts empty: the template's names the template's own artifact folder."""
    shutil.copytree(template, project, ignore=shutil.ignore_patterns(LOCAL_STORE, LOCAL_ARTIFACTS),
                    dirs_exist_ok=True)
    shutil.copy(tracking_store, project / LOCAL_STORE)
    return project


def latest(folder):
    """The newest version of a versioned dataset folder (data/.../<name>/<version>/<name>)."""
    (version,) = sorted(p for p in folder.iterdir() if p.is_dir())[-1:]
    return version / folder.name


def run(project, pipeline, **runtime):
    """Run in the project folder, as `kedro run` does (messages show paths relative to it)."""
    bootstrap_project(project)
    with contextlib.chdir(project), KedroSession.create(project_path=project, env="smoke",
                                                        runtime_params=runtime or None) as session:
        session.run(pipeline_names=[pipeline])
