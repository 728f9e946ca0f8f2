import type { KycStatus } from '../../domain/identity/kyc-statuses';
import type { InquiryPrefill, InquirySnapshot } from './port';
import { escapeHtml } from '../html';

/**
 * The sandbox identity provider's hosted pages: what a user sees at the `verificationUrl`. Plain,
 * self-contained HTML (inline CSS, no scripts, no external fonts) so it works offline and under a
 * strict Content-Security-Policy. Every value from the inquiry is escaped: prefill data comes from
 * partners and users.
 */

/** Statuses in which the sandbox still takes a decision (needs_review: a reviewer decides). */
const DECIDABLE: readonly KycStatus[] = ['created', 'pending', 'in_progress', 'completed', 'needs_review'];

const STYLE = `
  body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; background: #f4f5f7; color: #1d2330; margin: 0; }
  main { max-width: 34rem; margin: 3rem auto; background: #fff; border-radius: 12px; padding: 2rem; box-shadow: 0 2px 12px rgba(0,0,0,.08); }
  h1 { font-size: 1.4rem; margin: 0 0 .25rem; }
  .badge { display: inline-block; font-size: .75rem; font-weight: 600; letter-spacing: .04em; text-transform: uppercase;
           background: #fff4d6; color: #8a5a00; border-radius: 999px; padding: .15rem .6rem; }
  dl { display: grid; grid-template-columns: 9rem 1fr; gap: .5rem 1rem; margin: 1.5rem 0; }
  dt { color: #5b6475; } dd { margin: 0; word-break: break-word; }
  .actions { display: flex; gap: .75rem; flex-wrap: wrap; }
  button { font: inherit; border: 0; border-radius: 8px; padding: .65rem 1.2rem; cursor: pointer; color: #fff; }
  #approve { background: #1a7f37; } #decline { background: #c62828; } #review { background: #5b6475; }
  .status { margin-top: 1.5rem; color: #5b6475; }
  .note { font-size: .85rem; color: #5b6475; }
`;

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'">
<meta name="robots" content="noindex">
<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>
</head>
<body>
<main>
${body}
</main>
</body>
</html>
`;
}

function row(label: string, value: string | undefined): string {
  const shown = value === undefined || value === '' ? '<span class="note">not provided</span>' : escapeHtml(value);
  return `<dt>${escapeHtml(label)}</dt><dd>${shown}</dd>`;
}

/** The page at `verificationUrl`: the pre-filled data and the approve / decline / review buttons. */
export function renderHostedPage(inquiry: InquirySnapshot & { prefill: InquiryPrefill }): string {
  const p = inquiry.prefill;
  const id = escapeHtml(inquiry.inquiryId);
  const action = escapeHtml(`/sandbox/identity/inquiries/${encodeURIComponent(inquiry.inquiryId)}/decision`);
  const decidable = DECIDABLE.includes(inquiry.status);
  const form = decidable
    ? `<form method="post" action="${action}">
  <p class="note">Choose the outcome the identity provider reports for this person.</p>
  <div class="actions">
    <button type="submit" id="approve" name="outcome" value="approved">Approve</button>
    <button type="submit" id="decline" name="outcome" value="declined">Decline</button>
    <button type="submit" id="review" name="outcome" value="needs_review">Send to review</button>
  </div>
</form>`
    : `<p class="note">This verification is already decided; nothing more to do here.</p>`;
  return page(
    'Sandbox identity verification',
    `<span class="badge">Sandbox</span>
<h1>Sandbox identity verification</h1>
<p class="note">Inquiry <code id="inquiry-id">${id}</code>. No real identity check happens here.</p>
<dl>
  ${row('First name', p.firstName)}
  ${row('Last name', p.lastName)}
  ${row('Email', p.email)}
  ${row('Phone', p.phone)}
  ${row('Date of birth', p.birthDate)}
</dl>
${form}
<p class="status" id="status" role="status">Status: <strong>${escapeHtml(inquiry.status)}</strong></p>`,
  );
}

const DECISION_TEXT: Partial<Record<KycStatus, string>> = {
  approved: 'Your identity has been verified.',
  declined: 'Your identity could not be verified.',
  needs_review: 'Your verification was submitted and is under review.',
  failed: 'The verification failed.',
  expired: 'This verification has expired.',
};

/** The page shown after the decision POST. */
export function renderDecisionPage(status: KycStatus, options: { inquiryId?: string; error?: string } = {}): string {
  const message = options.error ?? DECISION_TEXT[status] ?? `Verification status: ${status}.`;
  const inquiry = options.inquiryId === undefined ? '' : `<p class="note">Inquiry <code id="inquiry-id">${escapeHtml(options.inquiryId)}</code></p>`;
  return page(
    'Sandbox identity verification',
    `<span class="badge">Sandbox</span>
<h1>Sandbox identity verification</h1>
<p id="result" role="status" class="status">Status: <strong>${escapeHtml(status)}</strong></p>
<p>${escapeHtml(message)}</p>
${inquiry}
<p class="note">You can close this window.</p>`,
  );
}
