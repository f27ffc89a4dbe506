/**
 * The worker prompt: a fixed system prompt that teaches the two emission forms the emission parser accepts, and a
 * user prompt in the original plugin's layout (task, target files, declared context, verification command), with the
 * target files that exist shown as they are.
 * Pure: same unit and context in, same messages out.
 */
import type { InjectedContext } from './context.js';
import type { WorkerMessage } from './worker-client.js';

export interface PromptUnit {
  taskName: string;
  instruction: string;
  targetFiles?: string[];
  runVerification?: string;
}

/** The files the worker is shown: the unit's declared slices, and the target files that exist, whole. */
export interface ShownFiles {
  context: InjectedContext[];
  targets: InjectedContext[];
  /** The unit's target files (as it spells them) that exist: each is changed by a patch, never written whole. */
  existing?: readonly string[];
}

export interface RetryPrompt {
  /** Why this is a second attempt, e.g. the redacted failure summary of the previous run. */
  note: string;
  /** Context widened around the previous failure's locations. */
  context: InjectedContext[];
}

const FENCE = '```';

export const WORKER_SYSTEM_PROMPT = [
  'You are a coding worker. You write the code for one unit of work and nothing else.',
  'You cannot read the repository: the only file contents you know are the ones shown under "Declared Context" and',
  '"Current Content of the Target Files".',
  '',
  'Emit every file change as a fenced code block. There are exactly two forms.',
  '',
  '1. To CREATE a new file, put file="<path>" in the opening fence and the complete file in the body:',
  '',
  `${FENCE}ts file="src/new-module.ts"`,
  'export function add(a: number, b: number): number {',
  '  return a + b;',
  '}',
  FENCE,
  '',
  '   This form only creates files. It is refused for a file that already exists.',
  '',
  '2. To CHANGE an existing file, emit a patch block with one or more SEARCH/REPLACE pairs:',
  '',
  `${FENCE}patch file="src/existing.ts"`,
  '<<<<<<< SEARCH',
  'export function add(a: number, b: number): number {',
  '  return a - b;',
  '=======',
  'export function add(a: number, b: number): number {',
  '  return a + b;',
  '>>>>>>> REPLACE',
  FENCE,
  '',
  '   The SEARCH text must be copied exactly from the file as shown (same characters, spaces and indentation)',
  '   and must match exactly once: include enough lines to make it unique. There is no fuzzy matching: a',
  '   SEARCH that matches zero times or more than once is refused, and then no pair of that block is applied.',
  '   The REPLACE text is inserted literally. Several patch blocks for one file are applied in order, as one patch.',
  '',
  'Rules:',
  '- Paths are relative to the workspace root. When "Target Files" are listed, write only those files.',
  '- The closing fence of a block must stand alone on its own line.',
  '- Never send a unified diff (`---`, `+++`, `@@` lines): it is refused, not applied.',
  '- Do not modify files you were not shown; do not write tests unless the task asks for them.',
  '- When a verification command is given, your change must make it pass.',
  '- Keep any prose outside the code blocks short.',
].join('\n');

export function buildWorkerMessages(
  unit: PromptUnit,
  shown: ShownFiles,
  retry?: RetryPrompt,
): WorkerMessage[] {
  return [
    { role: 'system', content: WORKER_SYSTEM_PROMPT },
    { role: 'user', content: buildUserPrompt(unit, shown, retry) },
  ];
}

function buildUserPrompt(
  unit: PromptUnit,
  { context, targets, existing = [] }: ShownFiles,
  retry?: RetryPrompt,
): string {
  const sections: string[] = [`Task: ${unit.taskName.trim() || 'Subtask'}\n${unit.instruction.trim()}`];
  const named = (unit.targetFiles ?? []).map((file) => file.trim()).filter((file) => file !== '');
  // Said where the worker reads the list: a model that re-sent a file an earlier attempt wrote as a whole file was
  // refused every time (ux57 f02).
  const form = (file: string) => (existing.includes(file) ? ' (exists: change it with a patch block)' : '');
  if (named.length > 0)
    sections.push(`Target Files:\n${named.map((file) => `- ${file}${form(file)}`).join('\n')}`);
  if (context.length > 0) sections.push(`Declared Context:\n${renderContextList(context)}`);
  if (targets.length > 0)
    sections.push(
      `Current Content of the Target Files (change them with patch blocks):\n${renderContextList(targets)}`,
    );
  if (retry) {
    const parts = [`Previous Attempt:\n${retry.note.trim()}`];
    if (retry.context.length > 0) {
      parts.push(`Context Around the Previous Failure:\n${renderContextList(retry.context)}`);
    }
    sections.push(parts.join('\n\n'));
  }
  const command = unit.runVerification?.trim();
  if (command) sections.push(`Verification Command:\n${command}`);
  return `${sections.join('\n\n')}\n`;
}

/** One blank line between files; the final newline is dropped because sections are joined by a blank line. */
function renderContextList(items: InjectedContext[]): string {
  return items.map(renderContext).join('\n').replace(/\n$/, '');
}

function renderContext(item: InjectedContext): string {
  const range = item.lineRange ? ` (lines ${item.lineRange[0]}-${item.lineRange[1]})` : '';
  const body = item.text.endsWith('\n') || item.text === '' ? item.text : `${item.text}\n`;
  return `--- ${item.path}${range} ---\n${body}`;
}
