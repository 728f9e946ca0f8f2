/** Polls `check` every 10 ms until it holds; fails after `withinMs`, naming `what`. Returns how long it took. */
export async function within(withinMs: number, what: string, check: () => boolean | Promise<boolean>): Promise<number> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > withinMs) throw new Error(`${what}: not within ${withinMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return Date.now() - started;
}
