#!/bin/sh
# What make tools-test needs from Debian (mypy; python3-junitparser, the real
# JUnit consumer the tests read junit.xml with), installed when root; then
# mypy --strict over tools/.
set -eu
if ! command -v mypy >/dev/null 2>&1 || ! /usr/bin/python3 -c 'import junitparser' 2>/dev/null; then
	if [ "$(id -u)" = 0 ]; then
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -q mypy python3-junitparser >/dev/null
	else
		echo "mypy or python3-junitparser is not installed and this is not root: run 'apt-get install -y mypy python3-junitparser' as root" >&2
		exit 1
	fi
fi
cd "$(dirname "$0")"
mypy --strict --python-version 3.11 cpuhpk tests
