#!/bin/sh
# The ledger action's verify step (action.yml), kept here so it can be run and tested outside GitHub Actions.
# Fetches the whole history when the clone is shallow and refs/notes/delegations (a plain checkout fetches neither), runs `delegate-git verify` against the remembered
# baseline when there is one, and reports the verified ledger tip as the step output `ledger-tip`.
# Inputs come from the environment, never from text pasted into the script (a revision or remote name is data):
#   DELEGATE_GIT_CLI       how to run delegate-git, split on spaces ("npx --yes delegate-git")
#   DELEGATE_GIT_REV       the revision to judge (default HEAD)
#   DELEGATE_GIT_REMOTE    the remote to fetch the ledger from (default origin)
#   DELEGATE_GIT_BASELINE  a file holding the last verified ledger tip (absent or empty: the whole history)
#   GITHUB_OUTPUT          where the step output goes (as GitHub Actions sets it)
rev=${DELEGATE_GIT_REV:-HEAD}
remote=${DELEGATE_GIT_REMOTE:-origin}
cli=${DELEGATE_GIT_CLI:-npx --yes delegate-git}
# actions/checkout clones one commit deep by default; verify judges the history of the policy and keys and refuses
# a shallow clone, so the rest of the history is fetched first.
if [ "$(git rev-parse --is-shallow-repository)" = true ]; then
  git fetch --unshallow --no-tags -- "$remote" || echo "::warning::could not fetch the whole history from $remote"
fi
if ! git fetch --no-tags -- "$remote" "+refs/notes/delegations:refs/notes/delegations"; then
  echo "::notice::no ledger on $remote yet"
fi
if [ -n "${DELEGATE_GIT_BASELINE:-}" ] && [ -s "$DELEGATE_GIT_BASELINE" ]; then
  set -- --baseline "$(cat "$DELEGATE_GIT_BASELINE")"
else
  set --
fi
# $cli is split on purpose: it is a command with its arguments.
$cli verify --rev "$rev" "$@"
code=$?
tip=$(git rev-parse -q --verify refs/notes/delegations || true)
if [ -n "${GITHUB_OUTPUT:-}" ]; then echo "ledger-tip=$tip" >> "$GITHUB_OUTPUT"; fi
exit $code
