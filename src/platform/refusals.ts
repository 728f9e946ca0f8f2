import { DomainError, type DomainErrorKind } from './decider';

/**
 * A refusal of a catalogue: called, it makes the DomainError to throw; read, it says what a client
 * meets (its kind, hence its status; its stable `code`; its message as documented, each value it
 * fills in shown as `<name>`). A capability keeps its refusals in one catalogue (domain/<capability>/
 * refusals.ts); the code throws them and the reference documents them from the same objects.
 */
export interface Refusal<Args extends string[] = []> {
  (...args: Args): DomainError;
  readonly kind: DomainErrorKind;
  readonly code: string;
  /** The message with each value it fills in as `<name>`. */
  readonly template: string;
  /** The field it refuses, where it is about one. */
  readonly param?: string;
}

interface Options {
  param?: string;
}

/** A refusal whose message is fixed. */
export function refusal(code: string, kind: DomainErrorKind, message: string, options?: Options): Refusal<[]>;
/** A refusal whose message fills in values: `names` name them, in order, for the documented template. */
export function refusal<Args extends string[]>(
  code: string,
  kind: DomainErrorKind,
  message: (...args: Args) => string,
  names: { [K in keyof Args]: string },
  options?: Options,
): Refusal<Args>;
export function refusal<Args extends string[]>(
  code: string,
  kind: DomainErrorKind,
  message: string | ((...args: Args) => string),
  namesOrOptions?: { [K in keyof Args]: string } | Options,
  options?: Options,
): Refusal<Args> {
  if (!/^[a-z][a-z0-9_]*$/.test(code)) throw new Error(`refusal code must be snake_case: ${code}`);
  const names = Array.isArray(namesOrOptions) ? (namesOrOptions as string[]) : [];
  const own = (Array.isArray(namesOrOptions) ? options : (namesOrOptions as Options | undefined)) ?? {};
  const text = typeof message === 'string' ? () => message : message;
  const make = (...args: Args) => new DomainError(kind, text(...args), code, own.param);
  const template = text(...(names.map((n) => `<${n}>`) as Args));
  return Object.assign(make, { kind, code, template, ...(own.param ? { param: own.param } : {}) });
}
