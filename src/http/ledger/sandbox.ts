import { type Static, Type } from '@sinclair/typebox';
import { MockPaymentConflictError } from '../../providers/ledger/payments/mock';
import { renderPaymentPage, renderPaymentResult } from '../../providers/ledger/payments/mock-page';
import { MockPayoutConflictError } from '../../providers/ledger/payouts/mock';
import { LEDGER_REFUSALS as L } from '../../domain/ledger';
import { routeFor } from '../../platform/http/route';
import { type AppServices, sandboxOf } from '../services';
import { HtmlPage, StringEnum, Success, UUID_RE } from '../schemas';

/** The services these routes use. */
const USES = ['providers', 'ledger'] as const;
type Services = Pick<AppServices, (typeof USES)[number]>;
const route = routeFor<AppServices>()(USES);

/** A transaction of one of the partner's users, by uuid or by the provider's payment id. */
async function ownTransaction(services: Services, partnerId: string, where: { uuid?: string; paymentId?: string }) {
  const row = await services.ledger.reads.paymentOf(where);
  if (!row || row.partner_id !== partnerId) throw L.transactionNotFound();
  return row;
}

const TransactionParams = Type.Object({
  transactionId: Type.String({ maxLength: 100, description: 'The deposit’s `transactionId`, a deposit of one of the partner’s users; anything else is 404' }),
});
/** The payout's id (its answer's `paymentId`), or the mock payment's (in the deposit's `paymentLink`). */
const PaymentParams = (description: string) => Type.Object({ paymentId: Type.String({ maxLength: 100, description }) });
const PayoutParams = PaymentParams('The payout’s `paymentId`, from the payout’s answer; a payout of one of the partner’s users, else 404');
const PaymentPageParams = PaymentParams('The mock payment’s id, the last part of the deposit’s `paymentLink` path (`pay_mock_...`)');
/**
 * The same body, under the same name (SandboxReasonRequest), as the card issuer's decisions
 * (src/http/cards/operations.ts): the document refuses two different schemas under one name, so a
 * description of `reason` must be given to both at once.
 */
/**
 * The body of a sandbox provider's decision that may carry a reason (a payout's failure, a card
 * application's decline; the reference names it SandboxReasonRequest, one shape for both).
 */
export const SandboxReasonBody = Type.Object({
  reason: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 200,
      description:
        'Why the provider decides so (1-200 characters), carried in its signed callback when it declines or fails; its default reason when left out. Ignored when approving or settling',
    }),
  ),
});
const FailBody = SandboxReasonBody;
const DecisionBody = Type.Object({
  outcome: StringEnum(['confirmed', 'failed'] as const, { description: 'The button pressed: `confirmed` (Pay) or `failed` (Cancel)' }),
});

const Decided = Success(
  Type.Object(
    {
      transactionId: Type.String({ description: 'The ledger transaction’s `uuid` (the deposit’s or payout’s `transactionId`)' }),
      paymentId: Type.String({ description: 'The provider’s id for the payment (`pay_mock_...`) or payout (`po_mock_...`)' }),
      eventId: Type.String({ description: 'The id of the signed callback the provider sent for the decision, its event id' }),
    },
    { $id: 'ProviderDecision' },
  ),
);

const depositDecision = (action: 'confirm' | 'fail') =>
  route<unknown, unknown, Static<typeof TransactionParams>>({
    method: 'post',
    path: `/sandbox/v1/deposits/{transactionId}/${action}`,
    auth: 'partner',
    tag: 'Sandbox',
    summary: `The mock payment provider ${action === 'confirm' ? 'confirms' : 'fails'} a deposit's payment and sends its signed webhook.`,
    params: TransactionParams,
    responses: { 202: { description: 'Decided and delivered', schema: Decided }, 409: { description: 'Already decided otherwise' } },
    refuses: [L.transactionNotFound, L.paymentAlreadyDecided],
    async handler({ services, params, partnerId }) {
      const sandbox = sandboxOf(services);
      if (!UUID_RE.test(params.transactionId)) throw L.transactionNotFound();
      const txn = await ownTransaction(services, partnerId, { uuid: params.transactionId.toLowerCase() });
      if (txn.kind !== 'DEPOSIT' || !txn.payment_id) throw L.transactionNotFound();
      try {
        const eventId = await sandbox.payments.decide(txn.payment_id, action === 'confirm' ? 'confirmed' : 'failed');
        return { status: 202, body: { success: true, data: { transactionId: txn.uuid, paymentId: txn.payment_id, eventId } } };
      } catch (error) {
        if (error instanceof MockPaymentConflictError) throw L.paymentAlreadyDecided(error.paymentId, error.status);
        throw error;
      }
    },
  });

const payoutDecision = (action: 'settle' | 'fail') =>
  route<Static<typeof FailBody>, unknown, Static<typeof PayoutParams>>({
    method: 'post',
    path: `/sandbox/v1/payouts/{paymentId}/${action}`,
    auth: 'partner',
    tag: 'Sandbox',
    summary: `The mock payout provider ${action === 'settle' ? 'settles' : 'fails'} a payout and sends its signed webhook.`,
    params: PayoutParams,
    body: FailBody,
    responses: { 202: { description: 'Decided and delivered', schema: Decided }, 409: { description: 'Already decided otherwise' } },
    refuses: [L.transactionNotFound, L.payoutAlreadyDecided],
    async handler({ services, params, body, partnerId }) {
      const sandbox = sandboxOf(services);
      const txn = await ownTransaction(services, partnerId, { paymentId: params.paymentId });
      if (txn.kind !== 'PAYOUT') throw L.transactionNotFound();
      try {
        const eventId = await sandbox.payouts.decide(params.paymentId, action === 'settle' ? 'settled' : 'failed', body.reason);
        return { status: 202, body: { success: true, data: { transactionId: txn.uuid, paymentId: params.paymentId, eventId } } };
      } catch (error) {
        if (error instanceof MockPayoutConflictError) throw L.payoutAlreadyDecided(error.paymentId, error.status);
        throw error;
      }
    },
  });

export const sandboxLedgerRoutes = [
  depositDecision('confirm'),
  depositDecision('fail'),
  payoutDecision('settle'),
  payoutDecision('fail'),
  route<unknown, unknown, Static<typeof PaymentPageParams>>({
    method: 'get',
    path: '/api/pay/{paymentId}',
    auth: 'public',
    tag: 'Sandbox',
    summary: "The mock payment provider's hosted payment page (the deposit's paymentLink).",
    params: PaymentPageParams,
    responses: { 200: { description: 'HTML page', schema: HtmlPage } },
    refuses: [L.paymentNotFound],
    async handler({ services, params }) {
      const payment = await sandboxOf(services).payments.findPayment(params.paymentId);
      if (!payment) throw L.paymentNotFound();
      return { status: 200, body: renderPaymentPage(payment), contentType: 'text/html; charset=utf-8' };
    },
  }),
  route<Static<typeof DecisionBody>, unknown, Static<typeof PaymentPageParams>>({
    method: 'post',
    path: '/api/pay/{paymentId}/decision',
    auth: 'public',
    tag: 'Sandbox',
    summary: 'The payment page’s Pay and Cancel buttons.',
    params: PaymentPageParams,
    body: DecisionBody,
    forms: true,
    responses: { 200: { description: 'HTML page', schema: HtmlPage } },
    refuses: [L.paymentNotFound],
    async handler({ services, params, body }) {
      const sandbox = sandboxOf(services);
      if (!(await sandbox.payments.findPayment(params.paymentId))) throw L.paymentNotFound();
      try {
        await sandbox.payments.decide(params.paymentId, body.outcome);
      } catch (error) {
        if (!(error instanceof MockPaymentConflictError)) throw error;
      }
      const payment = await sandbox.payments.findPayment(params.paymentId);
      return { status: 200, body: renderPaymentResult(payment?.status ?? body.outcome), contentType: 'text/html; charset=utf-8' };
    },
  }),
];
