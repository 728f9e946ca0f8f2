import { expect } from 'chai';
import { type Decider, type DomainEvent, DomainError } from '../../src/platform/decider';

/** Given/when/then over a decider (as Emmett's DeciderSpecification): reads as the rule it checks. */
export function deciderSpec<S, C, E extends DomainEvent>(decider: Decider<S, C, E>) {
  return {
    given(events: E[]) {
      const state = events.reduce(decider.evolve, decider.initialState());
      return {
        when(command: C) {
          return {
            then(expected: E[]) {
              expect(decider.decide(command, state)).to.deep.equal(expected);
            },
            thenNothingHappens() {
              expect(decider.decide(command, state)).to.deep.equal([]);
            },
            thenThrows(kind: DomainError['kind'], message: string) {
              let thrown: unknown;
              try {
                decider.decide(command, state);
              } catch (error) {
                thrown = error;
              }
              expect(thrown).to.be.instanceOf(DomainError);
              expect((thrown as DomainError).kind).to.equal(kind);
              expect((thrown as DomainError).message).to.equal(message);
            },
          };
        },
      };
    },
  };
}
