/**
 * Credential scanning (DLP) for text that is about to leave the machine or be recorded: declared context sent to
 * the worker, and failure fields kept in a receipt. Four detectors:
 *   - secretlint's recommended preset (provider-specific shapes), loaded lazily because it is heavy;
 *   - a PEM private-key header on its own (secretlint only flags a complete BEGIN…END block, but a header alone
 *     already says key material is nearby);
 *   - a password in a URL's userinfo, any scheme (secretlint's basicauth only knows http(s)/ftp and passwords of
 *     `[-a-zA-Z0-9_]`, so database and broker URLs, and passwords with symbols, passed);
 *   - an entropy backstop for random-looking tokens no provider rule knows, with an explicit allowlist for the
 *     shapes that are high-volume and harmless (hex digests, git object ids, UUIDs, integrity digests of lockfiles,
 *     HTML and go.sum).
 * A finding never carries the secret: only a masked preview.
 */

export interface CredentialFinding {
  /**
   * Detector name: a secretlint rule (`github`, `aws`, `privatekey`, `basicauth`, …), `private-key-header`,
   * `url-password` or `entropy`.
   */
  rule: string;
  /** 1-based line of the finding's first character. */
  line: number;
  /** 1-based column of the finding's first character. */
  column: number;
  /** The first 4 characters and an ellipsis, never the secret itself. */
  preview: string;
}

export interface ScanOptions {
  /** Name of the scanned text (a path), passed to secretlint; some rules look at the file name. */
  source?: string;
}

const ENTROPY_MIN_LENGTH = 20;
const ENTROPY_MIN_BITS_PER_CHAR = 4.5;

interface LocatedFinding {
  rule: string;
  start: number;
  end: number;
}

export async function scanForCredentials(text: string, opts: ScanOptions = {}): Promise<CredentialFinding[]> {
  const located = await locateCredentials(text, opts);
  const lineStarts = lineStartOffsets(text);
  return located.map((finding) => {
    const { line, column } = positionOf(lineStarts, finding.start);
    return {
      rule: finding.rule,
      line,
      column,
      preview: maskedPreview(text.slice(finding.start, finding.end)),
    };
  });
}

/**
 * All findings with their character ranges, sorted by position. A URL password that a secretlint rule already
 * reports (basicauth on an http URL, a provider token used as the password) is dropped, so one secret is one
 * finding; so is an entropy hit inside any rule hit.
 */
async function locateCredentials(text: string, opts: ScanOptions): Promise<LocatedFinding[]> {
  if (text.length === 0) return [];
  const secretlintHits = await secretlintFindings(text, opts.source);
  const ruleHits = [
    ...secretlintHits,
    ...privateKeyHeaderFindings(text),
    ...withoutOverlaps(urlPasswordFindings(text), secretlintHits),
  ];
  const entropyHits = withoutOverlaps(entropyFindings(text), ruleHits);
  const all = [...ruleHits, ...entropyHits].sort((a, b) => a.start - b.start || b.end - a.end);
  // secretlint's privatekey block and our header rule both fire on a full PEM block: keep the first.
  return all.filter(
    (hit, index) => !all.slice(0, index).some((other) => other.start <= hit.start && hit.end <= other.end),
  );
}

function withoutOverlaps(hits: LocatedFinding[], others: LocatedFinding[]): LocatedFinding[] {
  return hits.filter((hit) => !others.some((other) => hit.start < other.end && other.start < hit.end));
}

// --- secretlint -------------------------------------------------------------------------------------------

type LintSource = typeof import('@secretlint/core').lintSource;
type LintConfig = Parameters<LintSource>[0]['options']['config'];

let secretlint: Promise<{ lintSource: LintSource; config: LintConfig }> | undefined;

const FILTER_COMMENTS_RULE = '@secretlint/secretlint-rule-filter-comments';
const AWS_RULE = '@secretlint/secretlint-rule-aws';

/**
 * The recommended preset's rules, registered one by one: secretlint 10.2.2 ignores `disabled` for a rule inside a
 * preset, and its comment filter must not run — `secretlint-disable` comments would let the scanned text (a
 * context file, a test name chosen by the code under test) switch the scanner off.
 */
function loadSecretlint(): Promise<{ lintSource: LintSource; config: LintConfig }> {
  secretlint ??= Promise.all([
    import('@secretlint/core'),
    import('@secretlint/secretlint-rule-preset-recommend'),
  ]).then(([core, preset]) => ({
    lintSource: core.lintSource,
    config: {
      rules: preset.creator.rules
        .filter((rule) => rule.meta.id !== FILTER_COMMENTS_RULE)
        .map((rule) => ({
          id: rule.meta.id,
          rule,
          // Off by default upstream (noisy in docs); a bare access key id in context or a receipt is a leak.
          options: rule.meta.id === AWS_RULE ? { enableIDScanRule: true } : {},
        })),
    } as LintConfig,
  }));
  return secretlint;
}

const SECRETLINT_RULE_PREFIX = '@secretlint/secretlint-rule-';

async function secretlintFindings(text: string, source = 'scanned-text.txt'): Promise<LocatedFinding[]> {
  const { lintSource, config } = await loadSecretlint();
  const result = await lintSource({
    source: { content: text, filePath: source, contentType: 'text' },
    options: { config, noPhysicFilePath: true, maskSecrets: true },
  });
  return result.messages.map((message) => ({
    rule: message.ruleId.startsWith(SECRETLINT_RULE_PREFIX)
      ? message.ruleId.slice(SECRETLINT_RULE_PREFIX.length)
      : message.ruleId,
    start: message.range[0],
    end: message.range[1],
  }));
}

// --- PEM private key header ---------------------------------------------------------------------------------

const PRIVATE_KEY_HEADER = /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----/g;

function privateKeyHeaderFindings(text: string): LocatedFinding[] {
  return [...text.matchAll(PRIVATE_KEY_HEADER)].map((match) => ({
    rule: 'private-key-header',
    start: match.index,
    end: match.index + match[0].length,
  }));
}

// --- password in a URL --------------------------------------------------------------------------------------

// RFC 3986: scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ); userinfo = *( unreserved / pct-encoded /
// sub-delims / ":" ), the password being what follows the first ':'. The look-behind keeps a scheme from starting
// mid-word (`git+https` is one scheme); `//` is required, so scp-style `git@host:org/repo` and e-mail addresses
// never match. Template syntaxes (`${VAR}`, `{{var}}`, `<password>`, `%VAR%`) hold characters outside userinfo, so
// a URL carrying one never matches either. Bounded repeats bound the backtracking on a hostile line.
const URL_USERINFO =
  /(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*:\/\/(?:[A-Za-z0-9\-._~!$&'()*+,;=]|%[0-9A-Fa-f]{2}){0,256}:(?<password>(?:[A-Za-z0-9\-._~!$&'()*+,;=:]|%[0-9A-Fa-f]{2}){1,256})@/g;

// Words documentation puts where a password goes, compared lowercased without `_`/`-` (`YOUR_PASSWORD`,
// `change-me`). Deliberately short: a real password may be short or weak (`pw`, `hunter2`, `postgres`), and a miss
// sends a credential out while a false hit only refuses a unit until its context is fixed.
const PLACEHOLDER_PASSWORDS = new Set([
  'password',
  'passwd',
  'pass',
  'secret',
  'changeme',
  'redacted',
  'yourpassword',
  'mypassword',
]);
// `$DB_PASSWORD` (shell, .env interpolation) and `$(DB_PASSWORD)` (make): a reference, not a value. Upper case only,
// since a real password may start with `$` (`$Summer2024`).
const VARIABLE_REFERENCE = /^\$(?:[A-Z_][A-Z0-9_]*|\([A-Za-z_][A-Za-z0-9_]*\))$/;
// What a log or a doc writes for a password it hides: `****`, `xxx`, `...`.
const MASK = /^(?:\*+|x+|X+|\.+)$/;

/** A password that stands for one rather than being one: a placeholder word, a variable reference, a mask. */
export function isPlaceholderPassword(password: string): boolean {
  return (
    PLACEHOLDER_PASSWORDS.has(password.toLowerCase().replace(/[-_]/g, '')) ||
    VARIABLE_REFERENCE.test(password) ||
    MASK.test(password)
  );
}

/**
 * `scheme://user:password@…` with a real-looking password. The range runs from the scheme to the end of the
 * password, so the preview shows the scheme (as basicauth's does), never a character of the password.
 */
function urlPasswordFindings(text: string): LocatedFinding[] {
  return [...text.matchAll(URL_USERINFO)]
    .filter((match) => !isPlaceholderPassword(match.groups?.password ?? ''))
    .map((match) => ({ rule: 'url-password', start: match.index, end: match.index + match[0].length - 1 }));
}

// --- entropy backstop -----------------------------------------------------------------------------------------

// `=` only as base64 padding at the end, so `NAME=value` splits into the name and the value.
const TOKEN_RUN = /[A-Za-z0-9+/_-]+={0,2}/g;
const HEX_DIGEST = /^(?:[0-9a-f]{40}|[0-9a-f]{64}|[0-9a-f]{128}|[0-9A-F]{40}|[0-9A-F]{64}|[0-9A-F]{128})$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
// Subresource-Integrity form (npm/pnpm/yarn lockfiles, HTML `integrity=`): the algorithm, then the standard base64
// of exactly its digest's length, padding and the zero bits before it included (sha1 28 characters, sha256 44,
// sha384 64, sha512 88). A token that merely starts with `sha512-` but has another length is still scanned.
const SRI_DIGEST =
  /^(?:sha1-[A-Za-z0-9+/]{26}[AEIMQUYcgkosw048]=|sha256-[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=|sha384-[A-Za-z0-9+/]{64}|sha512-[A-Za-z0-9+/]{85}[AQgw]==)$/;
// go.sum's `h1:` hash is a sha256 in standard base64; the `h1:` is outside the token, so the caller passes what
// precedes it.
const BASE64_SHA256 = /^[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=$/;
const GO_SUM_HASH_PREFIX = /(?:^|[^A-Za-z0-9+/_-])h1:$/;
const PREFIX_LOOKBACK = 4;

/** Shannon entropy of the token over its own character frequencies, in bits per character. */
export function shannonEntropy(token: string): number {
  if (token.length === 0) return 0;
  const counts = new Map<string, number>();
  for (const char of token) counts.set(char, (counts.get(char) ?? 0) + 1);
  let bits = 0;
  for (const count of counts.values()) {
    const p = count / token.length;
    bits -= p * Math.log2(p);
  }
  return bits;
}

/**
 * Hex digests (sha1/sha256/sha512; git object ids are sha1/sha256), UUIDs and integrity digests are identifiers,
 * not secrets. `precededBy` is the text just before the token (a few characters are enough).
 */
export function isAllowlistedToken(token: string, precededBy = ''): boolean {
  return (
    HEX_DIGEST.test(token) ||
    UUID.test(token) ||
    SRI_DIGEST.test(token) ||
    (BASE64_SHA256.test(token) && GO_SUM_HASH_PREFIX.test(precededBy))
  );
}

function entropyFindings(text: string): LocatedFinding[] {
  const findings: LocatedFinding[] = [];
  for (const match of text.matchAll(TOKEN_RUN)) {
    const token = match[0];
    const precededBy = text.slice(Math.max(0, match.index - PREFIX_LOOKBACK), match.index);
    if (token.length < ENTROPY_MIN_LENGTH || isAllowlistedToken(token, precededBy)) continue;
    if (shannonEntropy(token) >= ENTROPY_MIN_BITS_PER_CHAR) {
      findings.push({ rule: 'entropy', start: match.index, end: match.index + token.length });
    }
  }
  return findings;
}

// --- positions ----------------------------------------------------------------------------------------------

function lineStartOffsets(text: string): number[] {
  const starts = [0];
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) starts.push(i + 1);
  return starts;
}

function positionOf(lineStarts: number[], offset: number): { line: number; column: number } {
  let low = 0;
  let high = lineStarts.length - 1;
  while (low < high) {
    const mid = (low + high + 1) >> 1;
    if ((lineStarts[mid] ?? 0) <= offset) low = mid;
    else high = mid - 1;
  }
  return { line: low + 1, column: offset - (lineStarts[low] ?? 0) + 1 };
}

function maskedPreview(secret: string): string {
  return `${secret.slice(0, 4)}…`;
}
