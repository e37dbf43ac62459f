#!/bin/sh
# What make tools-test needs from Debian (mypy; python3-junitparser, the real
# JUnit consumer the tests read junit.xml with; python3-yaml, which reads the
# CI definitions; python3-jsonschema, which validates the KCIDB reports
# against tools/kcidb/'s schema; lcov, which make merge-results runs; chromium, which
# renders a run's index.html), installed when root; then mypy --strict over
# tools/.
set -eu
pkgs='mypy python3-junitparser python3-yaml python3-jsonschema lcov chromium'
if ! command -v mypy >/dev/null 2>&1 || ! command -v lcov >/dev/null 2>&1 ||
	! command -v chromium >/dev/null 2>&1 ||
	! /usr/bin/python3 -c 'import junitparser, yaml, jsonschema' 2>/dev/null; then
	if [ "$(id -u)" = 0 ]; then
		# shellcheck disable=SC2086 # one word per package
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $pkgs >/dev/null
	else
		echo "some of $pkgs are not installed and this is not root: run 'apt-get install -y $pkgs' as root" >&2
		exit 1
	fi
fi
cd "$(dirname "$0")"
mypy --strict --python-version 3.11 cpuhpk tests
