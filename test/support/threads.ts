import { readFileSync } from 'node:fs';

/** The calling thread's nice value (Linux): the 19th field of its stat line, the 17th after the command's closing parenthesis. */
export function threadNice(): number {
  const stat = readFileSync('/proc/thread-self/stat', 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
}
