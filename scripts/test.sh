#!/usr/bin/env bash
# Set up everything the test suite needs on a fresh machine, then run the whole suite.
# Usage: bash scripts/test.sh [pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
# constraints.txt: the OpenCV/numpy versions the tests' margins were measured with.
python3 -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[test]'
if ! command -v chromium >/dev/null 2>&1 && [ ! -x /usr/bin/chromium ]; then
  # The browser tests drive Debian's Chromium (Playwright's own browser download is not
  # available here).
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "installing chromium (apt) for the browser tests..." >&2
  $SUDO apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null \
    || { echo "error: could not install chromium with apt-get; install it (apt-get install chromium) and re-run" >&2; exit 1; }
fi
# Tests run on every core (at most four): each module's tests stay on one worker, which
# builds that module's fixtures once (2 cores, a fresh clone: 18 min, 32 min of CPU).
exec python3 -m pytest --numprocesses=auto --maxprocesses=4 --dist=loadscope "$@"
