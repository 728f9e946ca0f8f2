import { deriveKey, isLegacySealed, openLegacy, openWith, parseSealed, sealWith } from './cipher';
import type { DataKeys } from './data-keys';

/** What opening gives: the value, or the news that its data key was destroyed (the owner was erased). */
export type Opened = { erased: false; value: string } | { erased: true };

/** Whose data key seals a value: erasing a user destroys theirs; a partner's seals its webhook secrets. */
export const keyOwner = {
  user: (userId: string) => `user:${userId}`,
  partner: (partnerId: string) => `partner:${partnerId}`,
};

/**
 * The one way the service seals a value at rest (card secrets, webhook signing secrets, personal
 * data): under its owner's data key, named in the sealed form (see cipher.ts). A kind of value
 * (`kind`) is bound into the additional data, so a value sealed as one kind never opens as another.
 */
export class Sealer {
  constructor(
    readonly keys: DataKeys,
    /** The secret `v1` values were sealed under: opened for ever, never sealed with. */
    private readonly pepper: string,
  ) {}

  /** The sealing of one kind of value; `v1` values of it open under the key the kind had before key ids (`<kind>/v1`). */
  of(kind: string): Sealing {
    return new Sealing(this.keys, kind, deriveKey(this.pepper, `${kind}/v1`));
  }
}

export class Sealing {
  constructor(
    private readonly keys: DataKeys,
    readonly kind: string,
    private readonly legacyKey: Buffer,
  ) {}

  async seal(owner: string, plaintext: string, boundTo: string): Promise<string> {
    const key = await this.keys.forOwner(owner);
    return sealWith(key.key, key.id, Buffer.from(plaintext, 'utf8'), this.binding(boundTo));
  }

  /** Throws when the value was altered, is not one, or is bound to something else; `{erased}` once its key is destroyed. */
  async open(sealed: string, boundTo: string): Promise<Opened> {
    if (isLegacySealed(sealed)) return { erased: false, value: openLegacy(this.legacyKey, sealed, boundTo) };
    const parts = parseSealed(sealed);
    if (!parts) throw new Error(`not a sealed ${this.kind} value`);
    const key = await this.keys.byId(parts.keyId);
    if (key === 'erased') return { erased: true };
    return { erased: false, value: openWith(key.key, parts, this.binding(boundTo)).toString('utf8') };
  }

  private binding(boundTo: string): string {
    return `${this.kind}:${boundTo}`;
  }
}
