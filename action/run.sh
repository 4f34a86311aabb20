#!/usr/bin/env bash
# The action's single step: map the inputs (passed as environment variables, never interpolated
# into this script) onto one reprogate command.
set -euo pipefail
reprogate="$VENV/bin/reprogate"
base="${INPUT_BASE:-}"
if [ -z "$base" ] && [ -n "${GITHUB_BASE_REF:-}" ]; then
  base="origin/$GITHUB_BASE_REF"
fi
case "${INPUT_COMMAND:-gate}" in
  gate)
    exec "$reprogate" gate --format github ;;
  validate)
    strict=()
    [ "${INPUT_FAIL_ON:-error}" = "warning" ] && strict=(--strict)
    # shellcheck disable=SC2086  # records is a space-separated list of paths and globs
    exec "$reprogate" validate --format github "${strict[@]}" ${INPUT_RECORDS:-} ;;
  detect)
    [ -n "$base" ] || { echo "::error title=reprogate::detect needs the base input (or a pull_request event)"; exit 2; }
    exec "$reprogate" detect --base "$base" --head "${INPUT_HEAD:-HEAD}" --format github ;;
  rebuild)
    [ -n "${INPUT_RECORD:-}" ] || { echo "::error title=reprogate::rebuild needs the record input"; exit 2; }
    exec "$reprogate" rebuild "$INPUT_RECORD" --format github ;;
  audit)
    # shellcheck disable=SC2086  # records is a space-separated list of paths and globs
    exec "$reprogate" audit ${INPUT_RECORDS:-} ;;
  status)
    args=(github status --from-verdict "${INPUT_VERDICT:-reprogate-rebuild/verdict.json}")
    [ -n "${INPUT_SHA:-}" ] && args+=(--sha "$INPUT_SHA")
    if [ -n "${INPUT_PULL_REQUEST:-}" ]; then
      args+=(--pr "$INPUT_PULL_REQUEST" --comment-report "$(dirname "${INPUT_VERDICT:-reprogate-rebuild/verdict.json}")/report.md")
    fi
    exec "$reprogate" "${args[@]}" ;;
  *)
    echo "::error title=reprogate::unknown command '${INPUT_COMMAND}' (gate, validate, detect, rebuild, status, audit)"
    exit 2 ;;
esac
