import { expect } from 'chai';
import { checkEndpointUrl, webhookEndpointDecider } from '../../src/domain/notifications/endpoint';
import { NOTIFICATION_REFUSALS } from '../../src/domain/notifications';
import { DomainError } from '../../src/platform/decider';
import { deciderSpec } from './spec';

/** What checkEndpointUrl refuses `url` with: [kind, code, message, param], or null when it accepts it. */
function refusedWith(url: string, sandbox: boolean): [string, string, string, string | undefined] | null {
  try {
    checkEndpointUrl(url, sandbox);
    return null;
  } catch (error) {
    expect(error).to.be.instanceOf(DomainError);
    const e = error as DomainError;
    return [e.kind, e.code, e.message, e.param];
  }
}

describe('a webhook endpoint, decided', () => {
  describe('the url rules a partner is told without a lookup', () => {
    for (const [url, sandbox, code, message] of [
      [`https://hooks.example.com/${'a'.repeat(2_048)}`, false, 'webhook_url_too_long', 'url must be at most 2048 characters'],
      ['/hooks', true, 'webhook_url_not_absolute', 'url must be an absolute URL'],
      ['http://hooks.example.com/', false, 'webhook_url_not_https', 'url must use https'],
      ['ftp://hooks.example.com/', true, 'webhook_url_not_http_or_https', 'url must use https or http'],
      ['https://user:secret@hooks.example.com/', false, 'webhook_url_has_credentials', 'url must not contain credentials'],
      ['https://hooks.example.com/#part', false, 'webhook_url_has_fragment', 'url must not contain a fragment'],
      ['https://hooks.example.com:8443/', false, 'webhook_url_port_not_allowed', 'url must use the https port (443)'],
    ] as const)
      it(`refuses ${url.slice(0, 50)}${sandbox ? ' (sandbox)' : ''} with ${code}`, () => {
        expect(refusedWith(url, sandbox)).to.deep.equal(['invalid', code, message, 'url']);
      });

    it('accepts https on its own port, and http or another port in sandbox mode', () => {
      expect(refusedWith('https://hooks.example.com:443/tally', false)).to.equal(null);
      expect(refusedWith('http://127.0.0.1:9/hooks', true)).to.equal(null);
    });
  });

  it('refuses a rotation before any endpoint is configured (webhook_endpoint_not_configured)', () => {
    deciderSpec(webhookEndpointDecider)
      .given([])
      .when({ type: 'RotateSecret', newSecret: { secretId: 's', sealed: 'x' }, at: '2026-01-01T00:00:00.000Z' })
      .thenThrows('not_found', 'Webhook endpoint not configured');
    let thrown: unknown;
    try {
      webhookEndpointDecider.decide(
        { type: 'RotateSecret', newSecret: { secretId: 's', sealed: 'x' }, at: '2026-01-01T00:00:00.000Z' },
        webhookEndpointDecider.initialState(),
      );
    } catch (error) {
      thrown = error;
    }
    expect((thrown as DomainError).code).to.equal('webhook_endpoint_not_configured');
    expect((thrown as DomainError).code).to.equal(NOTIFICATION_REFUSALS.endpointNotConfigured.code);
  });
});
