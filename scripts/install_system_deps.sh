#!/usr/bin/env bash
# Debian packages the slow tier starts: chromium (the advise report's browser test, driven by Playwright; no
# browser download) and prometheus (monitor --prometheus against a real Prometheus server).
set -euo pipefail
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v prometheus >/dev/null 2>&1 || missing+=(prometheus)
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "install_system_deps: need root to apt-get install ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
RETRY="$(dirname "$0")/retry.sh"
"$RETRY" $SUDO apt-get update -qq
"$RETRY" $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
chromium --version
prometheus --version 2>&1 | head -1
