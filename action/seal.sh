#!/usr/bin/env bash
# After the venv is installed (or restored from the cache): record its content digest in it and
# as the step output `digest`, then make it read-only, files and folders, so nothing the job runs
# later adds a module by accident; run.sh checks the digest before every use (digest.sh).
# A restored venv must match the digest it was saved with, or it is refused.
set -euo pipefail
. "$GITHUB_ACTION_PATH/action/digest.sh"
stamp="$VENV/.reprogate-venv-digest"
digest=$(venv_digest "$VENV")
if [ "${RESTORED:-false}" = "true" ]; then
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$digest" ]; then
    echo "::error title=reprogate::the cached virtual environment does not match the digest it was saved with; refusing to run it (delete the cache entry)"
    exit 3
  fi
else
  chmod -R u+w "$VENV"
  printf '%s\n' "$digest" > "$stamp"
fi
chmod -R a-w "$VENV"
echo "digest=$digest" >> "$GITHUB_OUTPUT"
