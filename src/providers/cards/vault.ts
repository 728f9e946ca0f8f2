import { CARD_REFUSALS } from '../../domain/cards';
import { ErasedKeyError } from '../../platform/sealing/data-keys';
import { keyOwner, type Sealer, type Sealing } from '../../platform/sealing/sealer';

/**
 * Card secrets at rest (number, CVC, PIN): sealed by the platform's sealer under the card holder's
 * data key, so erasing the user shreds them too, and bound to what they are the secret of
 * (`<reference>:pan`), so a sealed CVC cannot pass for another card's or for a PIN. Secrets sealed
 * before data keys (`v1`, under a key derived from the pepper) still open.
 */
const KIND = 'card-vault';

export class CardVault {
  private readonly sealing: Sealing;

  constructor(sealer: Sealer) {
    this.sealing = sealer.of(KIND);
  }

  /** 404 `Card not found` when the card holder's data key is destroyed (erased): their card went with them. */
  async seal(userId: string, plaintext: string, boundTo: string): Promise<string> {
    try {
      return await this.sealing.seal(keyOwner.user(userId), plaintext, boundTo);
    } catch (error) {
      if (error instanceof ErasedKeyError) throw CARD_REFUSALS.cardNotFound();
      throw error;
    }
  }

  /** Rejects when the value was altered, sealed under another key or bound to something else; 404 `Card not found` once erased. */
  async open(sealed: string, boundTo: string): Promise<string> {
    const opened = await this.sealing.open(sealed, boundTo);
    if (opened.erased) throw CARD_REFUSALS.cardNotFound();
    return opened.value;
  }
}
