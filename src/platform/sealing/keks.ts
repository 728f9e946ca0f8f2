import type { KeyEncryptionKey } from '../keys';
import { deriveKey, isKeyId } from './cipher';

/** How often a miss may read the keys again (a KEK added by `tally keys rotate` to a keys.json this node did not load). */
const RELOAD_EVERY_MS = 5_000;

export interface Kek {
  kid: string;
  key: Buffer;
}

/**
 * The key-encryption keys the service has: the last one wraps new data keys, any one unwraps what it
 * wrapped. A data key wrapped under a KEK this node does not know makes it read its keys again once
 * (`reload`: keys.json may have gained one since the start; TALLY_KEYS cannot, it needs a restart).
 */
export class Keks {
  private byId = new Map<string, Buffer>();
  private newest!: Kek;
  private reloadedAtMs = 0;

  constructor(
    keks: readonly KeyEncryptionKey[],
    private readonly reload?: () => readonly KeyEncryptionKey[],
  ) {
    this.use(keks);
  }

  /** The KEK new data keys (and re-wrapped ones) are wrapped with. */
  get current(): Kek {
    return this.newest;
  }

  /** Every KEK id this node has, oldest first. */
  get ids(): string[] {
    return [...this.byId.keys()];
  }

  find(kid: string): Buffer | undefined {
    const known = this.byId.get(kid);
    if (known || !this.reload || Date.now() - this.reloadedAtMs < RELOAD_EVERY_MS) return known;
    this.reloadedAtMs = Date.now();
    this.use(this.reload());
    return this.byId.get(kid);
  }

  private use(keks: readonly KeyEncryptionKey[]): void {
    const last = keks[keks.length - 1];
    if (!last) throw new Error('the service keys have no key-encryption key');
    const misnamed = keks.find((k) => !isKeyId(k.kid));
    if (misnamed) throw new Error(`key-encryption key id ${JSON.stringify(misnamed.kid)}: use letters, digits, - and _ (at most 64)`);
    this.byId = new Map(keks.map((k) => [k.kid, deriveKey(k.secret, 'key-encryption-key')]));
    this.newest = { kid: last.kid, key: this.byId.get(last.kid) as Buffer };
  }
}
