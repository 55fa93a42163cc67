#!/bin/sh
# Before `npm test`: the system packages some tests need. MUNGE (Debian
# package munge) for the tests of MUNGE credentials (they start their own
# munged); msmtp (Debian package msmtp), a sendmail-compatible client, for the
# mail tests (they start their own SMTP listener). Installs what is missing
# when running as root with apt-get (CI: Debian, root, no stdin); otherwise
# says which tests will be skipped and why. Never fails the test run: a
# missing package only skips the tests that need it.

missing=""
if ! { command -v munge >/dev/null 2>&1 && command -v unmunge >/dev/null 2>&1 && [ -x /usr/sbin/munged ]; }; then
  missing=" munge"
fi
if ! command -v msmtp >/dev/null 2>&1; then
  missing="$missing msmtp"
fi
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "test-deps: not installed:$missing; this is not root, so the tests that need them will be skipped (install them with: sudo apt-get install$missing)"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "test-deps: not installed:$missing; there is no apt-get, so the tests that need them will be skipped (install them with this system's package manager)"
  exit 0
fi
echo "test-deps: installing$missing (apt-get install) for the tests that need them"
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
# shellcheck disable=SC2086 # one word per package
install() { apt-get install -y -q --no-install-recommends $missing </dev/null >"$log" 2>&1; }
# The package lists are fetched only when a package is not found in them.
if ! install; then
  apt-get update -q </dev/null >>"$log" 2>&1
  if ! install; then
    echo "test-deps: could not install$missing: the tests that need them will be skipped. Last lines of apt-get:"
    tail -n 5 "$log" | sed 's/^/  /'
    rm -f "$log"
    exit 0
  fi
fi
rm -f "$log"
exit 0
