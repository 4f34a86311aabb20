#!/usr/bin/env bash
# The action's command step: map the inputs (passed as environment variables, never interpolated
# into this script) onto one reprogate command. Only the commands that talk to GitHub get the
# token (action.yml runs them in a step of their own): validate, detect, rebuild, audit and
# `gate --mode compute` run in a step whose environment never held it, so nothing a pull request
# controls (records, training code) runs next to a credential.
set -euo pipefail
reprogate="$VENV/bin/reprogate"
# The venv as seal.sh found it right after the install: a module planted into it since (by code
# an earlier step ran as the runner's user) is refused, never imported.
if [ -n "${VENV_DIGEST:-}" ]; then
  . "$(dirname -- "${BASH_SOURCE[0]}")/digest.sh"
  if [ "$(venv_digest "$VENV")" != "$VENV_DIGEST" ]; then
    echo "::error title=reprogate::the action's virtual environment changed since it was installed (a file was added or rewritten); refusing to run it"
    exit 3
  fi
fi
# One argument per line, never split on spaces or expanded by this shell (reprogate expands the
# globs itself, relative to the working directory): records and extra-args.
lines() {
  local line
  while IFS= read -r line || [ -n "$line" ]; do
    line="${line#"${line%%[![:space:]]*}"}"
    line="${line%"${line##*[![:space:]]}"}"
    [ -z "$line" ] || printf '%s\0' "$line"
  done <<< "$1"
}
records=()
while IFS= read -r -d '' item; do records+=("$item"); done < <(lines "${INPUT_RECORDS:-}")
extra_args=()
while IFS= read -r -d '' item; do extra_args+=("$item"); done < <(lines "${INPUT_EXTRA_ARGS:-}")
# extra-args may not repeat an option the action sets from its own inputs: the last one given wins,
# so a line there (a workflow that builds extra-args from an expression) could change the commit,
# state, nonce or context that is posted, make the gate a dry run, or rebuild another environment.
own_options() {
  local arg own
  for arg in ${extra_args[@]+"${extra_args[@]}"}; do
    for own in "$@"; do
      if [ "$arg" = "$own" ] || [ "${arg%%=*}" = "$own" ]; then
        echo "::error title=reprogate::extra-args may not give $own: the action sets it from its own inputs"
        exit 2
      fi
    done
  done
}
case "${INPUT_COMMAND:-gate}" in
  gate) own_options --mode --result-file --dry-run --event-name --reader --format ;;
  validate | detect) [ -z "${INPUT_SARIF_FILE:-}" ] || own_options --format ;;
  rebuild) own_options --environment --nonce --contract-from --allow-unsandboxed --dry-run --format ;;
  status) own_options --state --from-verdict --nonce --rebuild-result --base --expect-records --also-context --sha --pr --context ;;
  attest) own_options --nonce ;;
  badge) own_options --nonce --rebuild-result ;;
esac
# sarif-file is written by this shell's redirect: it must land inside the workspace (or RUNNER_TEMP),
# never through a link the checkout holds (a committed `reprogate.sarif -> ~/.bashrc`, or a folder
# that links out), which would let a pull request choose a file the runner trusts to overwrite.
sarif_inside() {
  local file="$INPUT_SARIF_FILE" folder root
  [ ! -L "$file" ] || { echo "::error title=reprogate::sarif-file is a symbolic link: refusing to write through it"; exit 2; }
  folder=$(cd -- "$(dirname -- "$file")" 2>/dev/null && pwd -P) || { echo "::error title=reprogate::sarif-file's folder does not exist"; exit 2; }
  for root in "${GITHUB_WORKSPACE:-$workspace}" "${RUNNER_TEMP:-}"; do
    [ -n "$root" ] && [ -d "$root" ] || continue
    root=$(cd -- "$root" && pwd -P)
    case "$folder/" in "$root"/*) return 0 ;; esac
  done
  echo "::error title=reprogate::sarif-file must be inside the workspace or RUNNER_TEMP (it is in $folder)"
  exit 2
}
workspace=$(pwd -P)
if [ -n "${INPUT_WORKING_DIRECTORY:-}" ]; then
  cd -- "$INPUT_WORKING_DIRECTORY" || { echo "::error title=reprogate::working-directory does not exist"; exit 2; }
fi
base="${INPUT_BASE:-}"
if [ -z "$base" ] && [ -n "${GITHUB_BASE_REF:-}" ]; then
  base="origin/$GITHUB_BASE_REF"
fi
without_token() {
  unset GITHUB_TOKEN REPROGATE_GITHUB_TOKEN
}
case "${INPUT_COMMAND:-gate}" in
  gate)
    mode="${INPUT_MODE:-full}"
    case "$mode" in
      full) exec "$reprogate" gate --format github ${extra_args[@]+"${extra_args[@]}"} ;;
      compute)
        without_token
        exec "$reprogate" gate --format github --mode compute --result-file "${INPUT_RESULT_FILE:-reprogate-gate/result.json}" ${extra_args[@]+"${extra_args[@]}"} ;;
      publish)
        exec "$reprogate" gate --format github --mode publish --result-file "${INPUT_RESULT_FILE:-reprogate-gate/result.json}" ${extra_args[@]+"${extra_args[@]}"} ;;
      *) echo "::error title=reprogate::unknown gate mode (full, compute, publish)"; exit 2 ;;
    esac ;;
  validate)
    without_token
    strict=()
    [ "${INPUT_FAIL_ON:-error}" = "warning" ] && strict=(--strict)
    if [ -n "${INPUT_SARIF_FILE:-}" ]; then
      sarif_inside
      exec "$reprogate" validate --format sarif ${strict[@]+"${strict[@]}"} ${extra_args[@]+"${extra_args[@]}"} -- ${records[@]+"${records[@]}"} > "$INPUT_SARIF_FILE"
    fi
    exec "$reprogate" validate --format github ${strict[@]+"${strict[@]}"} ${extra_args[@]+"${extra_args[@]}"} -- ${records[@]+"${records[@]}"} ;;
  detect)
    without_token
    [ -n "$base" ] || { echo "::error title=reprogate::detect needs the base input (or a pull_request event)"; exit 2; }
    if [ -n "${INPUT_SARIF_FILE:-}" ]; then
      sarif_inside
      exec "$reprogate" detect --base "$base" --head "${INPUT_HEAD:-HEAD}" --format sarif ${extra_args[@]+"${extra_args[@]}"} > "$INPUT_SARIF_FILE"
    fi
    exec "$reprogate" detect --base "$base" --head "${INPUT_HEAD:-HEAD}" --format github ${extra_args[@]+"${extra_args[@]}"} ;;
  rebuild)
    without_token
    [ -n "${INPUT_RECORD:-}" ] || { echo "::error title=reprogate::rebuild needs the record input"; exit 2; }
    # The verdict goes to a fresh folder under RUNNER_TEMP (the out-dir output), never into the
    # checkout; reprogate writes no environment file, so the ranks' parent does not know its path.
    extra=()
    [ -z "${INPUT_NONCE:-}" ] || extra+=(--nonce "$INPUT_NONCE")
    [ "${INPUT_ALLOW_UNSANDBOXED:-false}" != "true" ] || extra+=(--allow-unsandboxed)
    # the base's contract judges (the dispatch's base input; empty for a baseline promotion's rebuild)
    [ -z "${INPUT_BASE:-}" ] || extra+=(--contract-from "$INPUT_BASE")
    unset GITHUB_ENV GITHUB_PATH
    exec "$reprogate" rebuild --environment "${INPUT_ENVIRONMENT:-reference}" ${extra[@]+"${extra[@]}"} --format github ${extra_args[@]+"${extra_args[@]}"} -- "$INPUT_RECORD" ;;
  audit)
    without_token
    exec "$reprogate" audit ${extra_args[@]+"${extra_args[@]}"} -- ${records[@]+"${records[@]}"} ;;
  status)
    verdict="${INPUT_VERDICT:-verdicts}"
    args=(github status)
    if [ -d "$verdict" ]; then
      # one verdict.json per rebuilt record (artifacts downloaded into sub-folders)
      found=0
      while IFS= read -r -d '' file; do
        args+=(--from-verdict "$file")
        found=1
      done < <(find "$verdict" -name verdict.json -type f -print0 | sort -z)
      # no verdict at all: name the missing file, so the status says error rather than nothing
      [ "$found" = 1 ] || args+=(--from-verdict "$verdict/verdict.json")
    else
      args+=(--from-verdict "$verdict")
    fi
    # what binds the verdicts to this dispatch (github/binding.py); the report is rendered from
    # the accepted verdicts, never taken from the rebuild's folder
    [ -z "${INPUT_NONCE:-}" ] || args+=(--nonce "$INPUT_NONCE")
    [ -z "${INPUT_REBUILD_RESULT:-}" ] || args+=(--rebuild-result "$INPUT_REBUILD_RESULT")
    [ -z "${INPUT_BASE:-}" ] || args+=(--base "$INPUT_BASE")
    [ -z "${INPUT_EXPECT_RECORDS:-}" ] || args+=(--expect-records "$INPUT_EXPECT_RECORDS")
    [ -z "${INPUT_ALSO_CONTEXT:-}" ] || args+=(--also-context "$INPUT_ALSO_CONTEXT")
    [ -z "${INPUT_SHA:-}" ] || args+=(--sha "$INPUT_SHA")
    [ -z "${INPUT_PULL_REQUEST:-}" ] || args+=(--pr "$INPUT_PULL_REQUEST")
    exec "$reprogate" "${args[@]}" ${extra_args[@]+"${extra_args[@]}"} ;;
  attest)
    # the reproduction statement of one verdict (a file, or the folder its artifact was downloaded
    # into), for actions/attest; no token
    without_token
    verdict="${INPUT_VERDICT:-verdicts}"
    [ ! -d "$verdict" ] || verdict="$verdict/verdict.json"
    extra=()
    [ -z "${INPUT_NONCE:-}" ] || extra+=(--nonce "$INPUT_NONCE")
    exec "$reprogate" attest ${extra[@]+"${extra[@]}"} ${extra_args[@]+"${extra_args[@]}"} -- "$verdict" ;;
  badge)
    # one badge for every verdict in the folder; none at all is a missing one (inconclusive)
    without_token
    verdict="${INPUT_VERDICT:-verdicts}"
    args=(badge)
    [ -z "${INPUT_NONCE:-}" ] || args+=(--nonce "$INPUT_NONCE")
    [ -z "${INPUT_REBUILD_RESULT:-}" ] || args+=(--rebuild-result "$INPUT_REBUILD_RESULT")
    files=()
    if [ -d "$verdict" ]; then
      while IFS= read -r -d '' file; do files+=("$file"); done < <(find "$verdict" -name verdict.json -type f -print0 | sort -z)
      [ "${#files[@]}" -gt 0 ] || files+=("$verdict/verdict.json")
    else
      files+=("$verdict")
    fi
    exec "$reprogate" "${args[@]}" ${extra_args[@]+"${extra_args[@]}"} -- "${files[@]}" ;;
  *)
    echo "::error title=reprogate::unknown command (gate, validate, detect, rebuild, status, audit, attest, badge)"
    exit 2 ;;
esac
