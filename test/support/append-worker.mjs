// A separate process that appends to one repository's ledger through NotesLedger.append, for the concurrency test.
// Usage: node append-worker.mjs <bundled notes-ledger module> <repository> <worker name> <rounds> <shared blob> <own blob>
// Each round adds one line to the shared blob and one to this worker's own blob; prints the lines it added (JSON).
import { pathToFileURL } from 'node:url';

const [moduleFile, cwd, name, rounds, sharedBlob, ownBlob] = process.argv.slice(2);
if (!moduleFile || !cwd || !name || !rounds || !sharedBlob || !ownBlob) {
  console.error('usage: append-worker.mjs <module> <repository> <name> <rounds> <shared blob> <own blob>');
  process.exit(2);
}

const { NotesLedger } = await import(pathToFileURL(moduleFile).href);
const ledger = new NotesLedger({ cwd });
const added = [];
for (let round = 0; round < Number(rounds); round++) {
  const additions = [
    { blob: sharedBlob, lines: [`${name}-shared-${round}`] },
    { blob: ownBlob, lines: [`${name}-own-${round}`] },
  ];
  const result = await ledger.append(additions, { message: `${name} round ${round}` });
  if (result.added !== 2)
    throw new Error(`${name} round ${round}: expected 2 lines added, got ${result.added}`);
  added.push(...additions.map(({ blob, lines }) => ({ blob, line: lines[0] })));
}
process.stdout.write(JSON.stringify(added));
