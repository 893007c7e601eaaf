#!/usr/bin/env bash
# Installs the newest Node LINE (26, 24, ...) from the npm registry's `node` package into DIR so that
# every user may run it, and prints the directory to put first on PATH (DIR/node_modules/.bin).
#
#   bin=$(bash scripts/ci/install-node.sh 26 /tmp/node26) && PATH="$bin:$PATH" node --version
#
# npm itself stays the machine's (/usr/bin/npm); with this directory first on PATH it runs on this Node.
set -euo pipefail
line=${1:?usage: install-node.sh LINE DIR}
dir=${2:?usage: install-node.sh LINE DIR}

mkdir -p "$dir"
# The node package's install script runs npm again, for the platform's binary; in a clean
# environment (CI's `env -i`) that second download did not get through the registry's TLS without
# the machine's CA bundle in NODE_EXTRA_CA_CERTS, and hung until the try's limit.
if [[ -z ${NODE_EXTRA_CA_CERTS:-} ]]; then
  cafile=$(npm config get cafile 2>/dev/null || true)
  if [[ -f $cafile ]]; then export NODE_EXTRA_CA_CERTS=$cafile; fi
fi
# --prefix with no package.json there: a private node_modules, nothing else on the machine changes.
# Three tries: a registry that drops a download (or, seen here once, a TLS error) is not a failed build.
# Each try is bounded: one download once hung for ten minutes, until the caller's own limit ended
# the whole build (a download takes seconds).
for try in 1 2 3; do
  timeout --kill-after=10 240 npm install --prefix "$dir" --no-save --no-audit --no-fund --loglevel=error \
    --fetch-retries=4 "node@$line" >&2 && break
  ((try < 3)) || exit 1
  echo "install-node.sh: Node $line, try $try failed; trying again" >&2
  sleep 5
done
bin=$dir/node_modules/.bin
chmod -R a+rX "$dir"
version=$("$bin/node" --version)
if [[ $version != "v$line."* ]]; then
  echo "install-node.sh: asked for Node $line, $bin/node is $version" >&2
  exit 1
fi
echo "$bin"
