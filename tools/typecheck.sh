#!/bin/sh
# mypy --strict over tools/ (Debian's mypy package; installed when root).
set -eu
if ! command -v mypy >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ]; then
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -q mypy >/dev/null
	else
		echo "mypy is not installed and this is not root: run 'apt-get install -y mypy' as root" >&2
		exit 1
	fi
fi
cd "$(dirname "$0")"
mypy --strict --python-version 3.11 cpuhpk tests
