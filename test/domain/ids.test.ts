import { expect } from 'chai';
import { eventIdFor, uuidV5 } from '../../src/domain/ids';

/** Event ids must never drift: a command retried across a release must append the same ids. */
describe('name-based ids (golden values)', () => {
  it('computes RFC 4122 version 5 UUIDs (the RFC example: www.example.com in the DNS namespace)', () => {
    expect(uuidV5('www.example.com', '6ba7b810-9dad-11d1-80b4-00c04fd430c8')).to.equal('2ed6657d-e927-568b-95e1-2665a8aea6a2');
  });

  it('derives event ids from the command, the stream and the index as it always did (UTF-8 names too)', () => {
    expect(eventIdFor('cmd-1', 'account-7', 2)).to.equal('c82dec94-eb2f-5cde-b575-7555367bb62f');
    expect(uuidV5('Zoë €')).to.equal('6474dad6-dd2f-5676-acd5-22af1ed5d95a');
  });
});
