"""``attnlab class server-setup``: the class server's shared folders, made once by root.

The documented install of the class server (docs/classroom.md, "The class server") runs this once,
as root, after installing the course into its own environment (``/opt/attnlab``)::

    /opt/attnlab/bin/attnlab class server-setup --roster roster.txt --class class.json

It makes, each with the modes it needs:

* the hub's state folder (``/srv/attnlab-hub``: the hub's database, cookie secret, passwords and the
  roster), mode 0700 and the roster 0600, so that no student's process can read them;
* nbgrader's exchange (``/srv/nbgrader/exchange``), mode 1777 like ``/tmp``: every student may
  create files there and nobody may remove another's. The teacher's ``nbgrader release_assignment``
  makes the course's folders inside it with nbgrader's own modes (``outbound`` 0755, ``inbound`` 2733:
  students write their submissions but cannot list each other's, ``feedback`` 0711);
* nbgrader's settings for every user of the install (``<prefix>/etc/jupyter/nbgrader_config.py``,
  read by each student's server and by ``nbgrader`` in a terminal): the exchange and the course id,
  so ``nbgrader list``, ``fetch_assignment``, ``submit`` and ``fetch_feedback`` find the exchange;
* the class setting at ``<prefix>/etc/attnlab/class.json`` (0644: students read it, cannot change it);
* the offline Chinese model converted once into the install's shared folder
  (:func:`attnlab.core.multilingual.shared_root`), read-only for every student.

Every step is idempotent: running it again repairs modes and changes nothing else.
"""

from __future__ import annotations

import argparse
import os
import shutil
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attnlab.core import multilingual

#: nbgrader's course id, the same in the teacher's course folder (classroom/nbgrader_config.py)
COURSE_ID = "attnlab"
STATE = Path("/srv/attnlab-hub")
EXCHANGE = Path("/srv/nbgrader/exchange")
#: the exchange's mode: everyone writes, nobody removes another's files (the sticky bit, as /tmp)
EXCHANGE_MODE = 0o1777
STATE_MODE = 0o700
PRIVATE_FILE_MODE = 0o600

STUDENT_CONFIG = '''"""nbgrader's settings for every user of this install (written by `attnlab class server-setup`).

A student's `nbgrader list`, `fetch_assignment`, `submit` and `fetch_feedback` (and JupyterLab's
Assignments tab) read this file; the teacher's course folder has its own nbgrader_config.py that
names the same exchange.
"""

c = get_config()  # noqa: F821 - nbgrader provides get_config when it reads this file

c.CourseDirectory.course_id = {course!r}
c.Exchange.root = {exchange!r}
# each submission's folder name ends with a random string: students cannot guess each other's
c.ExchangeSubmit.add_random_string = True
'''


def install_prefix() -> Path:
    """The Python environment the course is installed in (``/opt/attnlab`` on the class server)."""
    return Path(sys.prefix)


@dataclass(frozen=True)
class ServerPlaces:
    """Where the class server keeps what it shares (the defaults of docs/classroom.md)."""

    state: Path = STATE
    exchange: Path = EXCHANGE
    #: nbgrader's settings for every user (one of Jupyter's system configuration folders)
    jupyter_config: Path = field(default_factory=lambda: install_prefix() / "etc" / "jupyter")
    #: the class setting every student's lesson reads
    class_folder: Path = field(default_factory=lambda: install_prefix() / "etc" / "attnlab")


def make_state(state: Path, roster: Path | None = None) -> list[str]:
    """The hub's state folder, private to the hub (0700), with the teacher's roster in it (0600)."""
    state.mkdir(parents=True, exist_ok=True)
    state.chmod(STATE_MODE)
    done = [f"{state}: the hub's state, mode 0700"]
    if roster is not None:
        target = state / "roster.txt"
        if roster.resolve() != target.resolve():
            shutil.copyfile(roster, target)
        target.chmod(PRIVATE_FILE_MODE)
        done.append(f"{target}: the roster, mode 0600")
    for path in state.iterdir():  # a database or passwords left readable by an earlier install
        if path.is_file() and path.stat().st_mode & 0o077:
            path.chmod(PRIVATE_FILE_MODE)
    return done


def make_exchange(exchange: Path) -> list[str]:
    """nbgrader's exchange: the folders above it reachable by all (0755 where made here), itself 1777."""
    missing = [p for p in [exchange, *exchange.parents] if not p.exists()]
    exchange.mkdir(parents=True, exist_ok=True)
    for made in missing[1:]:
        made.chmod(0o755)
    exchange.chmod(EXCHANGE_MODE)
    return [f"{exchange}: nbgrader's exchange, mode 1777"]


def write_student_config(folder: Path, exchange: Path, course_id: str = COURSE_ID) -> list[str]:
    """nbgrader's settings for every user of the install, readable by all (0644)."""
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(folder.stat().st_mode | 0o055)
    path = folder / "nbgrader_config.py"
    path.write_text(STUDENT_CONFIG.format(course=course_id, exchange=str(exchange)), encoding="utf-8")
    path.chmod(0o644)
    return [f"{path}: nbgrader's settings for every student (exchange {exchange}, course {course_id})"]


def install_class_setting(folder: Path, class_file: Path) -> list[str]:
    """Copy the class setting where every student's lesson finds it, readable by all, writable by root."""
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(folder.stat().st_mode | 0o055)
    target = folder / "class.json"
    shutil.copyfile(class_file, target)
    target.chmod(0o644)
    return [f"{target}: the class setting, mode 0644"]


def convert_shared_model() -> list[str]:
    """The offline Chinese model, converted once into the install's shared folder (read-only for students)."""
    folder = multilingual.converted_folder(shared=True)
    return [f"{folder}: {multilingual.NAME}, converted once, read by every student"]


def set_up(places: ServerPlaces = ServerPlaces(), *, roster: Path | None = None, class_file: Path | None = None,
           model: bool = True) -> list[str]:
    """Make every shared folder of the class server (see the module's docstring); one line per thing done."""
    done = make_state(places.state, roster)
    done += make_exchange(places.exchange)
    done += write_student_config(places.jupyter_config, places.exchange)
    if class_file is not None:
        done += install_class_setting(places.class_folder, class_file)
    if model:
        done += convert_shared_model()
    return done


def is_private(path: Path) -> bool:
    """True when no one but ``path``'s owner may read, write or enter it."""
    return stat.S_IMODE(path.stat().st_mode) & 0o077 == 0


def _setup_cmd(args: argparse.Namespace) -> int:
    if os.geteuid() != 0:
        print("attnlab class server-setup: run this as root (it makes /srv folders and the install's settings)",
              file=sys.stderr)
        return 2
    places = ServerPlaces(state=Path(args.state), exchange=Path(args.exchange))
    for line in set_up(places, roster=Path(args.roster) if args.roster else None,
                       class_file=Path(args.class_file) if args.class_file else None, model=not args.no_model):
        print(line)
    return 0


def add_class_cli(sub: Any) -> None:
    """Register ``attnlab class server-setup`` under ``attnlab class``."""
    s = sub.add_parser("server-setup", help="make the class server's shared folders (as root, once)")
    s.add_argument("--state", default=str(STATE), help=f"the hub's state folder (default {STATE})")
    s.add_argument("--exchange", default=str(EXCHANGE), help=f"nbgrader's exchange (default {EXCHANGE})")
    s.add_argument("--roster", default=None, help="the teacher's list, one student user name a line")
    s.add_argument("--class", dest="class_file", default=None, help="the class setting file to install")
    s.add_argument("--no-model", action="store_true", help="do not convert the offline Chinese model")
    s.set_defaults(func=_setup_cmd)
