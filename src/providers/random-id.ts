import { randomBytes } from 'node:crypto';

export function randomId(prefix: string): string {
  return `${prefix}${randomBytes(12).toString('hex')}`;
}
