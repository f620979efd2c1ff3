# Sourced by tools/setup.sh and tools/setup_cross.sh: install_missing NAME PACKAGE... installs
# the Debian packages not installed yet (as root; else says which are missing and exits 2).
install_missing() {
  local caller=$1 p
  shift
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -gt 0 ] || return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "$caller: missing packages: ${missing[*]}; run as root (or install them) first" >&2
    exit 2
  fi
  echo "$caller: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
