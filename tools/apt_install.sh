# Sourced by tools/setup.sh and tools/setup_cross.sh: install_missing NAME PACKAGE... installs
# the Debian packages not installed yet (as root; else says which are missing and exits 2).
# A dpkg run left interrupted earlier (apt then refuses everything: "dpkg was interrupted, you
# must manually run 'dpkg --configure -a'", as on one CI machine) is finished first, as apt asks;
# another apt holding the lock (unattended-upgrades) is waited for up to 10 minutes.

# dpkg --configure -a, retried while another dpkg holds the lock (its journal is not empty while
# it runs either); a changed config file keeps the local version, as apt's default answer would.
finish_interrupted_dpkg() {
  local caller=$1 out
  echo "$caller: dpkg's journal is not empty (an earlier dpkg run was interrupted, or one is running): dpkg --configure -a"
  for _ in $(seq 60); do
    out=$(dpkg --force-confdef --force-confold --configure -a 2>&1) && return 0
    grep -q "lock" <<< "$out" || break
    sleep 10
  done
  echo "$out" >&2
  echo "$caller: dpkg --configure -a failed (above): run it by hand" >&2
  exit 2
}

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
  [ -z "$(ls -A /var/lib/dpkg/updates 2>/dev/null)" ] || finish_interrupted_dpkg "$caller"
  local wait_lock=(-o DPkg::Lock::Timeout=600)
  apt-get "${wait_lock[@]}" update -qq
  apt-get "${wait_lock[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
