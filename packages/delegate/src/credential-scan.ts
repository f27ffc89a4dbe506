/**
 * Credential scanning (DLP) for text that is about to leave the machine or be recorded: declared context sent to
 * the worker, and failure fields kept in a receipt. Three detectors:
 *   - secretlint's recommended preset (provider-specific shapes), loaded lazily because it is heavy;
 *   - a PEM private-key header on its own (secretlint only flags a complete BEGIN…END block, but a header alone
 *     already says key material is nearby);
 *   - an entropy backstop for random-looking tokens no provider rule knows, with an explicit allowlist for the
 *     shapes that are high-volume and harmless (hex digests, git object ids, UUIDs).
 * A finding never carries the secret: only a masked preview.
 */

export interface CredentialFinding {
  /** Detector name: a secretlint rule (`github`, `aws`, `privatekey`, …), `private-key-header` or `entropy`. */
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

/** All findings with their character ranges, sorted by position; an entropy hit inside a rule hit is dropped. */
async function locateCredentials(text: string, opts: ScanOptions): Promise<LocatedFinding[]> {
  if (text.length === 0) return [];
  const ruleHits = [...(await secretlintFindings(text, opts.source)), ...privateKeyHeaderFindings(text)];
  const entropyHits = entropyFindings(text).filter(
    (hit) => !ruleHits.some((rule) => hit.start < rule.end && rule.start < hit.end),
  );
  const all = [...ruleHits, ...entropyHits].sort((a, b) => a.start - b.start || b.end - a.end);
  // secretlint's privatekey block and our header rule both fire on a full PEM block: keep the first.
  return all.filter(
    (hit, index) => !all.slice(0, index).some((other) => other.start <= hit.start && hit.end <= other.end),
  );
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

// --- entropy backstop -----------------------------------------------------------------------------------------

// `=` only as base64 padding at the end, so `NAME=value` splits into the name and the value.
const TOKEN_RUN = /[A-Za-z0-9+/_-]+={0,2}/g;
const HEX_DIGEST = /^(?:[0-9a-f]{40}|[0-9a-f]{64}|[0-9a-f]{128}|[0-9A-F]{40}|[0-9A-F]{64}|[0-9A-F]{128})$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

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

/** Hex digests (sha1/sha256/sha512; git object ids are sha1/sha256) and UUIDs are identifiers, not secrets. */
export function isAllowlistedToken(token: string): boolean {
  return HEX_DIGEST.test(token) || UUID.test(token);
}

function entropyFindings(text: string): LocatedFinding[] {
  const findings: LocatedFinding[] = [];
  for (const match of text.matchAll(TOKEN_RUN)) {
    const token = match[0];
    if (token.length < ENTROPY_MIN_LENGTH || isAllowlistedToken(token)) continue;
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
