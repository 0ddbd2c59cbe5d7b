"""Helpers of the pipeline tests: run a registered pipeline in a project copy, read its latest outputs."""

import contextlib

from kedro.framework.session import KedroSession
from kedro.framework.startup import bootstrap_project


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
