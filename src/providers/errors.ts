/** Failures every provider adapter reports the same way: a call that failed, a callback whose signature is wrong. */

/** A call to a provider failed or was refused (the use case decides what that means for its caller). */
export class ProviderError extends Error {
  constructor(
    message: string,
    readonly provider: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'ProviderError';
  }
}

export class WebhookSignatureError extends Error {
  constructor(message = 'Invalid webhook signature') {
    super(message);
    this.name = 'WebhookSignatureError';
  }
}
