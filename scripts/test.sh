#!/bin/sh
# npm test: the type-check, the OpenAPI document's lint, then unit, integration and e2e in one Jest
# run (arguments go to Jest). Its last line says how long it took, passed or not.
set -e
started=$(date +%s)
trap 'echo "npm test: $(($(date +%s) - started)) s"' EXIT
tsc -p tsconfig.json --noEmit
redocly lint docs/openapi.json
NODE_OPTIONS=--experimental-vm-modules jest --runInBand --selectProjects unit integration e2e "$@"
