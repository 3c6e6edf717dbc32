# Sourced by scripts/course.sh and scripts/setup.sh: ATTNLAB_MIRROR names a set of mirrors that every
# download of the set-up and the lessons goes to instead of the default hosts (pypi.org,
# download.pytorch.org, huggingface.co). Each is set only where it is not set already, so any one of
# them can name a mirror of the teacher's choice.
#
#   ATTNLAB_MIRROR=cn    mainland China: PyPI from Tsinghua's mirror, the CPU build of torch from Nanjing
#                        University's mirror of PyTorch's CPU index, the model hub through hf-mirror.com
#   ATTNLAB_MIRROR=      (unset or empty) the default hosts
# The course itself comes from wherever the teacher put it (docs/install.md, "Mainland China").
case "${ATTNLAB_MIRROR:-}" in
  "") ;;
  cn)
    export PIP_INDEX_URL="${PIP_INDEX_URL:-https://pypi.tuna.tsinghua.edu.cn/simple}"
    export ATTNLAB_TORCH_INDEX="${ATTNLAB_TORCH_INDEX-https://mirror.nju.edu.cn/pytorch/whl/cpu}"
    export HF_ENDPOINT="${HF_ENDPOINT:-https://hf-mirror.com}"
    ;;
  *)
    echo "attnlab: unknown mirror '$ATTNLAB_MIRROR'; use --mirror cn (mainland China) or leave ATTNLAB_MIRROR unset" >&2
    exit 2 ;;
esac
