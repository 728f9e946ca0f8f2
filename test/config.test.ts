import { expect } from 'chai';
import { loadConfig } from '../src/config';

describe('configuration', () => {
  const persona = { IDENTITY_PROVIDER: 'persona', PERSONA_API_KEY: 'k', PERSONA_TEMPLATE_ID: 't', PERSONA_WEBHOOK_SECRET: 's' };
  const rain = {
    CARD_ISSUER: 'rain',
    RAIN_API_KEY: 'k',
    RAIN_PUBLIC_KEY: '-----BEGIN PUBLIC KEY-----\\nAAAA\\n-----END PUBLIC KEY-----',
    RAIN_WEBHOOK_SECRET: 's',
  };
  const production = { NODE_ENV: 'production', SMTP_URL: 'smtp://mail.example.com:587', ...persona, ...rain };

  it('refuses to start outside sandbox mode without a real email provider, naming SMTP_URL', () => {
    for (const env of [
      { ...production, SMTP_URL: undefined },
      { ...production, SMTP_URL: '' },
      { ...production, NODE_ENV: undefined, SANDBOX: 'off', SMTP_URL: undefined },
    ]) {
      expect(() => loadConfig(env)).to.throw(/SMTP_URL/);
    }
  });

  it('refuses to start outside sandbox mode with the sandbox identity provider, naming what to set', () => {
    const { IDENTITY_PROVIDER: _, ...withoutProvider } = production;
    expect(() => loadConfig(withoutProvider)).to.throw(/IDENTITY_PROVIDER/);
    for (const name of ['PERSONA_API_KEY', 'PERSONA_TEMPLATE_ID', 'PERSONA_WEBHOOK_SECRET'] as const) {
      expect(() => loadConfig({ ...production, [name]: '' })).to.throw(new RegExp(name));
    }
  });

  it('names every missing setting at once', () => {
    expect(() => loadConfig({ NODE_ENV: 'production' })).to.throw(/SMTP_URL[\s\S]*IDENTITY_PROVIDER[\s\S]*CARD_ISSUER/);
  });

  it('starts outside sandbox mode with them set, and in sandbox mode without them', () => {
    expect(loadConfig(production)).to.include({ sandbox: false, smtpUrl: 'smtp://mail.example.com:587', identityProvider: 'persona' });
    expect(loadConfig({})).to.include({ sandbox: true, smtpUrl: undefined, identityProvider: 'sandbox' });
    expect(loadConfig({ NODE_ENV: 'production', SANDBOX: 'on' }).sandbox).to.equal(true);
  });
});
