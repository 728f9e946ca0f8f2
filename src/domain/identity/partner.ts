import { DomainError, type Decider, invariant } from '../../platform/decider';

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
        if (state.exists) throw new DomainError('conflict', 'Partner already exists');
        const name = command.name.trim();
        if (!name) throw new DomainError('invalid', 'name must not be empty');
        return [
          { type: 'PartnerCreated', data: { partnerId: command.partnerId, name, sandbox: command.sandbox } },
          { type: 'PartnerApiKeyCreated', data: { partnerId: command.partnerId, apiKey: command.apiKey, secretHash: command.secretHash } },
        ];
      }
      case 'CreateApiKey': {
        if (!state.exists) throw new DomainError('not_found', 'Partner not found');
        invariant(state.partnerId, 'an existing partner has an id');
        if (state.activeKeys.length >= MAX_ACTIVE_KEYS) {
          throw new DomainError('conflict', `A partner may hold at most ${MAX_ACTIVE_KEYS} active keys; revoke one first`);
        }
        return [{ type: 'PartnerApiKeyCreated', data: { partnerId: state.partnerId, apiKey: command.apiKey, secretHash: command.secretHash } }];
      }
      case 'RevokeApiKey': {
        if (!state.exists) throw new DomainError('not_found', 'Partner not found');
        invariant(state.partnerId, 'an existing partner has an id');
        if (!state.activeKeys.includes(command.apiKey)) throw new DomainError('not_found', 'API key not found');
        return [{ type: 'PartnerApiKeyRevoked', data: { partnerId: state.partnerId, apiKey: command.apiKey } }];
      }
    }
  },
};
