#!/bin/sh
# Installs the OS packages the C client builds against (Debian/Ubuntu): a C/C++ compiler, CMake, pkg-config,
# OpenSSL (libssl-dev), libcurl (libcurl4-openssl-dev) and jansson (libjansson-dev). A no-op when all are present
# (checked with dpkg -s), so it is safe to run before every build. Run as root (CI) or it uses sudo when available.
#
#   sh clients/c/install-deps.sh
set -eu

PACKAGES="gcc g++ make cmake pkg-config libssl-dev libcurl4-openssl-dev libjansson-dev"
# Only for the leak check of the tests (`ctest -T memcheck`); not needed to build: LICENSING_C_VALGRIND=1 adds it.
if [ "${LICENSING_C_VALGRIND:-0}" = "1" ]; then PACKAGES="$PACKAGES valgrind"; fi

missing=""
for p in $PACKAGES; do
  if ! dpkg -s "$p" >/dev/null 2>&1; then missing="$missing $p"; fi
done
if [ -z "$missing" ]; then
  echo "install-deps: all present ($PACKAGES)"
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-deps: missing:$missing; apt-get is not available here: install them with your package manager" >&2
  exit 1
fi
SUDO=""
if [ "$(id -u)" != "0" ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "install-deps: missing:$missing; run this script as root (or install sudo)" >&2
    exit 1
  fi
fi
echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing
