#!/usr/bin/env bash
# Installs Debian's chromium for the console's browser tests when it is missing. Playwright
# drives it by path (tests/api/test_console_browser.py); no browser is ever downloaded.
set -eu
if command -v chromium >/dev/null 2>&1; then exit 0; fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure-chromium: install Debian's chromium (apt-get install chromium)" >&2
  exit 1
fi
echo "ensure-chromium: installing chromium" >&2
apt-get update -qq >/dev/null
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
