/** Small helpers for reads started early and awaited where they are needed. */

/** `load` run on the first call only; every call gets its one promise. */
export function once<T>(load: () => Promise<T>): () => Promise<T> {
  let loaded: Promise<T> | null = null;
  return () => {
    loaded ??= load();
    return loaded;
  };
}

/** A promise started before it is awaited: its rejection is handled where it is awaited, not reported as unhandled. */
export function early<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => {});
  return promise;
}
