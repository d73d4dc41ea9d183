# shellcheck shell=bash
# Sourced by tools/fetch-mesa25.sh and tools/fetch-mesa26.sh: their common start, and a private apt configuration in a
# directory of their own, so that `apt-get update` and `apt-get download` fetch Debian packages
# without installing anything. APT_CONFIG replaces /etc/apt/apt.conf, and Dir::Etc keeps apt from
# reading the system's apt.conf.d, sources.list.d, preferences and keyrings; an empty dpkg status
# keeps what the machine has installed from steering the download. /etc/apt, /var/lib/apt and
# dpkg's database are only ever read.
#   private_apt DIR "deb [signed-by=KEYRING] URL SUITE main" ...   (one argument per sources line)
# Writes DIR's tree and exports APT_CONFIG; $private_apt_key is bookworm's Debian keyring, which
# verifies trixie too.
#   fetch_start NAME DIR                                   (first: the scripts' common start)
# Makes DIR absolute in $dir, with $apt, $root and an emptied $log in it; `fail MESSAGE` logs the
# message and exits 1, and any failing exit prints apt's log and one FAILED line to stderr.
# shellcheck disable=SC2034 # the sourcing scripts name it in their sources lines
private_apt_key=/usr/share/keyrings/debian-archive-keyring.gpg
fetch_start() {
  fetch_name=$1
  mkdir -p "$2"
  dir=$(cd "$2" && pwd)
  apt="$dir/apt" root="$dir/root" log="$dir/fetch.log"
  : >"$log"
  trap 'fetch_on_exit $?' EXIT
}
fetch_on_exit() { [ "$1" -eq 0 ] || { cat "$log" >&2; echo "$fetch_name: FAILED (apt's log above, $log)" >&2; }; }
fail() { echo "$fetch_name: $*" >>"$log"; exit 1; }
private_apt() {
  local apt=$1 arch line
  shift
  arch=$(dpkg --print-architecture)
  mkdir -p "$apt"/etc/{apt.conf.d,preferences.d,trusted.gpg.d} "$apt"/state/lists/partial \
           "$apt"/cache/archives/partial
  touch "$apt/state/status"
  : >"$apt/etc/sources.list"
  for line in "$@"; do echo "$line" >>"$apt/etc/sources.list"; done
  cat >"$apt/apt.conf" <<EOC
Dir::Etc "$apt/etc";
Dir::Etc::sourceparts "-";
Dir::Etc::main "none";
Dir::State "$apt/state";
Dir::State::status "$apt/state/status";
Dir::Cache "$apt/cache";
APT::Architecture "$arch";
APT::Architectures { "$arch"; };
Acquire::Languages "none";
// the download directory is not writable by the _apt user; signatures are still checked
APT::Sandbox::User "root";
EOC
  export APT_CONFIG="$apt/apt.conf"
}
