/**
 * Labels of common ISO 18245 merchant category codes, for a card transaction's `merchantCategory`
 * (the interface: "label from the code"). A code not listed here is labelled by its range's group.
 */
const LABELS: Readonly<Record<string, string>> = {
  '4111': 'Commuter Transport',
  '4121': 'Taxicabs and Rideshares',
  '4511': 'Airlines',
  '4814': 'Telecommunication Services',
  '4900': 'Utilities',
  '5311': 'Department Stores',
  '5411': 'Grocery Stores and Supermarkets',
  '5499': 'Miscellaneous Food Stores',
  '5541': 'Service Stations',
  '5691': "Men's and Women's Clothing Stores",
  '5732': 'Electronics Stores',
  '5734': 'Computer Software Stores',
  '5812': 'Eating Places and Restaurants',
  '5814': 'Fast Food Restaurants',
  '5912': 'Drug Stores and Pharmacies',
  '5942': 'Book Stores',
  '5999': 'Miscellaneous and Specialty Retail Stores',
  '7011': 'Hotels and Lodging',
  '7372': 'Computer Programming and Data Processing',
  '7832': 'Motion Picture Theaters',
  '8062': 'Hospitals',
};

/** The code ranges of ISO 18245, for codes without a label of their own. */
const RANGES: ReadonlyArray<[number, string]> = [
  [1499, 'Agricultural Services'],
  [2999, 'Contracted Services'],
  [3999, 'Travel and Lodging'],
  [4799, 'Transportation Services'],
  [4999, 'Utility Services'],
  [5599, 'Retail Outlet Services'],
  [5699, 'Clothing Stores'],
  [7299, 'Miscellaneous Stores'],
  [7999, 'Business and Personal Services'],
  [8999, 'Professional Services and Membership Organizations'],
  [9999, 'Government Services'],
];

export function merchantCategoryOf(code: string): string {
  const label = LABELS[code];
  if (label) return label;
  const number = Number(code);
  return RANGES.find(([upTo]) => number <= upTo)?.[1] ?? 'Other';
}
