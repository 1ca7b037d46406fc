"""The two recipes of the instructors' page (section "Many students, many machines"), taken
from the page itself: the Slurm job array runs on a one-node Slurm started here, and the
Kubernetes indexed Job is validated against Kubernetes' schema and the Job API's rules.
"""

from __future__ import annotations

import concurrent.futures
import csv
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.optional import missing, need
from tests.test_grading import SOLUTION_A, SOLUTION_B, _answer, _drill
from tinyk.courseware.checkout import ROOT
from tinyk.courseware.student_versions import released
from tinyk.grading import batch as grading_batch
from tinyk.grading.cli import parser

PAGE = ROOT / "book" / "instructors.md"


def page_block(language: str, marker: str) -> str:
    """The one code block in ``language`` of the instructors' page that contains ``marker``."""
    blocks = re.findall(rf"^```{language}\n(.*?)^```$", PAGE.read_text(), re.M | re.S)
    blocks = [b for b in blocks if marker in b]
    assert len(blocks) == 1, f"{PAGE}: {len(blocks)} {language} block(s) with {marker!r}, expected one"
    return blocks[0]


# ---------------------------------------------------------------- Slurm, run on localhost

SLURM_CONF = """\
ClusterName=tinyk-test
SlurmctldHost=localhost
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={munge_socket}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
# CPUs alone are what a job takes (memory too, by default: each job would hold the whole node)
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MailProg=/bin/true
ReturnToService=2
# sbatch --wait looks at the job every 2 s while MinJobAge is 4 s; with the default, 300 s,
# it waits 2 s, then 8 s, then 32 s between looks
MinJobAge=4
StateSaveLocation={base}/state
SlurmdSpoolDir={base}/spool
SlurmctldPidFile={base}/slurmctld.pid
SlurmdPidFile={base}/slurmd.pid
SlurmctldLogFile={base}/slurmctld.log
SlurmdLogFile={base}/slurmd.log
NodeName=localhost NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN
PartitionName=grading Nodes=localhost Default=YES MaxTime=INFINITE State=UP
"""


@dataclass
class Slurm:
    """A running one-node Slurm: the environment its commands need (``SLURM_CONF``) and the
    folder of its configuration and logs."""

    env: dict[str, str]
    base: Path

    def logs(self) -> str:
        """The end of each daemon's log, for a failure's message."""
        return "".join(f"\n--- {p.name}:\n" + "\n".join(p.read_text(errors="replace").splitlines()[-25:])
                       for p in sorted(self.base.glob("*.log")))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(what: str, ready, slurm: Slurm, daemons: list[subprocess.Popen], deadline: float = 60) -> None:
    """Poll ``ready()`` until it holds; fail with the daemons' logs when one of them has ended,
    or after ``deadline`` seconds (a guard far above the second or two they take to start)."""
    end = time.monotonic() + deadline
    while not ready():
        ended = [d.args[0] for d in daemons if d.poll() is not None]
        if ended or time.monotonic() > end:
            pytest.fail(f"{what} not ready: {f'{ended} ended' if ended else f'after {deadline:.0f} s'}"
                        f"{slurm.logs()}")
        time.sleep(0.2)


@pytest.fixture
def slurm(tmp_path) -> Iterator[Slurm]:
    """munged, slurmctld and slurmd started as plain processes on localhost, with a munge key
    and a slurm.conf made here (no cgroups, no accounting, state in ``tmp_path``); stopped at
    the end, pass or fail, after cancelling whatever job is left."""
    if sys.platform != "linux" or os.geteuid() != 0:  # a limit of the machine, not a missing part
        missing("starts munged, slurmctld and slurmd as root, on Linux (CI runs it as root)")
    commands = ("munged", "slurmctld", "slurmd", "sbatch", "sinfo", "scancel")
    absent = [c for c in commands if not shutil.which(c)]
    if absent:
        missing(f"needs Slurm and munge ({', '.join(absent)} not found): 'make slurm', or "
                f"'apt-get install slurm-wlm munge'")
    base = tmp_path / "slurm"
    for sub in ("state", "spool", "munge"):
        (base / sub).mkdir(parents=True)
    (base / "munge").chmod(0o755)  # munged wants its socket's folder open to every user
    key = base / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    munge_socket = base / "munge" / "munge.socket"
    conf = base / "slurm.conf"
    conf.write_text(SLURM_CONF.format(ctld_port=_free_port(), slurmd_port=_free_port(), base=base,
                                      munge_socket=munge_socket, cpus=os.cpu_count() or 1))
    # none of a surrounding Slurm's variables (a test run inside a job) reaches this one
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SBATCH_", "SALLOC_", "SRUN_"))}
    cluster = Slurm({**env, "SLURM_CONF": str(conf)}, base)
    daemons: list[subprocess.Popen] = []

    def start(name: str, *argv: str) -> None:
        with (base / f"{name}.out.log").open("w") as out:
            daemons.append(subprocess.Popen([name, *argv], stdout=out, stderr=subprocess.STDOUT,
                                            env=cluster.env, start_new_session=True))

    def node_idle() -> bool:
        state = subprocess.run(["sinfo", "--noheader", "--Node", "--format=%T"], env=cluster.env,
                               capture_output=True, text=True)
        return state.stdout.strip() == "idle"

    try:
        # --force: munged refuses a socket below a folder that other users cannot enter
        # (pytest's temporary folders are private); only root talks to this one
        start("munged", "--foreground", "--force", f"--key-file={key}", f"--socket={munge_socket}",
              f"--pid-file={base / 'munged.pid'}", f"--seed-file={base / 'munged.seed'}")
        _wait_for("munged", munge_socket.exists, cluster, daemons)
        start("slurmctld", "-D", "-f", str(conf))
        start("slurmd", "-D", "-f", str(conf), "-N", "localhost")
        _wait_for("the Slurm node", node_idle, cluster, daemons)
        yield cluster
    finally:
        if daemons:
            subprocess.run(["scancel", "--partition=grading"], env=cluster.env, capture_output=True)
        for daemon in reversed(daemons):
            daemon.terminate()
        for daemon in reversed(daemons):
            try:
                daemon.wait(timeout=30)
            except subprocess.TimeoutExpired:
                daemon.kill()
                daemon.wait()


@pytest.fixture
def small_class(tmp_path) -> tuple[Path, Path, dict[str, dict[str, float]]]:
    """The drill notebook and two students' submissions, one in each shard of two; with the
    points each should get per exercise."""
    source = tmp_path / "source"
    source.mkdir()
    drill = source / "drill.ipynb"
    drill.write_text(json.dumps(_drill()))
    release = released(_drill(), "drill")
    wrong = "def double(x):\n    return 3 * x"
    students = {"ada": (_answer(release, SOLUTION_A, SOLUTION_B), {"a_test": 2, "b_test": 1}),
                "ben": (_answer(release, wrong, SOLUTION_B), {"a_test": 0, "b_test": 1})}
    assert sorted(grading_batch.shard_of(name, 2) for name in students) == [0, 1]
    subs = tmp_path / "work" / "submissions"
    for name, (nb, _) in students.items():
        (subs / name).mkdir(parents=True)
        (subs / name / "drill.ipynb").write_text(json.dumps(nb))
    return drill, subs, {name: points for name, (_, points) in students.items()}


@pytest.mark.slow  # a learner's process per student, as the grading tests
def test_the_pages_slurm_array_grades_in_shards_that_merge_into_one_runs_csv(slurm, small_class):
    """The page's script, unchanged, submitted as the page says: with two shards instead of
    four and a CPU per task, so that both tasks run at once (options before the script's name
    replace its ``#SBATCH`` ones), and the drill notebook as the argument passed on to
    ``grade``; then the page's merge command. One run of ``grade`` on the same class, at the
    same time as the array, writes the CSV to compare with."""
    drill, subs, expected = small_class
    work = subs.parent
    (work / "grade.sh").write_text(page_block("bash", "#SBATCH"))
    # the course's Python and this checkout, as a cluster's shared environment would give
    env = {**slurm.env, "PATH": f"{Path(sys.executable).parent}:{slurm.env['PATH']}",
           "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        single = pool.submit(grading_batch.grade, subs, work.parent / "single.csv", [drill], jobs=2,
                             progress=False)
        # a guard against a job that never ends, far above the seconds the class takes
        run = subprocess.run(["sbatch", "--wait", "--array=0-1", "--cpus-per-task=1", "grade.sh",
                              "--notebook", str(drill)], cwd=work, env=env, capture_output=True, text=True,
                             timeout=900)
        single.result()
    outputs = "".join(f"\n--- {p.name}:\n{p.read_text()}" for p in sorted(work.glob("slurm-*.out")))
    assert run.returncode == 0, f"sbatch: {run.stdout}{run.stderr}{outputs}{slurm.logs()}"
    shards = sorted(p.name for p in work.glob("grades-*.csv"))
    assert shards == ["grades-0.csv", "grades-1.csv"], outputs
    assert all(_students(work / name) for name in shards), outputs  # each task graded its shard

    merge = re.search(r"`(tinyk merge [^`]+)`", PAGE.read_text())
    assert merge, f"{PAGE}: no merge command"
    subprocess.run(["bash", "-c", merge[1]], cwd=work, env=env, check=True, capture_output=True)
    merged = work / merge[1].split()[2]
    assert merged.read_text() == (work.parent / "single.csv").read_text()
    with merged.open() as f:
        points = {(r["student"], r["exercise"]): (float(r["points"]), r["status"]) for r in csv.DictReader(f)}
    assert points == {(s, e): (p, "ok") for s, marks in expected.items() for e, p in marks.items()}


def _students(path: Path) -> set[str]:
    with path.open() as f:
        return {r["student"] for r in csv.DictReader(f)}


# ---------------------------------------------------------------- Kubernetes, validated

def _job_problems(job: dict) -> list[str]:
    """What is wrong with the page's Job: Kubernetes' schema of batch/v1 Job, strict (no field
    it does not know; kubernetes-validate, from the API's OpenAPI description), then the Job
    API's rules that the schema leaves out, and that the shard count is the completions'."""
    kubernetes_validate = need("kubernetes_validate")
    try:
        kubernetes_validate.validate(job, kubernetes_validate.utils.latest_version(), strict=True)
    except kubernetes_validate.ValidationError as err:
        return [f"schema: {'.'.join(map(str, err.path))}: {err.message}"]
    spec, pod = job["spec"], job["spec"]["template"]["spec"]
    problems = []
    # The API server's validation of a Job (pkg/apis/batch/validation): the completion mode is
    # NonIndexed or Indexed (this recipe needs Indexed); a Job's pods restart Never or OnFailure
    # (the pod default, Always, is refused)
    if spec.get("completionMode") != "Indexed":
        problems.append(f"spec.completionMode {spec.get('completionMode')!r}: JOB_COMPLETION_INDEX "
                        f"needs 'Indexed'")
    if pod.get("restartPolicy") not in ("Never", "OnFailure"):
        problems.append(f"spec.template.spec.restartPolicy {pod.get('restartPolicy')!r}: a Job's pods need "
                        f"'Never' or 'OnFailure'")
    for container in pod["containers"]:
        argv = shlex.split(container["command"][-1].replace("$JOB_COMPLETION_INDEX", "0"))
        assert argv[:2] == ["tinyk", "grade"], argv
        args = parser("tinyk").parse_args(argv[1:])
        if args.shard != (0, spec.get("completions")):
            problems.append(f"container {container['name']}: --shard {args.shard}: N must be "
                            f"spec.completions ({spec.get('completions')})")
    return problems


def test_the_pages_kubernetes_job_is_valid():
    import yaml

    assert _job_problems(yaml.safe_load(page_block("yaml", "kind: Job"))) == []


@pytest.mark.parametrize(("old", "new", "problem"), [
    ("completionMode: Indexed", "completionMode: Indexd", "spec.completionMode 'Indexd'"),
    ("      restartPolicy: Never\n", "", "restartPolicy None"),
    ("completionMode", "completionMod", "Additional properties are not allowed ('completionMod'"),
    ("completions: 4", "completions: four", "schema: spec.completions: 'four' is not of type"),
    ("- name: grade\n        image", "- image", "spec.template.spec.containers.0: 'name' is a required"),
    ("completions: 4", "completions: 3", "N must be spec.completions (3)"),
])
def test_a_planted_error_in_the_kubernetes_job_is_found(old, new, problem):
    import yaml

    text = page_block("yaml", "kind: Job")
    assert old in text
    problems = _job_problems(yaml.safe_load(text.replace(old, new, 1)))
    assert len(problems) == 1 and problem in problems[0], problems
