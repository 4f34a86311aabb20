#!/usr/bin/env bash
# The action's cache key and venv path. The venv is deleted first (a step before this one, e.g.
# training code in a rebuild, may have written into it), then restored from the cache or made.
# The key is the digest of every file the install copies (the package with its runtime, the
# schemas, pyproject.toml, README.md and LICENSE that the metadata reads), the Python, the venv's own path
# (console scripts carry it in their shebangs) and the extras the command needs: two revisions of
# the action that differ in one module, or a venv made for another Python, never share a key.
set -euo pipefail
# GNU coreutils on Linux, shasum on macOS: the same "DIGEST  FILE" lines
if command -v sha256sum > /dev/null 2>&1; then sha256=(sha256sum); else sha256=(shasum -a 256); fi
extras=""
if [ "${INPUT_COMMAND:-gate}" = "rebuild" ]; then
  extras="rebuild"  # uv and the Docker SDK: a rebuild realizes environments
fi
# Whether a venv restored from the cache may serve this command. An entry is only as honest as
# every job that could write it, and a job on the default branch that ran a pull request's code
# unsandboxed (a Slurm launcher, allow-unsandboxed) could have written one, stamp and all: the
# digest seal.sh checks is stored inside the entry. So the commands whose answer counts (gate
# full/publish and status post with the token, rebuild writes the verdict, attest and badge vouch
# for one) install fresh, and their digest is this job's own, taken before anything else ran;
# only validate, detect, audit and gate compute (no token, nothing posted) restore.
case "${INPUT_COMMAND:-gate}:${INPUT_MODE:-full}" in
  validate:* | detect:* | audit:* | gate:compute) cacheable=true ;;
  *) cacheable=false ;;
esac
venv="$RUNNER_TEMP/reprogate-venv${extras:+-$extras}"
[ ! -e "$venv" ] || chmod -R u+w "$venv"  # seal.sh made it read-only
rm -rf "$venv"
cd "$GITHUB_ACTION_PATH"
# The key is two digests: what the venv was made with (the Python, the venv's path, the extras),
# then what was installed into it. restore-prefix is the first part alone: a venv of another
# revision made the same way, whose dependencies an install of this revision can keep.
made_with=$(
  {
    python3 -c 'import sys; print(sys.version, sys.executable)'
    printf 'venv=%s\nextras=%s\n' "$venv" "$extras"
  } | "${sha256[@]}" | cut -c1-16
)
digest=$(
  {
    find reprogate schemas -type f ! -path '*/__pycache__/*' ! -name '*.pyc' -print0 | LC_ALL=C sort -z | xargs -0 "${sha256[@]}"
    "${sha256[@]}" pyproject.toml README.md LICENSE
  } | "${sha256[@]}" | cut -c1-16
)
prefix="reprogate-venv-${RUNNER_OS:-Linux}-${RUNNER_ARCH:-X64}-${made_with}-"
{
  echo "key=${prefix}${digest}"
  echo "restore-prefix=${prefix}"
  echo "path=$venv"
  echo "extras=$extras"
  echo "cacheable=$cacheable"
} >> "$GITHUB_OUTPUT"
