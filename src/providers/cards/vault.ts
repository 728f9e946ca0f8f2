import { keyOwner, type Sealer, type Sealing } from '../../platform/sealing/sealer';

/**
 * Card secrets at rest (number, CVC, PIN): sealed by the platform's sealer under the card holder's
 * data key, so erasing the user shreds them too, and bound to what they are the secret of
 * (`<reference>:pan`), so a sealed CVC cannot pass for another card's or for a PIN. Secrets sealed
 * before data keys (`v1`, under a key derived from the pepper) still open.
 */
const KIND = 'card-vault';

/** The card holder's data key is destroyed: the secrets are gone with it. */
export class CardSecretsErasedError extends Error {
  constructor() {
    super('the card secrets are erased');
    this.name = 'CardSecretsErasedError';
  }
}

export class CardVault {
  private readonly sealing: Sealing;

  constructor(sealer: Sealer) {
    this.sealing = sealer.of(KIND);
  }

  seal(userId: string, plaintext: string, boundTo: string): Promise<string> {
    return this.sealing.seal(keyOwner.user(userId), plaintext, boundTo);
  }

  /** Rejects when the value was altered, sealed under another key or bound to something else; CardSecretsErasedError once erased. */
  async open(sealed: string, boundTo: string): Promise<string> {
    const opened = await this.sealing.open(sealed, boundTo);
    if (opened.erased) throw new CardSecretsErasedError();
    return opened.value;
  }
}
