#!/bin/sh
# The ledger action's verify step (action.yml), kept here so it can be run and tested outside GitHub Actions.
# Fetches the whole history when the clone is shallow and refs/notes/delegations (a plain checkout fetches neither), runs `delegate-git verify` against the remembered
# baseline when there is one, and reports the verified ledger tip as the step output `ledger-tip`.
# Inputs come from the environment, never from text pasted into the script (a revision or remote name is data):
#   DELEGATE_GIT_CLI       how to run delegate-git, split on spaces ("node tools/delegate-git.js"); unset or empty:
#                          the CLI built beside this script (../packages/cli), the source the action was pinned to
#   DELEGATE_GIT_REV       the revision to judge (default HEAD)
#   DELEGATE_GIT_REMOTE    the remote to fetch the ledger from (default origin)
#   DELEGATE_GIT_BASELINE  a file holding the last verified ledger tip, a full id (else: the whole history). Keep it
#                          outside the checkout, where no commit can put one.
#   DELEGATE_GIT_VERIFIED  a file holding the last commit verified on the protected branch, a full id (else: each
#                          change of the policy or keys is judged by its parent's rules, across the whole history)
#   DELEGATE_GIT_BASE_COMMIT  a pull request's base commit as the event names it (pull_request.base.sha): where no
#                          verified commit was remembered (runs for pull requests restore none), the commit the
#                          revision is judged from. GitHub names it, not the pull request, and it is on the line the
#                          pull request merges into, whose own runs judge it.
#   DELEGATE_GIT_PROTECTED "false" when the revision is another branch than the protected one (a push to a feature
#                          branch): it is judged from the commit it shares with the verified one. Otherwise (the
#                          protected branch, a pull request's merge into it) the revision must contain that commit.
#   DELEGATE_GIT_DEFAULT_BRANCH  the repository's default branch (github.event.repository.default_branch): its tip
#                          as the remote holds it is fetched, and the keys its trust root revokes count for nothing
#                          at the revision either (verify --revocations-of), as the server judges every branch. Unset:
#                          on another branch than the protected one, the commit verified last gives them.
#   GITHUB_OUTPUT          where the step output goes (as GitHub Actions sets it)
rev=${DELEGATE_GIT_REV:-HEAD}
remote=${DELEGATE_GIT_REMOTE:-origin}
cli=${DELEGATE_GIT_CLI:-}
# Never a name resolved from a registry at run time: whoever publishes it would decide the gate's answer.
built="$(cd "$(dirname "$0")/.." && pwd)/packages/cli/bin/delegate-git.js"
# Fails the step (exit 2) for a reason found before verify runs, said as an annotation and in the job summary, as
# verify says its own (on the job page the log alone is easy to miss under a failed step).
cannot_answer() {
  echo "::error::$1"
  if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
    printf '## delegate-git ledger: ❌ could not answer\n\n%s\n' "$1" >> "$GITHUB_STEP_SUMMARY"
  fi
  exit 2
}
if [ -z "$cli" ] && [ ! -f "$(dirname "$built")/../dist/delegate-git.cjs" ]; then
  cannot_answer "delegate-git is not built beside this script ($built): run \`npx --yes pnpm@10.34.8 install --frozen-lockfile\` in $(dirname "$0")/.. first (the action's build step does), or name a CLI in DELEGATE_GIT_CLI"
fi
# actions/checkout clones one commit deep by default; verify judges the history of the policy and keys and refuses
# a shallow clone, so the rest of the history is fetched first.
if [ "$(git rev-parse --is-shallow-repository)" = true ]; then
  git fetch --unshallow --no-tags -- "$remote" || echo "::warning::could not fetch the whole history from $remote"
fi
# The ledger judged is the remote's, never one a kept workspace (a self-hosted runner) holds from an earlier run: a
# remote without a ledger leaves none here either, and a remote that cannot be asked fails the step. Only the ref of
# that exact name is the ledger: ls-remote also lists refs whose names merely end in it, and a fetch would take
# refs/heads/refs/notes/delegations (or such a tag) where the ledger is gone.
# Replace refs are asked for in the same call: git honours them wherever it reads, and a mirror clone takes them.
listed=$(git ls-remote -- "$remote" refs/notes/delegations 'refs/replace/*')
if [ $? -ne 0 ]; then cannot_answer "could not ask $remote for its ledger (git ls-remote failed)"; fi
replaced=$(printf '%s\n' "$listed" | awk 'index($2, "refs/replace/") == 1 { print $2 }')
if [ -n "$replaced" ]; then
  first=$(printf '%s\n' "$replaced" | head -n 1)
  cannot_answer "$remote holds replace refs ($(printf '%s\n' "$replaced" | wc -l | tr -d ' '), the first $first): every mirror clone, and every fetch of all refs, checks out the objects they name in place of the ones the ledger judged, which the server hook refuses and verify cannot vouch for. Delete them (\`git push $remote :$first\`, each) and run the job again"
fi
ledger=$(printf '%s\n' "$listed" | awk '$2 == "refs/notes/delegations" { print $1 }')
if [ -n "$ledger" ]; then
  # --no-filter: in a partial clone (checkout's `filter:`, sparse checkouts) the notes would otherwise come without
  # their blobs, and verify would fetch them from the remote one at a time.
  if ! git fetch --no-tags --no-filter -- "$remote" "+refs/notes/delegations:refs/notes/delegations"; then
    cannot_answer "could not fetch refs/notes/delegations from $remote"
  fi
  if [ "$(git rev-parse -q --verify refs/notes/delegations)" != "$ledger" ]; then
    cannot_answer "refs/notes/delegations on $remote moved while it was fetched; run the job again"
  fi
else
  echo "::notice::no ledger on $remote yet"
  if git rev-parse -q --verify refs/notes/delegations >/dev/null; then
    git update-ref -d refs/notes/delegations || exit 2
  fi
fi
# Sets $value to the full object id a remember step wrote to file $1, or to nothing. Anything else (a revision such
# as HEAD, a short id) is not what remember.sh writes, and is ignored with a warning: the whole history is then
# judged, never less.
# Whether $1 is a full object id (40 or 64 lowercase hex digits).
full_id() {
  case $1 in
    '' | *[!0-9a-f]*) return 1 ;;
  esac
  [ ${#1} -eq 40 ] || [ ${#1} -eq 64 ]
}
remembered() {
  value=
  if [ -z "$1" ] || [ ! -s "$1" ]; then return 0; fi
  value=$(cat -- "$1")
  if full_id "$value"; then return 0; fi
  echo "::warning::ignoring $1: it holds no full object id, so the whole history is judged"
  value=
}
set --
remembered "${DELEGATE_GIT_BASELINE:-}"
if [ -n "$value" ]; then set -- --baseline "$value"; fi
remembered "${DELEGATE_GIT_VERIFIED:-}"
since=$value
if [ -z "$since" ] && [ -n "${DELEGATE_GIT_BASE_COMMIT:-}" ]; then
  # Judged from the base, a pull request that adds a reviewer and content only that reviewer approved fails, as it
  # fails once merged; judged over the whole history it passed (rt47 F01).
  if full_id "$DELEGATE_GIT_BASE_COMMIT"; then
    since=$DELEGATE_GIT_BASE_COMMIT
  else
    echo "::warning::ignoring DELEGATE_GIT_BASE_COMMIT: it is no full object id, so the whole history is judged"
  fi
fi
if [ -n "$since" ]; then
  if [ "${DELEGATE_GIT_PROTECTED:-true}" = false ]; then
    # Another branch was judged at its own pushes by its own rules (as pre-receive does); here, from where it left
    # the protected line. With nothing in common, the whole history is judged.
    # Without the default branch named, the commit verified last on it gives its revocations (below).
    if [ -z "${DELEGATE_GIT_DEFAULT_BRANCH:-}" ] && git rev-parse -q --verify "$since^{commit}" >/dev/null 2>&1; then
      set -- "$@" --revocations-of "$since"
    fi
    commit=$(git rev-parse -q --verify "$rev^{commit}" 2>/dev/null || true)
    since=$(if [ -n "$commit" ]; then git merge-base "$commit" "$since" 2>/dev/null; fi || true)
  fi
  if [ -n "$since" ]; then set -- "$@" --since "$since"; fi
fi
# The default branch's revocations bind every revision, as the server binds every branch: what a key revoked there
# approved before its revocation counts for nothing on a branch or pull request made before it either. Its tip is the
# remote's own (a pull request cannot move it); a branch that cannot be fetched fails the step rather than drop them.
if [ -n "${DELEGATE_GIT_DEFAULT_BRANCH:-}" ]; then
  if ! git fetch --no-tags -- "$remote" "+refs/heads/$DELEGATE_GIT_DEFAULT_BRANCH:refs/delegate-git/default-branch"; then
    cannot_answer "could not fetch the default branch $DELEGATE_GIT_DEFAULT_BRANCH from $remote, whose revocations bind this revision"
  fi
  set -- "$@" --revocations-of refs/delegate-git/default-branch
fi
if [ -n "$cli" ]; then
  # $cli is split on purpose: it is a command with its arguments.
  $cli verify --rev "$rev" "$@"
else
  node "$built" verify --rev "$rev" "$@"
fi
code=$?
tip=$(git rev-parse -q --verify refs/notes/delegations || true)
if [ -n "${GITHUB_OUTPUT:-}" ]; then echo "ledger-tip=$tip" >> "$GITHUB_OUTPUT"; fi
exit $code
