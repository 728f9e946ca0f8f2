const WIDTH = 30;

/**
 * A text progress bar on stderr. On a terminal it redraws one line; elsewhere (a log file, CI) it
 * prints one line per update instead, since carriage returns would garble the log.
 */
export function progressBar(write: (text: string) => void, options: { total?: number; unit: string; tty: boolean }) {
  const render = (done: number) => {
    const count = `${done.toLocaleString('en-US')}${options.total !== undefined ? `/${Math.max(options.total, done).toLocaleString('en-US')}` : ''} ${options.unit}`;
    if (!options.total) return count;
    const filled = Math.min(WIDTH, Math.round((done / options.total) * WIDTH));
    return `[${'#'.repeat(filled)}${'-'.repeat(WIDTH - filled)}] ${count}`;
  };
  let printed: number | undefined;
  return {
    update(done: number) {
      printed = done;
      write(options.tty ? `\r${render(done)}` : `${render(done)}\n`);
    },
    /** Ends the bar's line; prints the final count unless the last update already did. */
    finish(done: number) {
      if (options.tty) write(`\r${render(done)}\n`);
      else if (printed !== done) write(`${render(done)}\n`);
    },
  };
}
