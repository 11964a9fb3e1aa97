#!/usr/bin/env bash
# Install the deploy checkers (promtool from Debian's prometheus, Debian's docker-compose) if missing.
# Idempotent and instant when both are present. Without a usable apt it only says so: the deploy
# tests then skip (and fail under CI=true). No daemon is left running: service starts are refused
# through policy-rc.d for the length of the install.
set -euo pipefail

declare -A wanted=([promtool]=prometheus [docker-compose]=docker-compose)
missing=()
for binary in "${!wanted[@]}"; do
    command -v "$binary" >/dev/null 2>&1 || missing+=("${wanted[$binary]}")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
    echo "deploy tools: apt-get not found; install ${missing[*]} yourself (the deploy tests skip meanwhile)" >&2
    exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
    sudo=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo=(sudo -n)
else
    echo "deploy tools: not root and no password-less sudo; install ${missing[*]} yourself (the deploy tests skip meanwhile)" >&2
    exit 0
fi

echo "deploy tools: installing ${missing[*]}" >&2
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
    # Debian's prometheus package would enable and start a server on :9090; refuse that for this install.
    printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null
    "${sudo[@]}" chmod 755 "$policy"
    trap '"${sudo[@]}" rm -f "$policy"' EXIT
fi
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
if [[ " ${missing[*]} " == *" prometheus "* ]] && command -v systemctl >/dev/null 2>&1; then
    # Only the promtool binary is wanted: keep the packaged server from starting at the next boot.
    "${sudo[@]}" systemctl disable --quiet prometheus.service 2>/dev/null || true
fi
