#!/usr/bin/env bash
# The traceaudit GitHub Action's work (action.yml): get the binary, run
# `traceaudit analyze` or `traceaudit diff` with --format markdown and
# --out, append the Markdown to the job summary, and set the step outputs.
# It exits 0 when traceaudit ran, whatever it found: action.yml fails the
# job afterwards, once the summary and the artifact are written.
#
# Inputs (environment): TA_COMMAND, TA_TRACE, TA_BEFORE, TA_FAIL_ON,
# TA_ARGS, TA_OUT, TA_SUMMARY, TA_DIST_URL, TA_DIST_SHA256, and TA_BINARY
# (a traceaudit to use as is; for tests). GitHub's: GITHUB_ACTION_PATH,
# GITHUB_STEP_SUMMARY, GITHUB_OUTPUT, RUNNER_TEMP.
set -euo pipefail

die() { echo "::error title=traceaudit::$*" >&2; exit 2; }

command=${TA_COMMAND:-analyze}
out=${TA_OUT:-traceaudit-report}
tmp=$(mktemp -d "${RUNNER_TEMP:-/tmp}/traceaudit.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
: "${GITHUB_OUTPUT:=/dev/null}"

# The binary: given, downloaded from a make dist tarball, or built here.
if [ -n "${TA_BINARY:-}" ]; then
  bin=$TA_BINARY
elif [ -n "${TA_DIST_URL:-}" ]; then
  echo "::group::download traceaudit"
  curl -fsSL --retry 3 -o "$tmp/traceaudit.tar.gz" "$TA_DIST_URL" || die "cannot download $TA_DIST_URL"
  if [ -n "${TA_DIST_SHA256:-}" ]; then
    echo "$TA_DIST_SHA256  $tmp/traceaudit.tar.gz" | sha256sum -c - >&2 || die "$TA_DIST_URL: SHA-256 differs from dist-sha256"
  fi
  mkdir -p "$tmp/dist"
  tar -xzf "$tmp/traceaudit.tar.gz" -C "$tmp/dist" --strip-components=1 || die "$TA_DIST_URL: not a make dist tarball"
  bin="${RUNNER_TEMP:-$tmp}/traceaudit-bin/traceaudit"
  mkdir -p "$(dirname "$bin")" && mv "$tmp/dist/traceaudit" "$bin"
  echo "::endgroup::"
else
  [ -n "${GITHUB_ACTION_PATH:-}" ] || die "GITHUB_ACTION_PATH is not set: run this through action.yml"
  echo "::group::build traceaudit"
  bin="${RUNNER_TEMP:-$tmp}/traceaudit-bin/traceaudit"
  make -C "$GITHUB_ACTION_PATH" build BIN="$bin" >&2 || die "building traceaudit failed"
  echo "::endgroup::"
fi
"$bin" version >&2 || die "$bin does not run"

case "$command" in
  analyze)
    [ -n "${TA_TRACE:-}" ] || die "the trace input is required"
    files=("$TA_TRACE") ;;
  diff)
    [ -n "${TA_TRACE:-}" ] && [ -n "${TA_BEFORE:-}" ] || die "diff needs the before and trace inputs"
    files=("$TA_BEFORE" "$TA_TRACE") ;;
  *) die "command: want analyze or diff, got '$command'" ;;
esac
flags=(--format markdown --out "$out")
[ -z "${TA_FAIL_ON:-}" ] || flags+=(--fail-on "$TA_FAIL_ON")
extra=()
if [ -n "${TA_ARGS:-}" ]; then
  # Split on blanks, honouring quotes, without running anything (xargs).
  xargs -r -n1 printf '%s\n' <<< "$TA_ARGS" > "$tmp/args" 2>/dev/null || die "args: unbalanced quotes in: $TA_ARGS"
  mapfile -t extra < "$tmp/args"
fi

set +e
"$bin" "$command" "${flags[@]}" "${extra[@]}" "${files[@]}" > "$tmp/report.md" 2> "$tmp/stderr"
code=$?
set -e
cat "$tmp/stderr" >&2

if [ "${TA_SUMMARY:-true}" = true ] && [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
  if [ -s "$tmp/report.md" ]; then
    cat "$tmp/report.md" >> "$GITHUB_STEP_SUMMARY"
  else
    { echo "## traceaudit $command failed (exit $code)"; echo; echo '<pre>'; sed 's/&/\&amp;/g; s/</\&lt;/g; s/>/\&gt;/g' "$tmp/stderr"; echo '</pre>'; } >> "$GITHUB_STEP_SUMMARY"
  fi
  if [ "$code" = 1 ]; then
    { echo; echo "> [!CAUTION]"; echo "> $(tail -n 1 "$tmp/stderr" | sed 's/^traceaudit: //')"; } >> "$GITHUB_STEP_SUMMARY"
  fi
fi
if [ "$code" = 1 ]; then
  echo "::error title=traceaudit::$(tail -n 1 "$tmp/stderr")"
fi

written=false
[ -f "$out/.traceaudit-report" ] && written=true
# The Markdown, for a pull request comment (gh pr comment --body-file); kept
# out of the report folder, which holds only what traceaudit wrote.
markdown="${RUNNER_TEMP:-$tmp}/traceaudit-$command.md"
cp "$tmp/report.md" "$markdown"
{
  echo "exit-code=$code"
  echo "report-dir=$out"
  echo "report-written=$written"
  echo "markdown-file=$markdown"
} >> "$GITHUB_OUTPUT"
