#!/usr/bin/env bash
# Run a command, retrying it when it fails: CI's network drops large downloads now and then (pip gave up on a
# 56 MB llvmlite wheel after 6 resume attempts at the same byte). Usage: scripts/retry.sh CMD [ARGS...].
# Tries up to $RETRY_ATTEMPTS times (default 4), waiting 10 s, 20 s, 40 s between tries.
set -uo pipefail
attempts=${RETRY_ATTEMPTS:-4}
if ! [[ "$attempts" =~ ^[0-9]+$ ]] || ((attempts < 1)); then attempts=1; fi  # the command runs at least once
delay=10
for ((i = 1; i <= attempts; i++)); do
  "$@" && exit 0
  rc=$?
  if ((i == attempts)); then
    echo "retry.sh: '$*' failed $attempts times (last exit $rc)" >&2
    exit "$rc"
  fi
  echo "retry.sh: '$*' exited $rc; try $((i + 1)) of $attempts in ${delay}s" >&2
  sleep "$delay"
  delay=$((delay * 2))
done
