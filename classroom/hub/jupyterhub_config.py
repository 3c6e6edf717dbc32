"""JupyterHub for one class on one machine: the attnlab course installed once, one account per student.

Read docs/classroom.md ("The class server") first. The settings a teacher changes come from
the environment (set them in the service file, or export them before `jupyterhub -f` this file):

ATTNLAB_HUB_STATE     folder for the hub's database, cookie secret and passwords (default /srv/attnlab-hub)
ATTNLAB_HUB_ROSTER    the teacher's list: one student user name a line (default <state>/roster.txt)
ATTNLAB_HUB_TEACHERS  teachers' user names, comma-separated (admins: they see every student's server)
ATTNLAB_HUB_IP, ATTNLAB_HUB_PORT   where students connect (default all addresses, port 8000: put HTTPS
                      in front, e.g. a reverse proxy with the school's certificate)
ATTNLAB_HUB_MEM       memory per student (default 2G: a lesson's kernel keeps up to 1.4 GB, see the sizing
                      table in docs/classroom.md), ATTNLAB_HUB_CPU cores per student (default 1)
ATTNLAB_HUB_IDLE      seconds before an idle server is stopped (default 3600)
ATTNLAB_HUB_LANG      en or zh (zh-CN, chinese, 中文 ... too): the course's and JupyterLab's language for
                      everyone (default en)
ATTNLAB_CLASS         the class setting (one model, precision and mode); default <prefix>/etc/attnlab/class.json
ATTNLAB_HUB_ACCOUNTS  system (default): one system user per student; shared: every server runs as the hub's
                      own user, each student in a home folder of their own under <state>/homes (for a
                      container or a test machine where students cannot have accounts: no isolation)

Accounts: students log in with a user name from the roster and choose their password the first time
(FirstUseAuthenticator; no identity provider needed). Each student's server runs as a system user of
the same name, created with a home folder of its own (mode 0700) the first time the student starts a
server; results, attempts and nbgrader's work stay in that home.

ATTNLAB_HUB_IMAGE     the course's image (repo2docker of this repository): with Docker and dockerspawner,
                      each student's server runs in a container of it
ATTNLAB_HUB_UNLIMITED 1: start without the warning that the limits are not enforced

Limits: with systemd (a normal Linux server) and jupyterhub-systemdspawner installed (the classroom
extra installs it on Linux), each server runs in its own systemd unit and the memory and CPU limits are
enforced by the kernel's cgroups. Where Docker runs instead (and ATTNLAB_HUB_IMAGE names the course's
image), each server runs in a container with the same limits. Where neither can enforce them (a
container without systemd) the LocalProcessSpawner starts the servers: the same limits are announced
to each server (MEM_LIMIT, CPU_LIMIT) but not enforced, and the hub says so in one sentence when it
starts (ATTNLAB_HUB_UNLIMITED=1 silences it); the idle culler and one thread per kernel still keep
sixty kernels within the machine.

Run `attnlab class server-setup` (as root, once) before the first start: it makes the state folder
(0700), nbgrader's exchange (1777) and every student's nbgrader settings, and converts the offline
Chinese model once into the install's shared folder.
"""

import importlib.util
import os
import pwd
import re
import subprocess
import sys
from pathlib import Path

from attnlab.core.language import normalise_language

c = get_config()  # noqa: F821 - JupyterHub provides get_config when it reads this file

BIN = Path(sys.executable).parent  # the environment the course is installed in, shared by every student
STATE = Path(os.environ.get("ATTNLAB_HUB_STATE", "/srv/attnlab-hub"))
STATE.mkdir(parents=True, exist_ok=True, mode=0o700)
STATE.chmod(0o700)  # the database, cookie secret, passwords and roster: no student may read them
ROSTER = Path(os.environ.get("ATTNLAB_HUB_ROSTER", STATE / "roster.txt"))
try:  # read as the course reads a language: en or zh, from any spelling it accepts (zh-CN, chinese, ...)
    LANG = normalise_language(os.environ.get("ATTNLAB_HUB_LANG", "") or "en")
except ValueError as exc:
    raise SystemExit(f"ATTNLAB_HUB_LANG: {exc}") from None
USER_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,30}$")  # a safe system user name


def roster() -> set[str]:
    """The student user names on the teacher's list (blank lines and # comments skipped)."""
    if not ROSTER.is_file():
        return set()
    names = {line.split("#")[0].strip().lower() for line in ROSTER.read_text(encoding="utf-8").splitlines()}
    bad = sorted(n for n in names if n and not USER_NAME.match(n))
    if bad:
        raise SystemExit(f"{ROSTER}: {bad[0]!r} is not a user name (lower-case letters, digits, - and _)")
    return {n for n in names if n}


# --------------------------------------------------------------------------- the hub and its proxy

c.JupyterHub.ip = os.environ.get("ATTNLAB_HUB_IP", "")
c.JupyterHub.port = int(os.environ.get("ATTNLAB_HUB_PORT", "8000"))
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = int(os.environ.get("ATTNLAB_HUB_API_PORT", "8081"))
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{os.environ.get('ATTNLAB_HUB_PROXY_API_PORT', '8001')}"
c.ConfigurableHTTPProxy.pid_file = str(STATE / "proxy.pid")
c.JupyterHub.db_url = f"sqlite:///{STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE / "cookie_secret")
c.JupyterHub.pid_file = str(STATE / "jupyterhub.pid")
c.JupyterHub.cleanup_servers = True  # the hub stopping stops the students' servers

# --------------------------------------------------------------------------- who may log in

c.JupyterHub.authenticator_class = "firstuseauthenticator.FirstUseAuthenticator"
c.FirstUseAuthenticator.dbm_path = str(STATE / "passwords.dbm")
c.FirstUseAuthenticator.create_users = False  # only the roster's names, each sets a password at first login
c.FirstUseAuthenticator.min_password_length = 8
teachers = {t.strip() for t in os.environ.get("ATTNLAB_HUB_TEACHERS", "").split(",") if t.strip()}
c.Authenticator.allowed_users = roster() | teachers
c.Authenticator.admin_users = teachers

services, roles = [], []
# a teacher's scripts (and the class server's test) may use the hub's API with this token
if os.environ.get("ATTNLAB_HUB_ADMIN_TOKEN"):
    services.append({"name": "teacher-tools", "api_token": os.environ["ATTNLAB_HUB_ADMIN_TOKEN"]})
    roles.append({"name": "teacher-tools", "services": ["teacher-tools"],
                  "scopes": ["admin:users", "admin:servers", "tokens", "list:services", "read:services",
                             "access:servers"]})

# --------------------------------------------------------------------------- each student's server

SHARED = os.environ.get("ATTNLAB_HUB_ACCOUNTS", "system") == "shared"
HOMES = STATE / "homes"
IMAGE = os.environ.get("ATTNLAB_HUB_IMAGE", "")


def limits_by() -> str:
    """Who enforces each student's memory and CPU limits: ``systemd`` (a unit per server, cgroups),
    ``docker`` (a container per server) or ``nobody`` (servers as plain processes: limits only announced)."""
    if SHARED:
        return "nobody"
    if Path("/run/systemd/system").is_dir() and importlib.util.find_spec("systemdspawner") is not None:
        return "systemd"
    if IMAGE and Path("/var/run/docker.sock").exists() and importlib.util.find_spec("dockerspawner") is not None:
        return "docker"
    return "nobody"


ENFORCER = limits_by()
if SHARED:
    c.JupyterHub.spawner_class = "jupyterhub.spawner.SimpleLocalProcessSpawner"
    c.SimpleLocalProcessSpawner.home_dir_template = str(HOMES / "{username}")
elif ENFORCER == "systemd":
    c.JupyterHub.spawner_class = "systemdspawner.SystemdSpawner"
elif ENFORCER == "docker":
    c.JupyterHub.spawner_class = "dockerspawner.SystemUserSpawner"
else:
    c.JupyterHub.spawner_class = "jupyterhub.spawner.LocalProcessSpawner"
if ENFORCER == "nobody" and os.environ.get("ATTNLAB_HUB_UNLIMITED", "") != "1":
    print("attnlab hub: the memory and CPU limits are announced but not enforced here (no systemd with "
          "jupyterhub-systemdspawner, no Docker with dockerspawner and ATTNLAB_HUB_IMAGE): one student's "
          "kernel can take the whole machine; set ATTNLAB_HUB_UNLIMITED=1 to start without this warning.",
          file=sys.stderr, flush=True)
c.Spawner.mem_limit = os.environ.get("ATTNLAB_HUB_MEM", "2G")
c.Spawner.cpu_limit = float(os.environ.get("ATTNLAB_HUB_CPU", "1"))
c.Spawner.cmd = [str(BIN / "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
c.Spawner.notebook_dir = "~"
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120
# inside each server, a kernel idle for 30 minutes is shut down (its memory goes back to the machine)
c.Spawner.args = ["--MappingKernelManager.cull_idle_timeout=1800", "--MappingKernelManager.cull_interval=300"]
c.Spawner.environment = {
    # one thread per kernel: sixty kernels on 16 cores must not each start 16 threads
    "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false",
    "ATTNLAB_LANG": LANG,
    "PATH": f"{BIN}:/usr/local/bin:/usr/bin:/bin",
}
if os.environ.get("ATTNLAB_CLASS"):
    c.Spawner.environment["ATTNLAB_CLASS"] = os.environ["ATTNLAB_CLASS"]
if SHARED and os.geteuid() == 0:
    c.Spawner.args.append("--ServerApp.allow_root=True")  # shared accounts under a root hub: a test machine
if LANG == "zh":
    c.Spawner.environment["LANG"] = "zh_CN.UTF-8"
if ENFORCER == "systemd":
    c.SystemdSpawner.dynamic_users = False
    c.SystemdSpawner.isolate_tmp = True
    c.SystemdSpawner.disable_user_sudo = True
elif ENFORCER == "docker":
    # the course's image (repo2docker of this repository, as Binder builds it), each student's own system
    # user and home mounted inside; the class setting and nbgrader's exchange mounted from the machine
    c.DockerSpawner.image = IMAGE
    c.DockerSpawner.remove = True
    c.DockerSpawner.cmd = ["jupyterhub-singleuser"]
    c.DockerSpawner.volumes = {"/srv/nbgrader/exchange": "/srv/nbgrader/exchange"}
    c.DockerSpawner.read_only_volumes = {str(Path(sys.prefix) / "etc" / "attnlab"): "/etc/attnlab",
                                         str(Path(sys.prefix) / "etc" / "jupyter"): "/etc/jupyter"}
    c.DockerSpawner.environment = {"ATTNLAB_CLASS": "/etc/attnlab/class.json"}
    c.JupyterHub.hub_ip = "0.0.0.0"  # the containers reach the hub through Docker's bridge
    c.JupyterHub.hub_connect_ip = os.environ.get("ATTNLAB_HUB_CONNECT_IP", "172.17.0.1")


def create_student(spawner) -> None:
    """Before a student's first server: a system user of the same name with a private home folder
    (shared accounts: the home folder under <state>/homes)."""
    name = spawner.user.name
    if not USER_NAME.match(name):
        raise ValueError(f"{name!r} cannot be a system user name")
    if SHARED:
        home, owner = HOMES / name, None
        home.mkdir(parents=True, exist_ok=True, mode=0o700)
    else:
        try:
            pwd.getpwnam(name)
        except KeyError:
            subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", "--user-group", name], check=True)
        account = pwd.getpwnam(name)
        home, owner = Path(account.pw_dir), (account.pw_uid, account.pw_gid)
        home.chmod(0o700)
    if LANG == "zh":
        chinese_interface(home, owner)


def chinese_interface(home: Path, owner: tuple[int, int] | None) -> None:
    """JupyterLab's menus in Chinese (the zh-CN language pack) for a student who has not chosen a language:
    the student's own setting, which they can change (Settings → Language)."""
    folder = home / ".jupyter" / "lab" / "user-settings" / "@jupyterlab" / "translation-extension"
    setting = folder / "plugin.jupyterlab-settings"
    if setting.exists():
        return
    folder.mkdir(parents=True, exist_ok=True)
    setting.write_text('{"locale": "zh_CN"}\n', encoding="utf-8")
    for path in (setting, *setting.parents):
        if owner is None or path == home:
            break
        os.chown(path, *owner)  # the student's own setting, in folders the student owns


c.Spawner.pre_spawn_hook = create_student

# --------------------------------------------------------------------------- the idle culler

IDLE = int(os.environ.get("ATTNLAB_HUB_IDLE", "3600"))
services.append({"name": "idle-culler",
                 "command": [sys.executable, "-m", "jupyterhub_idle_culler", f"--timeout={IDLE}", "--cull-every=300",
                             "--concurrency=5"]})
roles.append({"name": "idle-culler", "services": ["idle-culler"],
              "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"]})
c.JupyterHub.services = services
c.JupyterHub.load_roles = roles
