#!/usr/bin/env bash
# Builds the base image that the Containerfile's BASE_IMAGE stands for, here, without a container
# registry: Debian 12 (bookworm) minbase from the machine's Debian mirror (debootstrap), Node 26
# from the npm registry's `node` package (scripts/ci/install-node.sh), npm, and the machine's CA
# bundle; then `podman import`. Elsewhere, the Containerfile's default base (node:26-bookworm-slim
# from Docker Hub) plays this part.
#
#   sudo bash scripts/container/build-base.sh [IMAGE]     # default localhost/petstore-base:26
#   FORCE=1 to rebuild an image that exists (otherwise it is kept: the build is cached)
#
# Needs root (debootstrap), podman and debootstrap (scripts/ci/container.sh installs them).
set -euo pipefail

IMAGE=${1:-localhost/petstore-base:26}
NODE_LINE=${NODE_LINE:-26}
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PODMAN=(podman --runtime runc)

if [[ -z ${FORCE:-} ]] && "${PODMAN[@]}" image exists "$IMAGE"; then
  echo "base image $IMAGE exists (cached): $("${PODMAN[@]}" run --rm --network host "$IMAGE" sh -c 'echo "Node $(node --version), npm $(npm --version)"')"
  exit 0
fi
if [[ $(id -u) != 0 ]]; then
  echo "build-base.sh: run as root (debootstrap)" >&2
  exit 2
fi

# The machine's Debian mirror (deb822 .sources or a one-line sources.list), else Debian's CDN.
mirror=$(
  { cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '/^URIs:/ && $2 !~ /security/ { print $2; exit }'
    grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list |
      awk '$0 !~ /security/ && $0 ~ /debian/ { for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) { print $i; exit } }'
  } | head -1
) || true
mirror=${mirror:-http://deb.debian.org/debian}

WORK=$(mktemp -d /var/tmp/petstore-base.XXXXXX)
ROOT=$WORK/root
cleanup() {
  # debootstrap mounts /proc and /sys inside the root while it works; never delete through a mount.
  local mnt
  for mnt in $(findmnt -rn -o TARGET | grep -F "$ROOT/" | sort -r); do umount -l "$mnt" 2>/dev/null || true; done
  rm -rf --one-file-system "$WORK"
}
trap cleanup EXIT

started=$SECONDS
echo "debootstrap --variant=minbase bookworm from $mirror"
# libatomic1: the Node binary links it; minbase has the rest (libstdc++6 comes with apt).
debootstrap --variant=minbase --include=libatomic1 bookworm "$ROOT" "$mirror" >"$WORK/debootstrap.log" 2>&1 || {
  tail -20 "$WORK/debootstrap.log" >&2
  exit 1
}
echo "  $((SECONDS - started)) s"

echo "Node $NODE_LINE from the npm registry's node package"
bin=$(bash "$SRC/scripts/ci/install-node.sh" "$NODE_LINE" "$WORK/node")
install -D -m 755 "$(readlink -f "$bin/node")" "$ROOT/usr/local/bin/node"

# npm: the node package ships none. The machine's own npm when it has one (as CI uses), else npm
# from the registry. Laid out as in the official image: /usr/local/lib/node_modules/npm.
mkdir -p "$ROOT/usr/local/lib/node_modules"
# (From the npm command itself: `npm root -g` follows whichever node comes first on PATH.)
npm_cli=$(readlink -f "$(command -v npm 2>/dev/null || echo /nonexistent)" || true)
npm_dir=$(dirname "$(dirname "$npm_cli")")
if [[ $npm_cli != */bin/npm-cli.js || ! -f $npm_dir/package.json ]]; then
  npm install --prefix "$WORK/npm" --no-save --no-audit --no-fund --loglevel=error npm@11 >&2
  npm_dir=$WORK/npm/node_modules/npm
fi
cp -a "$npm_dir" "$ROOT/usr/local/lib/node_modules/npm"
ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$ROOT/usr/local/bin/npm"
ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$ROOT/usr/local/bin/npx"

# The machine's CA bundle, so that npm inside a build trusts what the machine trusts.
install -D -m 644 /etc/ssl/certs/ca-certificates.crt "$ROOT/etc/ssl/certs/ca-certificates.crt"

# What a slim image leaves out: package caches and lists (apt-get update brings the lists back),
# documentation, manuals, translations.
rm -rf "$ROOT"/var/cache/apt/archives/*.deb "$ROOT"/var/cache/apt/*.bin "$ROOT"/var/lib/apt/lists/* \
  "$ROOT"/usr/share/doc/* "$ROOT"/usr/share/man/* "$ROOT"/usr/share/info/* "$ROOT"/usr/share/locale/* \
  "$ROOT"/var/log/*.log "$ROOT"/var/log/apt/* "$ROOT"/debootstrap

echo "podman import as $IMAGE"
tar --numeric-owner -C "$ROOT" -c . |
  "${PODMAN[@]}" import --quiet \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt' \
    --change 'CMD ["node"]' \
    --message "Debian bookworm minbase, Node $NODE_LINE, npm" - "$IMAGE" >/dev/null
versions=$("${PODMAN[@]}" run --rm --network host "$IMAGE" sh -c 'echo "Node $(node --version), npm $(npm --version)"')
case $versions in
  "Node v$NODE_LINE."*", npm "[0-9]*) ;;
  *) echo "build-base.sh: the image says \"$versions\"" >&2; exit 1 ;;
esac
size=$("${PODMAN[@]}" image inspect --format '{{.Size}}' "$IMAGE")
echo "base image $IMAGE: $versions, $((size / 1048576)) MiB, built in $((SECONDS - started)) s"
