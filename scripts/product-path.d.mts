/** Each endpoint: its handler in the controller, its use case, and product middleware app.ts runs for it. */
export declare const ENDPOINTS: Record<
  'listPets' | 'createPet' | 'getPet',
  { handler: string; useCase: string; middleware: string[] }
>;
/** The product files one endpoint's request runs through, sorted. */
export declare function productPath(endpoint: keyof typeof ENDPOINTS): string[];
