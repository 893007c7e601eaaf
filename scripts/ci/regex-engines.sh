#!/usr/bin/env bash
# The regex engines that client generators and validators use, then the test that compiles every
# `pattern` of docs/openapi.json in each and checks it against the service's own name rule
# (test/integration/infrastructure/pets/name-pattern-engines.spec.ts). From Debian: Go's regexp (golang-go), Rust's
# regex crate (cargo + librust-regex-dev: crates.io is not reachable, the crate comes from
# /usr/share/cargo/registry), Java's java.util.regex (default-jdk-headless), Python's re (python3).
# Run as root on CI; with DATABASE_URL for the integration project's database.
set -euo pipefail
cd "$(dirname "$0")/../.."
packages=(golang-go cargo librust-regex-dev default-jdk-headless python3)
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y -qq "${packages[@]}" >/dev/null; then
  apt-get update -qq
  apt-get install -y -qq "${packages[@]}" >/dev/null
fi
REGEX_ENGINES_REQUIRED=1 NODE_OPTIONS=--experimental-vm-modules \
  npx jest --runInBand --selectProjects integration -- test/integration/infrastructure/pets/name-pattern-engines.spec.ts
