#!/bin/sh
# Before `npm test`: the system packages some tests need (MUNGE, Debian package
# munge, for the tests of MUNGE credentials; they start their own munged).
# Installs them when running as root with apt-get (CI: Debian, root, no
# stdin); otherwise says which tests will be skipped and why. Never fails the
# test run: a missing package only skips the tests that need it.

if command -v munge >/dev/null 2>&1 && command -v unmunge >/dev/null 2>&1 && [ -x /usr/sbin/munged ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "test-deps: MUNGE is not installed and this is not root: the MUNGE tests will be skipped (install it with: sudo apt-get install munge)"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "test-deps: MUNGE is not installed and there is no apt-get: the MUNGE tests will be skipped (install MUNGE with this system's package manager)"
  exit 0
fi
echo "test-deps: installing MUNGE (apt-get install munge) for the MUNGE tests"
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
install() { apt-get install -y -q --no-install-recommends munge </dev/null >"$log" 2>&1; }
# The package lists are fetched only when the package is not found in them.
if ! install; then
  apt-get update -q </dev/null >>"$log" 2>&1
  if ! install; then
    echo "test-deps: could not install MUNGE: the MUNGE tests will be skipped. Last lines of apt-get:"
    tail -n 5 "$log" | sed 's/^/  /'
    rm -f "$log"
    exit 0
  fi
fi
rm -f "$log"
exit 0
