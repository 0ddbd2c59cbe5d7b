"""The malloc settings that keep freed temporaries in the process (mom_pipeline.allocator)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mom_pipeline import allocator

SRC = str(Path(__file__).resolve().parents[1] / "src")

# A child process imports the package, then allocates and frees, round after round, eight
# 3 MB arrays (above glibc's default mmap threshold, 24 MB in all) and prints the page faults of
# the rounds after the first. Kept memory is reused without faults; returned memory faults
# again on every round (768 pages per array).
CHURN = """
import resource, numpy as np
import mom_pipeline.allocator as allocator
print(allocator.keep_freed_memory())
def round_():
    arrays = [np.ones(3 * 2**20 // 8) for _ in range(8)]
    return sum(float(a[0]) for a in arrays)
round_()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    round_()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _churn(env_extra: dict) -> tuple[str, int]:
    env = {key: value for key, value in os.environ.items() if key != allocator.OPT_OUT}
    env.update(PYTHONPATH=SRC, **env_extra)
    out = subprocess.run([sys.executable, "-c", CHURN], env=env, capture_output=True, text=True, check=True).stdout.split()
    return out[0], int(out[1])


@pytest.mark.skipif(allocator.glibc() is None, reason="the settings are glibc's")
def test_freed_temporaries_are_reused_without_page_faults():
    applied, faults = _churn({})
    assert applied == "True"
    pages = 20 * 8 * (3 * 2**20 // 4096)
    assert faults < 0.05 * pages, f"{faults} page faults in 20 rounds of {pages // 20} pages"


@pytest.mark.skipif(allocator.glibc() is None, reason="the settings are glibc's")
def test_the_settings_can_be_switched_off():
    applied, faults = _churn({"MOM_PIPELINE_MALLOC": "default"})
    assert applied == "False"
    # glibc's defaults return the freed arrays: the rounds fault again (the difference the
    # settings make; if a future glibc kept them, this documents that the lever is gone).
    assert faults > 0.5 * 20 * 8 * (3 * 2**20 // 4096)


def test_an_unknown_setting_stops_the_call_with_the_variable_named():
    env = {**os.environ, "PYTHONPATH": SRC, allocator.OPT_OUT: "off"}
    call = "import mom_pipeline.allocator as allocator; allocator.keep_freed_memory()"
    result = subprocess.run([sys.executable, "-c", call], env=env, capture_output=True, text=True)
    assert result.returncode != 0
    assert "MOM_PIPELINE_MALLOC='off'" in result.stderr and "'default'" in result.stderr


@pytest.mark.slow
def test_importing_the_package_changes_no_process_setting():
    """Importing the package (and its estimators) leaves glibc's malloc settings alone: the
    settings are applied only by the explicit call (a Kedro run's hook, its trial workers)."""
    code = ("import mom_pipeline, mom_pipeline.methods, mom_pipeline.allocator as allocator; "
            "print(allocator._applied)")
    env = {key: value for key, value in os.environ.items() if key != allocator.OPT_OUT}
    out = subprocess.run([sys.executable, "-c", code], env={**env, "PYTHONPATH": SRC}, capture_output=True,
                         text=True, check=True).stdout.strip()
    assert out == "None"


def test_a_kedro_run_and_its_trial_workers_apply_the_settings(monkeypatch):
    from mom_pipeline import hooks
    from mom_pipeline.experiments import compute

    calls = []
    monkeypatch.setattr(hooks, "keep_freed_memory", lambda: calls.append("run"))
    monkeypatch.setattr(compute, "keep_freed_memory", lambda: calls.append("worker"))
    hooks.ProcessSettingsHooks().before_pipeline_run(run_params={}, pipeline=None, catalog=None)
    assert compute._in_worker(lambda a, b: a + b, 2, 3) == 5
    assert calls == ["run", "worker"]
