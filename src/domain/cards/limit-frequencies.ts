/** The spending limit's frequencies (docs/interface.md, "Cards"), in Rain's spelling. */
export const LIMIT_FREQUENCIES = ['per24HourPeriod', 'per7DayPeriod', 'per30DayPeriod', 'perYearPeriod', 'perAuthorization', 'allTime'] as const;
export type LimitFrequency = (typeof LIMIT_FREQUENCIES)[number];
