#!/bin/sh
# The ledger action's remember step (action.yml), kept here so it can be run and tested outside GitHub Actions.
# After a passing run on the default branch, keeps the verified ledger tip and commit for the next run's --baseline
# and --since, but only while the default branch on the remote still points at the verified commit: runs finish in
# any order, and a run for an older push that finished last would put an older commit back, so that every later run
# judged from its (perhaps looser) rules. The run for the newer push remembers that one.
# Inputs come from the environment:
#   DELEGATE_GIT_REV      the revision verified (default HEAD)
#   DELEGATE_GIT_REMOTE   the remote holding the default branch (default origin)
#   DELEGATE_GIT_BRANCH   the default branch's name
#   DELEGATE_GIT_KEEP     the directory the cache saves, outside the checkout (verify.sh reads it back)
#   GITHUB_OUTPUT         where the step output `save` (true or false) goes
rev=${DELEGATE_GIT_REV:-HEAD}
remote=${DELEGATE_GIT_REMOTE:-origin}
keep=${DELEGATE_GIT_KEEP:?the directory to keep the verified tip and commit in, outside the checkout}
save=false
branch="refs/heads/${DELEGATE_GIT_BRANCH:?the default branch's name}"
commit=$(git rev-parse -q --verify "$rev^{commit}" || true)
if ! listed=$(git ls-remote -- "$remote" "$branch"); then
  echo "::warning::could not read $branch on $remote; this run's verified commit is not remembered"
else
  # ls-remote matches the pattern's tail: keep the exact ref only.
  tip=$(printf '%s\n' "$listed" | awk -v ref="$branch" '$2 == ref { print $1 }')
  if [ -z "$commit" ] || [ "$tip" != "$commit" ]; then
    echo "::notice::not remembering ${commit:-$rev}: $branch on $remote is at ${tip:-nothing} now, and the run for that push remembers it"
  else
    mkdir -p "$keep"
    git rev-parse -q --verify refs/notes/delegations > "$keep/tip" || true
    echo "$commit" > "$keep/commit"
    save=true
  fi
fi
if [ -n "${GITHUB_OUTPUT:-}" ]; then echo "save=$save" >> "$GITHUB_OUTPUT"; fi
