/** The first item of each key, in the order of `list`: a later item with a key seen before is dropped. */
export function firstOfEach<T>(list: readonly T[], keyOf: (item: T) => string): T[] {
  const first = new Map<string, T>();
  for (const item of list) if (!first.has(keyOf(item))) first.set(keyOf(item), item);
  return [...first.values()];
}
