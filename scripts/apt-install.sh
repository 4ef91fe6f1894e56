# apt-install.sh - sourced by the install scripts: installs Debian packages.
# apt_install NAME STRICT PKG...: as root runs apt-get install; as another user
# prints the line to run; without apt-get says so. In those two cases it
# returns 1 when STRICT is 1 (the caller cannot go on), else 0.
apt_install() {
  local name=$1 strict=$2
  shift 2
  [ $# -eq 0 ] && return 0
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "$name: missing $* and no apt-get here" >&2
    [ "$strict" = 1 ] && return 1
    return 0
  fi
  if [ "$(id -u)" -ne 0 ]; then
    echo "$name: run as root: apt-get install -y $*" >&2
    [ "$strict" = 1 ] && return 1
    return 0
  fi
  echo "$name: apt-get install -y $*"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq || true
  apt-get install -y -qq --no-install-recommends "$@"
}
