#!/usr/bin/env bash
# Installs, from Debian's packages, what the tests need of the machine where it is missing:
# - redis-server: the tests of shared state across pods (issue 37) start their own on a free
#   loopback port (test/support/redis-server.ts); they need the binary, and no service;
# - libfaketime: one pod of such a fleet runs with its clock set off the others'
#   (test/support/skewed-clock.ts), as a node whose clock drifts.
# Those tests never skip without them. `.ci/run` calls this before `npm ci`, and `npm test`
# calls it from vitest's global setup (test/support/ensure-test-packages.ts), so
# `npm ci && npm test` passes on a fresh machine too.
#
# A policy-rc.d that answers 101 keeps redis-server's postinst from starting its service
# (invoke-rc.d and deb-systemd-invoke both honour it); a service that runs anyway on 6379 is
# harmless, as no test uses that port.
set -uo pipefail
missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
compgen -G '/usr/lib/*/faketime/libfaketimeMT.so.1' >/dev/null || missing+=(libfaketime)
[ "${#missing[@]}" -eq 0 ] && exit 0
echo "installing ${missing[*]} (apt-get install), which the tests need" >&2
as_root=""
[ "$(id -u)" -ne 0 ] && as_root="sudo"
policy=/usr/sbin/policy-rc.d
made_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | $as_root tee "$policy" >/dev/null && $as_root chmod 755 "$policy" && made_policy=1
fi
$as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q \
  && $as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
apt_status=$?
[ "$made_policy" -eq 1 ] && $as_root rm -f "$policy"
if [ "$apt_status" -ne 0 ] || ! command -v redis-server >/dev/null 2>&1 || ! compgen -G '/usr/lib/*/faketime/libfaketimeMT.so.1' >/dev/null; then
  echo "could not install ${missing[*]} (apt-get install ${missing[*]}), which the tests need" >&2
  exit 1
fi
