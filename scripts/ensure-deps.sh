#!/usr/bin/env bash
# Installs what Wayfinder needs at run time and in tests when it is missing:
# Debian's Chromium (never a downloaded browser) and the PostgreSQL server
# binaries (for the managed local Postgres), and xmllint (the tests validate
# JUnit reports against their XML schema). Installs with apt-get when run
# as root on Debian/Ubuntu; otherwise says what to install.
set -euo pipefail

missing=()
have_chromium() {
  command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 ||
    command -v google-chrome-stable >/dev/null 2>&1 || command -v google-chrome >/dev/null 2>&1 ||
    [ -n "${WAYFINDER_CHROMIUM:-}" ]
}
have_postgres() {
  [ -n "${WAYFINDER_PG_BIN:-}" ] || command -v initdb >/dev/null 2>&1 ||
    compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null
}
have_chromium || missing+=(chromium fonts-liberation)
have_postgres || missing+=(postgresql)
command -v xmllint >/dev/null 2>&1 || missing+=(libxml2-utils)
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "ensure-deps: installing ${missing[*]} with apt-get" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  exit 0
fi
echo "ensure-deps: missing ${missing[*]}." >&2
echo "  Debian/Ubuntu: sudo apt-get install ${missing[*]}" >&2
echo "  or set WAYFINDER_CHROMIUM / WAYFINDER_PG_BIN (or DATABASE_URL) to ones you have." >&2
exit 1
