/**
 * What a delegation is given by the command that runs it: the repository and its governance, the operator's
 * settings and signing key, and the ways back to the operator (approval, progress, interruption). A module of its own
 * so that the steps (verification-steps.ts) read them without importing the delegation (delegate.ts).
 */
import type { Governance } from '@delegate-git/core/governance';
import type { Repository } from '@delegate-git/core/repository';
import type { SigningKey } from '@delegate-git/core/signing-key';
import type { Interrupt } from './interruption.js';
import type { OperatorSettings } from './operator-config.js';
import type { WorkerProgress } from './worker-client.js';

export interface DelegationOptions {
  repo: Repository;
  governance: Governance;
  settings: OperatorSettings;
  signingKey: SigningKey;
  env?: NodeJS.ProcessEnv;
  /** Asked when approval is `ask`; absent means nobody can answer, which is a refusal. */
  approve?: (command: string) => Promise<boolean>;
  onProgress?: (progress: WorkerProgress) => void;
  /** Told as each verification run starts: minutes may pass between the worker's answer and the receipt. */
  onVerifying?: (run: number, of: number) => void;
  /**
   * The signals the command listens for (interruption.ts). An interrupt aborts the worker's request or the running
   * command, puts back the files written and ends the run with an InterruptedError; one that comes while the
   * verdict is recorded waits for the record to be complete.
   */
  interrupt?: Interrupt;
}
