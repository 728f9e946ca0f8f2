import { type Decider, invariant } from '../../platform/decider';
import { IDENTITY_REFUSALS as R } from './refusals';

export type PartnerEvent =
  | { type: 'PartnerCreated'; data: { partnerId: string; name: string; sandbox: boolean } }
  | { type: 'PartnerApiKeyCreated'; data: { partnerId: string; apiKey: string; secretHash: string } }
  | { type: 'PartnerApiKeyRevoked'; data: { partnerId: string; apiKey: string } };

export type PartnerCommand =
  | { type: 'CreatePartner'; partnerId: string; name: string; sandbox: boolean; apiKey: string; secretHash: string }
  | { type: 'CreateApiKey'; apiKey: string; secretHash: string }
  | { type: 'RevokeApiKey'; apiKey: string };

export interface PartnerState {
  exists: boolean;
  partnerId: string | null;
  activeKeys: string[];
  revokedKeys: string[];
}

/** Enough keys for rotation without letting a partner pile up live credentials. */
export const MAX_ACTIVE_KEYS = 10;

export const partnerStream = (partnerId: string) => `partner-${partnerId}`;

export const partnerDecider: Decider<PartnerState, PartnerCommand, PartnerEvent> = {
  initialState: () => ({ exists: false, partnerId: null, activeKeys: [], revokedKeys: [] }),

  evolve(state, event) {
    switch (event.type) {
      case 'PartnerCreated':
        return { ...state, exists: true, partnerId: event.data.partnerId };
      case 'PartnerApiKeyCreated':
        return { ...state, activeKeys: [...state.activeKeys, event.data.apiKey] };
      case 'PartnerApiKeyRevoked':
        return {
          ...state,
          activeKeys: state.activeKeys.filter((k) => k !== event.data.apiKey),
          revokedKeys: [...state.revokedKeys, event.data.apiKey],
        };
    }
  },

  decide(command, state) {
    switch (command.type) {
      case 'CreatePartner': {
        if (state.exists) throw R.partnerExists();
        const name = command.name.trim();
        if (!name) throw R.partnerNameEmpty();
        return [
          { type: 'PartnerCreated', data: { partnerId: command.partnerId, name, sandbox: command.sandbox } },
          { type: 'PartnerApiKeyCreated', data: { partnerId: command.partnerId, apiKey: command.apiKey, secretHash: command.secretHash } },
        ];
      }
      case 'CreateApiKey': {
        if (!state.exists) throw R.partnerNotFound();
        invariant(state.partnerId, 'an existing partner has an id');
        if (state.activeKeys.length >= MAX_ACTIVE_KEYS) {
          throw R.apiKeyLimitReached(String(MAX_ACTIVE_KEYS));
        }
        return [{ type: 'PartnerApiKeyCreated', data: { partnerId: state.partnerId, apiKey: command.apiKey, secretHash: command.secretHash } }];
      }
      case 'RevokeApiKey': {
        if (!state.exists) throw R.partnerNotFound();
        invariant(state.partnerId, 'an existing partner has an id');
        if (!state.activeKeys.includes(command.apiKey)) throw R.apiKeyNotFound();
        return [{ type: 'PartnerApiKeyRevoked', data: { partnerId: state.partnerId, apiKey: command.apiKey } }];
      }
    }
  },
};
