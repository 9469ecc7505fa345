#!/usr/bin/env bash
# Install the Debian packages tessera needs, when missing (non-interactive).
# Runs as root, or through passwordless sudo; otherwise names what is missing.
# Extra package names may be given as arguments (scripts/fuzz.sh adds clang).
set -euo pipefail
pkgs=(build-essential pkg-config libuv1-dev libprotobuf-c-dev protobuf-c-compiler libssl-dev
      libzstd-dev libyaml-dev check libsubunit-dev clang-format python3 openssl "$@")
missing=()
for p in "${pkgs[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "deps: installing missing Debian packages: ${missing[*]}" >&2
if [ "$(id -u)" -eq 0 ]; then
    sudo=()
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    sudo=(sudo -n)
else
    echo "deps: not root and no passwordless sudo; please install: ${missing[*]}" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -q >&2 || true
"${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
