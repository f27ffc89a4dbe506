/**
 * Well-formed UTF-16: no lone surrogate. A lone surrogate has no UTF-8 form, so a record holding one cannot be
 * signed (canonical-json.ts refuses it) and a file name holding one is written as U+FFFD, not as it was spelled.
 */

// ES2024 `String.prototype.isWellFormed` and `toWellFormed` (Node >= 20) are missing from the ES2023 lib typings used
// here.
type Es2024String = { isWellFormed(): boolean; toWellFormed(): string };

export function isWellFormed(text: string): boolean {
  return (text as unknown as Es2024String).isWellFormed();
}

/** `text` with each lone surrogate replaced by U+FFFD. */
export function toWellFormed(text: string): string {
  return (text as unknown as Es2024String).toWellFormed();
}
