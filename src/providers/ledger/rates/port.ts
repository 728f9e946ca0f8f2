/** Where exchange rates come from. The default adapter is a configured table. */
export interface AssetInfo {
  asset: string;
  name: string;
  decimals: number;
}

export interface RateSource {
  readonly name: string;
  assets(): AssetInfo[];
  /** Mid rate: how many `to` one `from` buys, as a decimal string; null when the pair is unknown. */
  midRate(from: string, to: string): Promise<string | null>;
}
