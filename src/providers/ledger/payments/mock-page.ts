import { escapeHtml } from '../../html';
import type { MockPayment, MockPaymentStatus } from './mock';

/**
 * The mock payment provider's hosted pages: what a payer sees at the `paymentLink`
 * (/api/pay/<paymentId>). Plain, self-contained HTML (inline CSS, no scripts, no external fonts) so
 * it works offline and under a strict Content-Security-Policy. Every value from the payment is
 * escaped: description and payer data come from partners.
 */

const TITLE = 'Mock payment';

const STYLE = `
  body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; background: #f4f5f7; color: #1d2330; margin: 0; }
  main { max-width: 34rem; margin: 3rem auto; background: #fff; border-radius: 12px; padding: 2rem; box-shadow: 0 2px 12px rgba(0,0,0,.08); }
  h1 { font-size: 1.4rem; margin: 0 0 .25rem; }
  .badge { display: inline-block; font-size: .75rem; font-weight: 600; letter-spacing: .04em; text-transform: uppercase;
           background: #fff4d6; color: #8a5a00; border-radius: 999px; padding: .15rem .6rem; }
  .amount { font-size: 2rem; font-weight: 600; margin: 1.25rem 0 .25rem; }
  dl { display: grid; grid-template-columns: 12rem 1fr; gap: .5rem 1rem; margin: 1.5rem 0; }
  dt { color: #5b6475; } dd { margin: 0; word-break: break-word; }
  .actions { display: flex; gap: .75rem; flex-wrap: wrap; }
  button { font: inherit; border: 0; border-radius: 8px; padding: .65rem 1.2rem; cursor: pointer; color: #fff; }
  #pay { background: #1a7f37; } #cancel { background: #c62828; }
  .status { margin-top: 1.5rem; color: #5b6475; }
  .note { font-size: .85rem; color: #5b6475; }
`;

function page(body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'">
<meta name="robots" content="noindex">
<title>${TITLE}</title>
<style>${STYLE}</style>
</head>
<body>
<main>
<span class="badge">Sandbox</span>
<h1>${TITLE}</h1>
${body}
</main>
</body>
</html>
`;
}

function row(label: string, value: string): string {
  const shown = value === '' ? '<span class="note">not provided</span>' : escapeHtml(value);
  return `<dt>${escapeHtml(label)}</dt><dd>${shown}</dd>`;
}

/** The page at the payment link: what is paid, by whom, and the Pay / Cancel buttons while pending. */
export function renderPaymentPage(payment: MockPayment): string {
  const action = escapeHtml(`/api/pay/${encodeURIComponent(payment.paymentId)}/decision`);
  const form =
    payment.status === 'pending'
      ? `<form method="post" action="${action}">
  <p class="note">Choose what the payment provider reports for this payment. No real money moves here.</p>
  <div class="actions">
    <button type="submit" id="pay" name="outcome" value="confirmed">Pay</button>
    <button type="submit" id="cancel" name="outcome" value="failed">Cancel</button>
  </div>
</form>`
      : `<p class="note">This payment is already ${escapeHtml(payment.status)}; nothing more to do here.</p>`;
  return page(`<p class="amount" id="amount"><span id="amount-value">${escapeHtml(payment.amount)}</span> <span id="currency">${escapeHtml(payment.currency)}</span></p>
<dl>
  ${row('Description', payment.description)}
  ${row('Payer document type', payment.payer.documentType)}
  ${row('Payer document number', payment.payer.documentNumber)}
  ${row('Payment', payment.paymentId)}
</dl>
${form}
<p class="status" id="status" role="status">Status: <strong>${escapeHtml(payment.status)}</strong></p>`);
}

const RESULT_TEXT: Record<MockPaymentStatus, string> = {
  confirmed: 'The payment is confirmed.',
  failed: 'The payment failed: it was cancelled.',
  pending: 'The payment is pending.',
};

/** The page shown after the decision POST (or when a decision could not be reported). */
export function renderPaymentResult(status: MockPaymentStatus, options: { paymentId?: string; error?: string } = {}): string {
  const message = options.error ?? RESULT_TEXT[status] ?? `Payment status: ${status}.`;
  const payment = options.paymentId === undefined ? '' : `<p class="note">Payment <code id="payment-id">${escapeHtml(options.paymentId)}</code></p>`;
  return page(`<p id="result" role="status" class="status">Status: <strong>${escapeHtml(status)}</strong></p>
<p>${escapeHtml(message)}</p>
${payment}
<p class="note">You can close this window.</p>`);
}
