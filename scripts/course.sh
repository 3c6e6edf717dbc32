#!/usr/bin/env bash
# The course in one command, on the offline Chinese-reading model (or the article's model where the hub
# answers) unless ATTNLAB_MODEL says otherwise.
#
#   bash scripts/course.sh            set up, then open the course in JupyterLab
#   bash scripts/course.sh run        set up, then execute every lesson headless into build/notebooks/
#   bash scripts/course.sh figures    set up, then regenerate every figure in figures/
#   bash scripts/course.sh bundle     set up, then write the offline bundle (course + model kit + wheels, one zip)
#   bash scripts/course.sh html       set up, then write every executed lesson of both editions as static HTML
#                                     (build/html/index.html), running first any lesson with no executed copy
#   bash scripts/course.sh --help     this text; nothing is installed
#
# Options go before or after the command; any other argument goes to the command (JupyterLab for `lab`).
# The edition follows ATTNLAB_LANG (en, the default, or zh; zh-CN, zh_CN, chinese and 中文 say zh too), or a
# --lang argument anywhere:
#   bash scripts/course.sh --lang zh            the Chinese edition (notebooks/zh/), printing in Chinese
#   bash scripts/course.sh --lang zh figures    figures with Chinese labels in figures/zh/
# --mirror cn (or ATTNLAB_MIRROR=cn) sends every download to mainland China's mirrors (scripts/mirror.sh).
# ATTNLAB_SMOKE=1 makes `run`, `figures` and the lessons `html` must run first quick (small sizes).
# `html` writes both editions unless --lang names one.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; }
lang="${ATTNLAB_LANG:-en}"
lang_given=0
command=""
rest=()
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --mirror) [ $# -ge 2 ] || { echo "usage: --mirror cn" >&2; exit 2; }; export ATTNLAB_MIRROR="$2"; shift 2 ;;
    --mirror=*) export ATTNLAB_MIRROR="${1#--mirror=}"; shift ;;
    lab|run|figures|bundle|html)
      if [ -z "$command" ]; then command="$1"; else rest+=("$1"); fi; shift ;;
    --lang) [ $# -ge 2 ] || { echo "usage: --lang en|zh" >&2; exit 2; }; lang="$2"; lang_given=1; shift 2 ;;
    --lang=*) lang="${1#--lang=}"; lang_given=1; shift ;;
    *) rest+=("$1"); shift ;;
  esac
done
set -- "${command:-lab}" ${rest[@]+"${rest[@]}"}
. scripts/mirror.sh
# the package's one reading of a language (standard library only: no set-up needed yet); where there is
# no Python at all, setup.sh below says so
python="${PYTHON:-python3}"
if command -v "$python" >/dev/null 2>&1; then
  lang="$("$python" -m attnlab.core.language "$lang")" || exit 2
fi
# the one way the language travels on: every command below (the lessons' kernels, run_lessons, attnlab
# figures) reads ATTNLAB_LANG; only `html`, which writes both editions unless told, is told by --lang instead
export ATTNLAB_LANG="$lang"
# an offline bundle carries the Chinese-reading model as a kit folder: use it unless a model is named
kit="$PWD/kit/multilingual-e5-small"
if [ -z "${ATTNLAB_MODEL:-}" ] && [ -f "$kit/attnlab-manifest.json" ]; then
  export ATTNLAB_MODEL="$kit"
  echo "attnlab: using the bundle's model kit $kit (ATTNLAB_MODEL names another)" >&2
fi

bash scripts/setup.sh course,lab
if [ "${ATTNLAB_NO_VENV:-0}" != "1" ]; then . .venv/bin/activate; fi

case "$1" in
  lab)
    shift
    extra=()
    if [ "$(id -u)" = "0" ]; then
      # Docker images and classroom servers often run as root, which JupyterLab refuses by default.
      echo "attnlab: running as root, so JupyterLab is started with --allow-root" >&2
      extra+=(--allow-root)
    fi
    first="$("$python" -m attnlab.core.language --lessons "$lang")/00_tour.ipynb"
    if [ "$lang" = "zh" ]; then
      # JupyterLab's own interface in Chinese for this launch only (language pack from the course extra):
      # a settings folder of its own, seeded once from the user's, with the interface language zh_CN
      zh_settings="${XDG_CONFIG_HOME:-$HOME/.config}/attnlab/jupyterlab-settings-zh"
      if [ ! -d "$zh_settings" ]; then
        user_settings="${JUPYTERLAB_SETTINGS_DIR:-$(jupyter lab path 2>/dev/null | sed -n 's/^User Settings directory: *//p')}"
        mkdir -p "$zh_settings"
        if [ -n "$user_settings" ] && [ -d "$user_settings" ]; then cp -R "$user_settings/." "$zh_settings/"; fi
      fi
      mkdir -p "$zh_settings/@jupyterlab/translation-extension"
      printf '{"locale": "zh_CN"}\n' > "$zh_settings/@jupyterlab/translation-extension/plugin.jupyterlab-settings"
      export JUPYTERLAB_SETTINGS_DIR="$zh_settings"
      echo "attnlab: 打开中文版 (notebooks/zh/)。English edition: bash scripts/course.sh --lang en" >&2
    else
      echo "attnlab: opening the English edition (notebooks/). 中文版: bash scripts/course.sh --lang zh" >&2
    fi
    exec jupyter lab "${extra[@]}" "$@" "$first" ;;
  run)
    shift; exec python scripts/run_lessons.py "$@" ;;
  bundle)
    shift; exec attnlab bundle "$@" ;;
  html)
    shift
    if [ "$lang_given" = "1" ]; then set -- --lang "$lang" "$@"; fi
    unset ATTNLAB_LANG   # told by --lang alone: each edition it writes speaks its own language
    exec python scripts/course_html.py "$@" ;;
  figures)
    shift
    if [ "${ATTNLAB_SMOKE:-0}" = "1" ]; then set -- --smoke "$@"; fi
    exec attnlab figures "$@" ;;   # in ATTNLAB_LANG's language
  *)
    echo "usage: bash scripts/course.sh [--lang en|zh] [--mirror cn] [lab|run|figures|bundle|html] [arguments]" >&2; exit 2 ;;
esac
