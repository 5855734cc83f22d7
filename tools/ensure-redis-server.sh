#!/usr/bin/env bash
# Installs redis-server from Debian's packages where it is missing. The tests of
# shared state across pods (issue 37) start their own redis-server on a free
# loopback port (test/support/redis-server.ts): they need the binary, never skip
# without it, and need no service. `.ci/run` calls this before `npm ci`, and
# `npm test` calls it from vitest's global setup (test/support/ensure-redis-server.ts),
# so `npm ci && npm test` passes on a fresh machine too.
#
# A policy-rc.d that answers 101 keeps the package's postinst from starting its
# service (invoke-rc.d and deb-systemd-invoke both honour it); a service that
# runs anyway on 6379 is harmless, as no test uses that port.
set -uo pipefail
command -v redis-server >/dev/null 2>&1 && exit 0
echo "installing redis-server (apt-get install redis-server), which the Redis tests need" >&2
as_root=""
[ "$(id -u)" -ne 0 ] && as_root="sudo"
policy=/usr/sbin/policy-rc.d
made_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | $as_root tee "$policy" >/dev/null && $as_root chmod 755 "$policy" && made_policy=1
fi
$as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q \
  && $as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends redis-server
apt_status=$?
[ "$made_policy" -eq 1 ] && $as_root rm -f "$policy"
if [ "$apt_status" -ne 0 ] || ! command -v redis-server >/dev/null 2>&1; then
  echo "could not install redis-server (apt-get install redis-server), which the Redis tests need" >&2
  exit 1
fi
