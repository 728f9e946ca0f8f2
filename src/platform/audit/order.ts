/**
 * Stream names in UTF-8 byte order (= code point order), the order of the checkpoint tree's leaves.
 * JavaScript's `<` compares UTF-16 code units, which differs only where one string has a surrogate
 * (a code point above U+FFFF) and the other a unit in U+E000..U+FFFF; those two are swapped here.
 */
export function compareUtf8(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    if (x >= 0xd800 && y >= 0xd800) {
      x = x >= 0xe000 ? x - 0x800 : x + 0x2000;
      y = y >= 0xe000 ? y - 0x800 : y + 0x2000;
    }
    return x - y;
  }
  return a.length - b.length;
}

/** Names in UTF-8 byte order: the native sort when no name has a unit where UTF-16 and UTF-8 orders part (most of the time, and much faster). */
export function sortUtf8(names: string[]): string[] {
  return names.some((n) => /[\uD800-\uFFFF]/.test(n)) ? names.sort(compareUtf8) : names.sort();
}
