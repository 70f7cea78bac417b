#!/usr/bin/env bash
# The gateway's token validation pattern under java.util.regex, the engine API Gateway evaluates
# it with (npm test covers JavaScript's RegExp, the local gateway's): the shared bearer token
# cases and generated ones, each through matches() and find(). Needs Java 17 (single-file run).
set -euo pipefail
cd "$(dirname "$0")/.."

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

node --import tsx test/java/token-cases-writer.ts "$work/token-cases.txt"
java test/java/TokenPatternCheck.java "$work/token-cases.txt"
