/**
 * git reads a name by its rules for short names (gitrevisions): the full name `refs/notes/delegations` first, and
 * where no such ref exists, `refs/tags/refs/notes/delegations` and the others below, which anyone who can push a tag
 * can create. A reader of the ledger by name must not take one of those for it.
 */

/** The names git also reads a full ref name `ref` as, when no ref of that exact name exists. */
export function shadowsOf(ref: string): string[] {
  return [
    `refs/${ref}`,
    `refs/tags/${ref}`,
    `refs/heads/${ref}`,
    `refs/remotes/${ref}`,
    `refs/remotes/${ref}/HEAD`,
  ];
}
