/**
 * Ends a test run with one plain line, `N passed, N failed, N skipped`, that any CI reads the same way whatever the
 * runner (vitest's own summary is styled for people). A test file that fails outside its tests (it cannot be loaded,
 * a hook throws) and an error no test caught count as failures too: the line must never say 0 failed for a failed run.
 */
import type { SerializedError } from 'vitest';
import type { Reporter, TestModule } from 'vitest/node';

export default class SummaryReporter implements Reporter {
  onTestRunEnd(
    testModules: ReadonlyArray<TestModule>,
    unhandledErrors: ReadonlyArray<SerializedError>,
  ): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    let outside = unhandledErrors.length;
    for (const module of testModules) {
      if (module.errors().length > 0) outside++;
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') passed++;
        else if (state === 'failed') failed++;
        else skipped++;
      }
    }
    const besides =
      outside > 0
        ? ` (${outside} of them outside any test: a file that did not load, a hook, an uncaught error)`
        : '';
    process.stdout.write(`\n${passed} passed, ${failed + outside} failed${besides}, ${skipped} skipped\n`);
  }
}
