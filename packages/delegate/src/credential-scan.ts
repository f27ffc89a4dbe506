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

// RFC 3986: scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ). The look-behind keeps a scheme from starting
// mid-word (`git+https` is one scheme), which also keeps the scan linear: two starts never share a run. `//` is
// required, so scp-style `git@host:org/repo`, `user@host:path` and e-mail addresses never match.
const URL_SCHEME_START = /(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*:\/\//g;
// What ends the text a URL can own: white space, the quotes code and JSON wrap a URL in, and the characters that
// open or close a template (`${VAR}`, `{{var}}`, `<password>`, `<%= pw %>`). A password holding one of these is
// taken for a template, as before; one holding anything else (`#`, `?`, `/`, `^`, `|`, `[`, `@`) is a password.
const URL_RUN = /[^\s"`<>{}]{0,1024}/y;
// Real user names and passwords are far shorter; the bounds keep a hostile line (many `://`, many `@`) linear.
const MAX_USERINFO = 512;
// RFC 3986 ends the authority at the first `/`, `?` or `#`.
const AUTHORITY_END = /[/?#]/g;
// Characters no user name in a URL holds, but a path, a query, a quoted list or a markdown link around a URL does:
// `https://host/x:y@z` has no user `host/x`, `[a](https://x.com)[b](mailto:u@h)` no user `x.com)[b](mailto`.
const NOT_IN_USER = /[/?#[\]()'",\\]/;
// `host:8080/path@v2`: a port and a path, not a password `8080/path`. (A password of digits, then `/`, `?` or `#`,
// is missed: the price of not flagging every URL with a port and an `@` in its path.)
const PORT_THEN_PATH = /^\d*[/?#]/;

/**
 * The password of the userinfo that `rest` (what follows `scheme://`, up to where the URL's text ends) starts with,
 * and the offset of the `@` that ends it; undefined when there is none.
 *
 * Passwords in `.env` files are often generated and rarely percent-encoded (`Tr0ub4dor#3x`, `a/b?c`), and SMTP or
 * AMQP user names are often raw e-mail addresses (`alerts@example.com`), so the RFC's userinfo characters and its
 * first-`@` rule would miss them. The userinfo ends instead at the first `@` that has a `:` before it and whose host
 * (up to the next `/`, `?` or `#`) holds no further `@`: `smtp://a@b.com:secret@smtp.host` splits at the second `@`,
 * while `https://u:password@registry/@scope/pkg` splits at the first (the later `@` is in the path). The user name
 * is what precedes the first `:`; the password, everything after it.
 */
export function urlUserinfoPassword(rest: string): { password: string; at: number } | undefined {
  const colon = rest.indexOf(':');
  if (colon === -1) return undefined;
  let end = -1; // the first `/`, `?` or `#` after the `@` tried; only moves forward, so the loop stays linear
  for (let at = rest.indexOf('@', colon + 1); at !== -1 && at <= MAX_USERINFO; ) {
    if (end <= at) {
      AUTHORITY_END.lastIndex = at + 1;
      end = AUTHORITY_END.exec(rest)?.index ?? rest.length;
    }
    const next = rest.indexOf('@', at + 1);
    // The host after this `@` runs into another `@`: this one is inside the userinfo (a password holding `@`).
    if (next !== -1 && next < end) {
      at = next;
      continue;
    }
    const password = rest.slice(colon + 1, at);
    if (password === '' || NOT_IN_USER.test(rest.slice(0, colon)) || PORT_THEN_PATH.test(password))
      return undefined;
    return { password, at };
  }
  return undefined;
}

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
// The other template slots a password may stand in, whole: `%DB_PASS%` (cmd), `%s` and `%(password)s` (printf,
// Python), `@DB_PASSWORD@` (autoconf, CMake), `[YOUR-PASSWORD]` (what hosted databases print in a sample URL).
// Their characters are outside RFC 3986 userinfo, so the scan skipped them before it took raw symbols in a password.
const TEMPLATE_SLOT =
  /^(?:%[A-Za-z_][A-Za-z0-9_]*%|%[sdvq]|%\([A-Za-z_][A-Za-z0-9_]*\)s|@[A-Za-z_][A-Za-z0-9_]*@|\[[A-Za-z][A-Za-z_-]*\])$/;
// What a log or a doc writes for a password it hides: `****`, `xxx`, `...`.
const MASK = /^(?:\*+|x+|X+|\.+)$/;

/**
 * A password that stands for one rather than being one: a placeholder word, a variable reference, a template slot,
 * a mask.
 */
export function isPlaceholderPassword(password: string): boolean {
  return (
    PLACEHOLDER_PASSWORDS.has(password.toLowerCase().replace(/[-_]/g, '')) ||
    VARIABLE_REFERENCE.test(password) ||
    TEMPLATE_SLOT.test(password) ||
    MASK.test(password)
  );
}

/**
 * `scheme://user:password@…` with a real-looking password. The range runs from the scheme to the end of the
 * password, so the preview shows the scheme (as basicauth's does), never a character of the password.
 */
function urlPasswordFindings(text: string): LocatedFinding[] {
  const findings: LocatedFinding[] = [];
  for (const match of text.matchAll(URL_SCHEME_START)) {
    const restStart = match.index + match[0].length;
    URL_RUN.lastIndex = restStart;
    const run = URL_RUN.exec(text)?.[0] ?? '';
    const found = urlUserinfoPassword(run);
    if (found === undefined || isPlaceholderPassword(found.password)) continue;
    findings.push({ rule: 'url-password', start: match.index, end: restStart + found.at });
  }
  return findings;
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
