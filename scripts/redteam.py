"""Adversarial cases against a throwaway copy of the project (issue 51's families): bad tables,
bad parameters, concurrent runs, kill -9 and resume, read-only and full disks, a kill or a full
disk injected half-way through a save, a corrupt tracking store, an unreachable Dask scheduler and
a Dask worker killed during a run, a solver edited between two runs, a clean-up after a failed run.

Each case runs `kedro run` in its own copy of a prepared project (the example's tables, one
inverse and one prescribe run) and is judged by what a user would see:

  clear error     exit != 0 and the message's last lines name what is wrong (file, id, parameter, path)
  unclear error   exit != 0 without naming it
  correct         exit 0 and the outputs are right (compared with the prepared project's run)
  silent wrong    exit 0 and a wrong or missing result
  data loss       an earlier run's output was changed or removed

Needs root for the tmpfs and read-only bind mounts (cases that cannot mount are reported as
skipped). Runs one `kedro run` at a time; about ten minutes on a free core.

    python scripts/redteam.py [--only NAME ...] [--keep]
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
KEDRO = str(Path(sys.executable).with_name("kedro"))
DASK = str(Path(sys.executable).with_name("dask"))
RAW = Path("data/01_raw/inverse")
# fig1 shrunk to one degree and one trial, so that a Dask run has a few trials to fan out
FIG1 = ("--pipelines", "shortest_path", "--namespaces", "fig1")
SMALL_FIG1 = "fig1.experiment.trials=2,fig1.experiment.sweep.values=[1]"
VERDICTS = ("clear error", "correct", "unclear error", "silent wrong", "data loss", "skipped")
EXIT_CODES: list[int] = []  # of every `kedro run` of the current case, in order
TAIL_LINES = 25  # what a user reads of a failed run: the end of its output


@dataclass
class Run:
    returncode: int
    output: str

    @property
    def tail(self) -> str:
        return "\n".join(self.output.splitlines()[-TAIL_LINES:])


@dataclass
class Outcome:
    case: str
    family: str
    verdict: str
    exit_codes: str
    note: str


def kedro(project: Path, *args: str, timeout: float = 600, env: dict | None = None,
          preexec: Callable | None = None) -> Run:
    """`kedro run --env smoke ARGS` in `project`, under nice, output merged."""
    process = subprocess.run(
        ["nice", "-n", "10", KEDRO, "run", "--env", "smoke", *args], cwd=project, env=env or _env(),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout, preexec_fn=preexec)
    EXIT_CODES.append(process.returncode)
    return Run(process.returncode, process.stdout)


def start_kedro(project: Path, *args: str, log: Path) -> subprocess.Popen:
    handle = log.open("w")
    return subprocess.Popen(["nice", "-n", "10", KEDRO, "run", "--env", "smoke", *args], cwd=project,
                            env=_env(), stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)


def _env() -> dict:
    env = dict(os.environ, KEDRO_DISABLE_TELEMETRY="true", MPLBACKEND="Agg")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    return env


def latest(project: Path, dataset: str) -> Path | None:
    """The newest version of a versioned dataset, e.g. '07_model_output/inverse/theta.csv'."""
    folder = project / "data" / dataset
    versions = sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []
    return versions[-1] / folder.name if versions else None


def digest_tree(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def names(run: Run, *needles: str) -> bool:
    tail = run.tail.lower()
    return all(needle.lower() in tail for needle in needles)


def judge_error(run: Run, *needles: str, correct_if_ok: Callable[[], tuple[bool, str]] | None = None) -> tuple[str, str]:
    """A run that should stop: clear if its last lines name every needle."""
    if run.returncode != 0:
        last = _last_error_line(run)
        return ("clear error" if names(run, *needles) else "unclear error"), last
    if correct_if_ok is not None:
        ok, note = correct_if_ok()
        return ("correct" if ok else "silent wrong"), note
    return "silent wrong", "exit 0"


def _last_error_line(run: Run) -> str:
    lines = [line.strip() for line in run.output.splitlines()
             if line.strip() and not line.strip().startswith("For further information visit")]  # pydantic's
    for line in reversed(lines):
        if re.search(r"error|refus|cannot|must|should|invalid|no space|read-only|died", line, re.IGNORECASE):
            return line[:220]
    return (lines or [""])[-1][:220]


def same_file(a: Path | None, b: Path | None) -> bool:
    return a is not None and b is not None and a.read_bytes() == b.read_bytes()


# --- the prepared project ----------------------------------------------------------------------

def prepare(folder: Path) -> Path:
    """A project copy with the example's tables after one inverse and one prescribe run."""
    sys.path.insert(0, str(ROOT / "src"))
    from mom_pipeline.inverse import make_example_dataset

    project = folder / "template"
    shutil.copytree(ROOT / "conf", project / "conf", ignore=shutil.ignore_patterns("local"))
    (project / "conf" / "local").mkdir()
    shutil.copy(ROOT / "pyproject.toml", project)
    for sub in ("data", "logs", "src"):
        (project / sub).mkdir()
    (project / RAW).mkdir(parents=True)
    for name, table in make_example_dataset(n_observations=60, seed=3).items():
        if name in ("features", "decisions", "constraints", "rhs", "bounds", "new_contexts"):
            table.to_csv(project / RAW / f"{name}.csv", index=False)
    for pipeline in ("inverse", "prescribe"):
        run = kedro(project, "--pipelines", pipeline)
        if run.returncode:
            raise SystemExit(f"preparing the project: {pipeline} failed\n{run.tail}")
    return project


class Cases:
    def __init__(self, template: Path, folder: Path):
        self.template = template
        self.folder = folder
        self.baseline = {d: latest(template, d) for d in (
            "07_model_output/inverse/theta.csv", "07_model_output/inverse/prescriptions.csv")}
        self.earlier = digest_tree(template / "data")

    def copy(self, name: str) -> Path:
        project = self.folder / name
        # without the tracking store: its runs name the template's artifact folder as theirs,
        # so a case's artifacts would land there (the case's first run makes a store of its own)
        shutil.copytree(self.template, project, symlinks=True, ignore=shutil.ignore_patterns("mlflow.db", "mlartifacts"))
        return project

    def lost(self, project: Path) -> list[str]:
        """The prepared project's files that a case changed or removed (its inputs may be edited)."""
        now = digest_tree(project / "data")
        return [p for p, h in self.earlier.items() if not p.startswith("01_raw") and now.get(p) != h]

    def theta_is_baseline(self, project: Path) -> tuple[bool, str]:
        newest = latest(project, "07_model_output/inverse/theta.csv")
        same = same_file(newest, self.baseline["07_model_output/inverse/theta.csv"])
        return same, "theta equals the prepared run's" if same else f"theta differs: {newest}"


CASES: list[tuple[str, str, Callable]] = []


def case(family: str):
    def register(fn):
        CASES.append((fn.__name__, family, fn))
        return fn
    return register


def _duplicate_header(path: Path) -> str:
    header, *rest = path.read_text().splitlines(keepends=True)
    columns = header.rstrip("\n").split(",")
    columns[2] = columns[1]
    path.write_text(",".join(columns) + "\n" + "".join(rest))
    return columns[1]


def _set_cell(path: Path, row: int, value) -> tuple[str, str]:
    """Row `row` of the table's first column after id set to `value`; returns (column, id)."""
    frame = pd.read_csv(path)
    column = frame.columns[1]
    frame[column] = frame[column].astype(object)
    frame.loc[row, column] = value
    frame.to_csv(path, index=False)
    return column, str(frame["id"].iloc[row])


def _listed_in_rejections(p: Path, row_id: str) -> tuple[bool, str]:
    rejections = latest(p, "08_reporting/inverse/rejections.csv")
    listed = rejections is not None and row_id in rejections.read_text()
    return listed, f"observation {row_id} {'listed' if listed else 'NOT listed'} in rejections.csv"


# --- bad tables ----------------------------------------------------------------------------------

@case("bad tables")
def duplicated_header_features(c: Cases, p: Path):
    column = _duplicate_header(p / RAW / "features.csv")
    return judge_error(kedro(p, "--pipelines", "inverse"), "features.csv", column)


@case("bad tables")
def duplicated_header_decisions(c: Cases, p: Path):
    column = _duplicate_header(p / RAW / "decisions.csv")
    return judge_error(kedro(p, "--pipelines", "inverse"), "decisions.csv", column)


def _outlier_in_features(p: Path, row: int, value: float) -> tuple[str, str]:
    """A clear error naming the observation, or the observation rejected and listed."""
    column, row_id = _set_cell(p / RAW / "features.csv", row, value)
    return judge_error(kedro(p, "--pipelines", "inverse"), "features.csv", str(row_id),
                       correct_if_ok=lambda: _listed_in_rejections(p, row_id))


@case("bad tables")
def cell_1e12_in_features(c: Cases, p: Path):
    return _outlier_in_features(p, 5, 1e12)


@case("bad tables")
def cell_1e300_in_new_contexts(c: Cases, p: Path):
    column, row_id = _set_cell(p / RAW / "new_contexts.csv", 2, 1e300)
    return judge_error(kedro(p, "--pipelines", "prescribe"), "new_contexts.csv", str(row_id), column)


@case("bad tables")
def missing_features_file(c: Cases, p: Path):
    (p / RAW / "features.csv").unlink()
    return judge_error(kedro(p, "--pipelines", "inverse"), "features.csv")


@case("bad tables")
def empty_features_file(c: Cases, p: Path):
    (p / RAW / "features.csv").write_text("")
    return judge_error(kedro(p, "--pipelines", "inverse"), "features.csv")


@case("bad tables")
def header_only_decisions(c: Cases, p: Path):
    path = p / RAW / "decisions.csv"
    path.write_text(path.read_text().splitlines()[0] + "\n")
    return judge_error(kedro(p, "--pipelines", "inverse"), "decisions.csv")


@case("bad tables")
def text_in_numeric_cell(c: Cases, p: Path):
    column, row_id = _set_cell(p / RAW / "features.csv", 7, "12,5mm")
    return judge_error(kedro(p, "--pipelines", "inverse"), "features.csv", column,
                       correct_if_ok=lambda: _listed_in_rejections(p, row_id))


@case("bad tables")
def cell_1e300_in_features(c: Cases, p: Path):
    return _outlier_in_features(p, 4, 1e300)


@case("bad tables")
def all_zero_features(c: Cases, p: Path):
    """Every feature 0: Theta = 0 fits nothing (issue 51 item 5)."""
    path = p / RAW / "features.csv"
    frame = pd.read_csv(path)
    frame[frame.columns[1:]] = 0.0
    frame.to_csv(path, index=False)
    run = kedro(p, "--pipelines", "inverse")

    def warned():
        said = bool(re.search(r"WARNING.*zero", run.output, re.IGNORECASE))
        return said, "a warning names the zero features" if said else "exit 0, nothing says the features are zero"
    return judge_error(run, "zero", correct_if_ok=warned)


# --- bad parameters ------------------------------------------------------------------------------

@case("bad parameters")
def params_typo(c: Cases, p: Path):
    return judge_error(kedro(p, "--pipelines", "inverse", "--params", "inverse.modle.lam=1"), "modle")


@case("bad parameters")
def params_wrong_type(c: Cases, p: Path):
    return judge_error(kedro(p, "--pipelines", "inverse", "--params", "inverse.model.lam=abc"), "inverse.model.lam")


@case("bad parameters")
def params_empty_methods(c: Cases, p: Path):
    return judge_error(kedro(p, *FIG1, "--params", "fig1.experiment.methods=[]"),
                       "fig1.experiment.methods")


@case("bad parameters")
def params_negative_grid(c: Cases, p: Path):
    return judge_error(kedro(p, *FIG1, "--params",
                             f"{SMALL_FIG1},fig1.experiment.methods.Ridge.grid.lam=[-1.0]"), "Ridge", "lam")


@case("bad parameters")
def params_zero_grid(c: Cases, p: Path):
    return judge_error(kedro(p, *FIG1, "--params", f"{SMALL_FIG1},fig1.experiment.methods.MOM.grid.lam=[0.0]"),
                       "MOM", "lam")


@case("bad parameters")
def params_empty_lambda_grid(c: Cases, p: Path):
    return judge_error(kedro(p, "--pipelines", "inverse", "--params", "inverse.tuning.lambdas=[]"),
                       "tuning.lambdas")


@case("bad parameters")
def params_huge_lambda(c: Cases, p: Path):
    run = kedro(p, "--pipelines", "inverse", "--params", "inverse.tuning.lambdas=[1e300]")

    def warned():
        said = bool(re.search(r"WARNING.*(lambda|1e\+300)", run.output, re.IGNORECASE))
        return said, "a warning names the degenerate fit" if said else "no warning about Theta = 0"
    return judge_error(run, "1e+300", correct_if_ok=warned)


@case("bad parameters")
def params_zero_folds(c: Cases, p: Path):
    return judge_error(kedro(p, "--pipelines", "inverse", "--params", "inverse.tuning.n_folds=0"),
                       "tuning.n_folds")


# --- concurrent runs, kill -9 ----------------------------------------------------------------------

@case("concurrency")
def two_inverse_runs_at_once(c: Cases, p: Path):
    """The tuned run must fit its own lambda, not the other run's (issue 51 item 1)."""
    first = start_kedro(p, "--pipelines", "inverse", log=p / "first.log")
    time.sleep(3)
    second = kedro(p, "--pipelines", "inverse", "--params", "inverse.model.lam=100")
    first.wait(timeout=600)
    EXIT_CODES.insert(0, first.returncode)
    log = (p / "first.log").read_text()
    versions = re.findall(r"theta written to (\S+theta\.csv)", log)
    if first.returncode or second.returncode or not versions:
        return "unclear error", f"exit codes {first.returncode}, {second.returncode}"
    same = same_file(Path(versions[-1]), c.baseline["07_model_output/inverse/theta.csv"])
    return ("correct", "the tuned run's theta equals the prepared run's") if same else (
        "silent wrong", "the tuned run's theta differs from the same run alone")


def _run_until(project: Path, marker: str, *args: str, timeout: float = 300) -> tuple[subprocess.Popen, str]:
    log = project / "killed.log"
    process = start_kedro(project, *args, log=log)
    deadline = time.monotonic() + timeout
    while marker not in log.read_text() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    return process, log.read_text()


def _signal_mid_inverse(p: Path, signum: int) -> subprocess.Popen | None:
    """An inverse run sent `signum` as its lambda tuning starts (several seconds, where the
    three nodes after it take under one: a signal sent when the second node completed often
    came after the run had finished); None when it ended before."""
    process, _ = _run_until(p, "Running node: tune_lambda", "--pipelines", "inverse")
    if process.poll() is not None:
        return None
    os.killpg(process.pid, signum)
    try:
        EXIT_CODES.append(process.wait(timeout=120))
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        raise
    return process


@case("kill -9")
def kill_during_inverse_then_rerun(c: Cases, p: Path):
    if not _signal_mid_inverse(p, signal.SIGKILL):
        return "skipped", "the run ended before the kill"
    run = kedro(p, "--pipelines", "inverse")
    if run.returncode:
        return "unclear error", f"the rerun after kill -9 failed: {_last_error_line(run)}"
    prescribe = kedro(p, "--pipelines", "prescribe")
    same = prescribe.returncode == 0 and same_file(
        latest(p, "07_model_output/inverse/prescriptions.csv"), c.baseline["07_model_output/inverse/prescriptions.csv"])
    return ("correct", "rerun and prescribe equal the uninterrupted run") if same else (
        "silent wrong", "prescriptions after the kill differ")


@case("kill -9")
def ctrl_c_during_inverse(c: Cases, p: Path):
    """An interrupted run must not look successful (issue 51 item 6): its run report says so."""
    try:
        process = _signal_mid_inverse(p, signal.SIGINT)
    except subprocess.TimeoutExpired:
        return "unclear error", "the run did not stop within 120 s of Ctrl-C"
    if not process:
        return "skipped", "the run ended before the interrupt"
    earlier = {r.name for r in (c.template / "data/08_reporting/run_reports").glob("*.md")}
    reports = sorted(r for r in (p / "data/08_reporting/run_reports").glob("*.md") if r.name not in earlier)
    newest = reports[-1].read_text() if reports else ""  # the interrupted run's
    if "- status: succeeded" in newest:
        return "skipped", "the run had finished before the interrupt"
    if process.returncode == 0:
        return "silent wrong", "exit 0 after Ctrl-C"
    said = re.search(r"interrupt|killed|failed", newest, re.IGNORECASE)
    return ("clear error", "the run report says: " + said.group(0)) if said else (
        "unclear error", "no run report names the interruption")


@case("kill -9")
def truncated_newest_model_then_prescribe(c: Cases, p: Path):
    """A kill or a full disk during the save leaves the newest model.pkl truncated."""
    good = latest(p, "06_models/inverse/model.pkl")
    newest = good.parent.with_name("2999-01-01T00.00.00.000Z") / good.name  # a later run's, cut short
    newest.parent.mkdir()
    newest.write_bytes(good.read_bytes()[: good.stat().st_size // 3])
    run = kedro(p, "--pipelines", "prescribe")
    return judge_error(run, newest.parent.name)


# A fault injected into every file write of a run (fsspec's local file, which kedro-datasets'
# datasets write through): the first write of a file whose path ends with SUFFIX writes half of
# its bytes, then the process is killed or the disk is full. A `sitecustomize` module on the
# run's PYTHONPATH installs it, so the run is an ordinary `kedro run`.
FAULT = """
import errno, os, signal
from fsspec.implementations.local import LocalFileOpener

_write = LocalFileOpener.write


def _cut_short(self, data, *args, **kwargs):
    if str(self.path).endswith({suffix!r}):
        _write(self, bytes(data[: len(data) // 2]))
        self.flush()
        {action}
    return _write(self, data, *args, **kwargs)


LocalFileOpener.write = _cut_short
"""
KILL = "os.kill(os.getpid(), signal.SIGKILL)"
DISK_FULL = "raise OSError(errno.ENOSPC, 'No space left on device')"


def _faulty_env(p: Path, suffix: str, action: str) -> dict:
    folder = p / "fault"
    folder.mkdir(exist_ok=True)
    (folder / "sitecustomize.py").write_text(FAULT.format(suffix=suffix, action=action))
    env = _env()
    env["PYTHONPATH"] = os.pathsep.join([str(folder), env["PYTHONPATH"]])
    return env


def _cut_files(c: Cases, p: Path, dataset: str) -> list[Path]:
    """Files at a final path of `dataset` (e.g. '06_models/inverse/model.pkl') written after the
    prepared runs: with the fault injected, each is cut short."""
    folder = p / "data" / dataset
    prepared = {v.name for v in (c.template / "data" / dataset).iterdir()}
    return [v / folder.name for v in sorted(folder.iterdir()) if v.name not in prepared and (v / folder.name).exists()]


@case("kill -9")
def kill_9_while_saving_the_model_then_from_nodes(c: Cases, p: Path):
    """kill -9 half-way through writing model.pkl, then a run from the nodes that read it."""
    killed = kedro(p, "--pipelines", "inverse", env=_faulty_env(p, "model.pkl", KILL))
    if killed.returncode != -signal.SIGKILL:
        return "unclear error", f"the injected kill did not happen (exit {killed.returncode})"
    if cut := _cut_files(c, p, "06_models/inverse/model.pkl"):
        return "silent wrong", f"a truncated model is left as a version: {cut[0]}"
    rerun = kedro(p, "--pipelines", "inverse", "--from-nodes", "inverse.coefficients_table,inverse.training_report")
    if rerun.returncode:
        return judge_error(rerun, "model.pkl")
    ok, note = c.theta_is_baseline(p)
    return ("correct" if ok else "silent wrong"), "no truncated model.pkl; the --from-nodes run read the previous " \
        "model: " + note


def _disk_full_while_saving(c: Cases, p: Path, dataset: str) -> tuple[str, str]:
    """The disk full half-way through writing `dataset`'s file: a clear error naming the path, no
    truncated file left as a version, and prescribe afterwards as before."""
    name = Path(dataset).name
    run = kedro(p, "--pipelines", "inverse", env=_faulty_env(p, name, DISK_FULL))
    if cut := _cut_files(c, p, dataset):
        return "silent wrong", f"a truncated {name} is left as a version: {cut[0]}"
    verdict = judge_error(run, "no space", name)
    after = kedro(p, "--pipelines", "prescribe")
    if after.returncode or not same_file(latest(p, "07_model_output/inverse/prescriptions.csv"),
                                         c.baseline["07_model_output/inverse/prescriptions.csv"]):
        return "unclear error", f"prescribe afterwards: exit {after.returncode}, {_last_error_line(after)}"
    return verdict[0], verdict[1] + "; no truncated file left, prescribe afterwards as before"


@case("storage")
def disk_full_while_saving_a_figure(c: Cases, p: Path):
    return _disk_full_while_saving(c, p, "08_reporting/inverse/lambda_validation.png")


@case("storage")
def disk_full_while_saving_a_csv(c: Cases, p: Path):
    return _disk_full_while_saving(c, p, "07_model_output/inverse/theta.csv")


# --- storage ---------------------------------------------------------------------------------------

@contextlib.contextmanager
def tmpfs(where: Path, size: str):
    where.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], check=True,
                   capture_output=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(folder: Path, leave_bytes: int = 0) -> None:
    """Fill the file system of `folder`, leaving about `leave_bytes` free."""
    free = shutil.disk_usage(folder).free - leave_bytes
    with (folder / "filler").open("wb") as handle:
        with contextlib.suppress(OSError):
            handle.write(b"\0" * max(free, 0))


def _mountable() -> bool:
    with tempfile.TemporaryDirectory() as probe:
        return subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", probe], capture_output=True
                              ).returncode == 0 and subprocess.run(["umount", probe]).returncode == 0


@contextlib.contextmanager
def _on_tmpfs(p: Path, mount: Path, size: str, names: tuple[str, ...]):
    """The project's `names` moved onto a tmpfs of `size` at `mount` (symlinked from the project),
    and moved back before it is unmounted (the run's data-loss check reads them after the case)."""
    with tmpfs(mount, size):
        for name in names:
            shutil.move(p / name, mount / name)
            (p / name).symlink_to(mount / name)
        try:
            yield mount
        finally:
            for name in names:
                (p / name).unlink()
                shutil.move(mount / name, p / name)


def _data_on_tmpfs(p: Path, mount: Path, size: str):
    return _on_tmpfs(p, mount, size, ("data",))


def _make_store(p: Path) -> None:
    """The project's MLflow store with its tables, as after a first tracked run."""
    (p / "mlartifacts").mkdir(exist_ok=True)
    if not (p / "mlflow.db").exists():
        sys.path.insert(0, str(ROOT / "src"))
        from mlflow.tracking import MlflowClient

        from mom_pipeline.tracking import local_tracking_uri
        with contextlib.chdir(p):
            MlflowClient(tracking_uri=local_tracking_uri(p)).search_experiments()


def _store_on_tmpfs(p: Path, mount: Path):
    _make_store(p)
    return _on_tmpfs(p, mount, "4m", ("mlflow.db", "mlartifacts"))


@case("storage")
def full_disk_under_data(c: Cases, p: Path):
    with _data_on_tmpfs(p, c.folder / "mnt_data", "4m"):
        fill(p / "data", leave_bytes=40_000)  # the run starts, then a save finds no room
        run = kedro(p, "--pipelines", "inverse")
        verdict = judge_error(run, "no space", str(p / "data"))
        (p / "data" / "filler").unlink()
        lost = c.lost(p)
        after = kedro(p, "--pipelines", "prescribe")
        if lost:
            return "data loss", f"changed or removed: {lost[:3]}"
        if after.returncode == 0 and not same_file(latest(p, "07_model_output/inverse/prescriptions.csv"),
                                                   c.baseline["07_model_output/inverse/prescriptions.csv"]):
            return "silent wrong", "prescribe after freeing the disk used the failed run's model"
        if after.returncode:
            verdict = (verdict[0], verdict[1] + f"; prescribe after freeing the disk: {_last_error_line(after)}")
        return verdict


@case("storage")
def full_disk_under_tracking_store(c: Cases, p: Path):
    with _store_on_tmpfs(p, c.folder / "mnt_store") as mount:
        fill(mount)
        run = kedro(p, "--pipelines", "inverse")
        said = "mlflow.db" in run.output and re.search(r"WARNING.*(track|mlflow)", run.output, re.IGNORECASE)
        if run.returncode == 0:
            ok, note = c.theta_is_baseline(p)
            return ("correct" if ok and said else "silent wrong" if not ok else "unclear error"), (
                note + ("; a warning names the store" if said else "; no warning names mlflow.db"))
        return judge_error(run, "mlflow.db")


@case("storage")
def tracking_store_fills_during_run(c: Cases, p: Path):
    with _store_on_tmpfs(p, c.folder / "mnt_store2") as mount:
        fill(mount, leave_bytes=12_000)  # the run is created, its artifacts do not fit
        run = kedro(p, "--pipelines", "inverse")
        if run.returncode == 0:
            ok, note = c.theta_is_baseline(p)
            said = bool(re.search(r"WARNING.*(mlflow\.db|mlartifacts|track)", run.output, re.IGNORECASE))
            artifacts = [f for f in (mount / "mlartifacts").rglob("*") if f.is_file()]
            if not said and not artifacts:
                return "silent wrong", note + "; the run's artifacts are missing and nothing said so"
            return ("correct" if ok else "silent wrong"), note + (
                "; a warning names the store" if said else f"; {len(artifacts)} artifacts stored")
        return judge_error(run, "mlartifacts" if "mlartifacts" in run.output else "mlflow.db")


@case("storage")
def read_only_data_folder(c: Cases, p: Path):
    data = p / "data"
    subprocess.run(["mount", "--bind", str(data), str(data)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(data)], check=True)
        run = kedro(p, "--pipelines", "inverse")
    finally:
        subprocess.run(["umount", "-l", str(data)], check=False)
    verdict = judge_error(run, "read-only", "data")
    if "run report" in _last_error_line(run).lower():
        return "unclear error", "ends in the run report's own error: " + _last_error_line(run)
    return verdict


def _judge_untracked_run(c: Cases, p: Path, run: Run) -> tuple[str, str]:
    """A store that cannot be used: the run goes on untracked, with a warning naming it."""
    if run.returncode == 0:
        ok, note = c.theta_is_baseline(p)
        said = "mlflow.db" in run.output
        return ("correct" if ok and said else "silent wrong" if not ok else "unclear error"), (
            note + ("; a warning names mlflow.db" if said else "; nothing names mlflow.db"))
    return judge_error(run, "mlflow.db")


@case("storage")
def corrupt_tracking_store(c: Cases, p: Path):
    (p / "mlflow.db").write_bytes(b"this is not a database" * 100)
    run = kedro(p, "--pipelines", "inverse")
    return _judge_untracked_run(c, p, run)


@case("storage")
def locked_tracking_store(c: Cases, p: Path):
    """Another process holds an exclusive lock on mlflow.db for the whole run."""
    _make_store(p)
    locker = subprocess.Popen([sys.executable, "-c", "import sqlite3, sys, time; db = sqlite3.connect(sys.argv[1], "
                               "isolation_level=None); db.execute('BEGIN EXCLUSIVE'); print('locked', flush=True); "
                               "time.sleep(3600)", str(p / "mlflow.db")], stdout=subprocess.PIPE, text=True)
    try:
        locker.stdout.readline()
        run = kedro(p, "--pipelines", "inverse", timeout=400)
    finally:
        locker.kill()
        locker.wait()
    return _judge_untracked_run(c, p, run)


@case("storage")
def clean_data_after_a_failed_inverse_run(c: Cases, p: Path):
    """`make clean-data KEEP=1` after a failed inverse run, then prescribe (issue 51 item 7)."""
    failed = kedro(p, "--pipelines", "inverse", "--params", "inverse.tuning.lambdas=[1e300]")
    if failed.returncode == 0:
        return "silent wrong", "the run with lambda 1e300 ended with exit 0"
    cleanup = subprocess.run([sys.executable, "-m", "mom_pipeline.data_cleanup", "--keep", "1", "--data", "data"],
                             cwd=p, env=_env(), capture_output=True, text=True)
    if cleanup.returncode:
        return "unclear error", "make clean-data failed: " + cleanup.stderr.strip().splitlines()[-1][:200]
    prescribe = kedro(p, "--pipelines", "prescribe")
    prepared = c.baseline["07_model_output/inverse/prescriptions.csv"]
    if prescribe.returncode == 0:
        same = same_file(latest(p, "07_model_output/inverse/prescriptions.csv"), prepared)
        return ("correct", "prescribe after the clean-up used the kept model with its problem") if same else (
            "silent wrong", "prescriptions after the clean-up differ")
    version = prepared.parent.name  # the prepared run's id: its model and problem must both be kept
    pinned = kedro(p, "--pipelines", "prescribe", "--load-versions", f"inverse.problem:{version}")
    if pinned.returncode or not same_file(latest(p, "07_model_output/inverse/prescriptions.csv"), prepared):
        return "data loss", f"the kept model cannot be used with its run's problem: {_last_error_line(pinned)}"
    return judge_error(prescribe, "--load-versions")


# --- code-aware reuse ------------------------------------------------------------------------------

@case("reuse")
def solver_changed_then_rerun(c: Cases, p: Path):
    """A solver constant edited between two runs: MOM must be trained again (issue 51 item 2)."""
    package = p / "package"
    shutil.copytree(ROOT / "src" / "mom_pipeline", package / "mom_pipeline", ignore=shutil.ignore_patterns("__pycache__"))
    env = _env()
    env["PYTHONPATH"] = os.pathsep.join([str(package), env["PYTHONPATH"]])
    first = kedro(p, *FIG1, "--params", SMALL_FIG1, env=env)
    if first.returncode:
        return "unclear error", f"the first fig1 run failed: {_last_error_line(first)}"
    solver = package / "mom_pipeline" / "solvers" / "hinge_working_set.py"
    text, count = re.subn(r"^(RESTRICTED_CLARABEL_TOL = .+)$", r"\1 * 0.5", solver.read_text(), flags=re.MULTILINE)
    if count != 1:
        return "skipped", f"the solver constant to edit is no longer in {solver.name}"
    solver.write_text(text)
    second = kedro(p, *FIG1, "--params", SMALL_FIG1, env=env)
    if second.returncode:
        return judge_error(second, "fig1")
    reused = [line for line in second.output.splitlines() if "reusing" in line and (
        "finished trial" in line or re.search(r"reusing [^:]*(?<![\w-])MOM(?![\w-])", line))]  # not MOM-OGD
    if reused:
        return "silent wrong", "MOM reused after its solver changed: " + reused[0].strip()[:160]
    return "correct", "MOM trained again after its solver changed"


# --- Dask ------------------------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@case("dask")
def dask_scheduler_unreachable(c: Cases, p: Path):
    run = kedro(p, *FIG1, "--params",
                f"{SMALL_FIG1},compute.backend=dask,compute.n_jobs=2,compute.dask_address=tcp://127.0.0.1:9")
    return judge_error(run, "compute.dask_address", "tcp://127.0.0.1:9")


@contextlib.contextmanager
def dask_cluster(p: Path, nanny: bool):
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    logs = (p / "scheduler.log").open("w"), (p / "worker.log").open("w")
    scheduler = subprocess.Popen(["nice", "-n", "10", DASK, "scheduler", "--host", "127.0.0.1", "--port", str(port),
                                  "--no-dashboard"], stdout=logs[0], stderr=subprocess.STDOUT, start_new_session=True)
    SCHEDULERS.append(scheduler)
    worker = subprocess.Popen(["nice", "-n", "10", DASK, "worker", address, "--nthreads", "1", "--no-dashboard",
                               *([] if nanny else ["--no-nanny"])], cwd=p, env=_env(), stdout=logs[1],
                              stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while "Registered to" not in (p / "worker.log").read_text() and time.monotonic() < deadline:
            time.sleep(0.5)
        yield address, worker
    finally:
        for process in (worker, scheduler):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


SCHEDULERS: list[subprocess.Popen] = []  # the scheduler of the current cluster is the last


def _worker_process(worker: subprocess.Popen, nanny: bool) -> int:
    """The pid running the tasks: the worker itself, or the nanny's child."""
    if not nanny:
        return worker.pid
    children = subprocess.run(["pgrep", "-P", str(worker.pid)], capture_output=True, text=True).stdout.split()
    # `nice` execs, so worker.pid is the nanny; its children are the worker (and a resource tracker)
    return max(int(pid) for pid in children)


def _kill_worker_during_fig1(c: Cases, p: Path, nanny: bool):
    with dask_cluster(p, nanny) as (address, worker):
        params = (f"fig1.experiment.trials=8,fig1.experiment.sweep.values=[1],storage.resume=false,"
                  f"compute.backend=dask,compute.n_jobs=2,compute.dask_address={address}")
        process, log = _run_until(p, "dask: computing on", *FIG1, "--params", params)
        time.sleep(0.5)
        os.kill(_worker_process(worker, nanny), signal.SIGKILL)
        done = len(re.findall(r"train: trial \d+/\d+ done", (p / "killed.log").read_text()))
        if process.poll() is not None or done >= 8:
            return "skipped", f"the run had trained {done} of 8 trials when the worker was killed"
        try:
            process.wait(timeout=150)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            said = re.search(rf"WARNING.*{re.escape(address)}.*no worker", (p / "killed.log").read_text())
            if said:  # the scheduler keeps the trials for a worker to join; the run says so
                return "clear error", "waits for a worker, saying so: " + said.group(0)[:160]
            return "unclear error", "the run waited 150 s after the worker died and said nothing"
        EXIT_CODES.append(process.returncode)
        run = Run(process.returncode, (p / "killed.log").read_text())
        if run.returncode == 0:
            return "correct", f"killed after {done} of 8 trials; a restarted worker took the rest over, the run finished"
        return judge_error(run, address)


@case("dask")
def dask_scheduler_killed_during_run(c: Cases, p: Path):
    with dask_cluster(p, nanny=True) as (address, worker):
        params = (f"fig1.experiment.trials=8,fig1.experiment.sweep.values=[1],storage.resume=false,"
                  f"compute.backend=dask,compute.n_jobs=2,compute.dask_address={address}")
        process, _ = _run_until(p, "dask: computing on", *FIG1, "--params", params)
        time.sleep(0.5)
        os.killpg(SCHEDULERS[-1].pid, signal.SIGKILL)
        try:
            EXIT_CODES.append(process.wait(timeout=200))
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            return "unclear error", "the run waited 200 s after the scheduler died and said nothing"
        run = Run(process.returncode, (p / "killed.log").read_text())
        if run.returncode == 0:
            return "correct", "the run finished (the trials were done before the scheduler went)"
        return judge_error(run, address)


@case("dask")
def dask_worker_killed_nanny_restarts(c: Cases, p: Path):
    return _kill_worker_during_fig1(c, p, nanny=True)


@case("dask")
def dask_worker_killed_no_worker_left(c: Cases, p: Path):
    return _kill_worker_during_fig1(c, p, nanny=False)


# ----------------------------------------------------------------------------------------------------

STORAGE_CASES = {"full_disk_under_data", "full_disk_under_tracking_store", "tracking_store_fills_during_run",
                 "read_only_data_folder"}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="*", help="case names (default: all)")
    parser.add_argument("--keep", action="store_true", help="keep the project copies (printed folder)")
    args = parser.parse_args(argv)
    selected = [c for c in CASES if not args.only or c[0] in args.only]
    folder = Path(tempfile.mkdtemp(prefix="redteam_"))
    mountable = _mountable()
    outcomes = []
    try:
        cases = Cases(prepare(folder), folder)
        for name, family, fn in selected:
            if name in STORAGE_CASES and not mountable:
                outcomes.append(Outcome(name, family, "skipped", "", "needs root to mount a tmpfs"))
                continue
            project = cases.copy(name)
            EXIT_CODES.clear()
            started = time.monotonic()
            verdict, note = fn(cases, project)
            if verdict not in ("data loss", "skipped") and (lost := cases.lost(project)):
                verdict, note = "data loss", f"changed or removed: {lost[:3]}"
            outcomes.append(Outcome(name, family, verdict, ",".join(map(str, EXIT_CODES)), note))
            print(f"{name:40s} {verdict:14s} exit {outcomes[-1].exit_codes:8s} {time.monotonic() - started:5.0f} s  {note}", flush=True)
    finally:
        if args.keep:
            print("project copies in", folder)
        else:
            shutil.rmtree(folder, ignore_errors=True)
    counts = Counter(o.verdict for o in outcomes)
    print("\n| case | family | exit | verdict | what a user sees |\n|---|---|---|---|---|")
    for o in outcomes:
        print(f"| {o.case} | {o.family} | {o.exit_codes} | {o.verdict} | {o.note.replace('|', '/')} |")
    print("\n" + ", ".join(f"{v}: {counts[v]}" for v in VERDICTS if counts[v]))
    return 1 if counts["unclear error"] + counts["silent wrong"] + counts["data loss"] else 0


if __name__ == "__main__":
    sys.exit(main())
