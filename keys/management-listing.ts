/** API Gateway's largest page of a management listing (`limit`). */
export const PAGE_SIZE = 500
/** Pages a listing may take: 100,000 items, ten times AWS's key ceiling; more is a runaway. */
export const MAX_LISTING_PAGES = 200

/** Why a listing could not be read whole. */
export type ListingFailure =
  | { kind: 'repeated-position'; page: number }
  | { kind: 'endless'; pages: number }

/**
 * Every item of an API Gateway management listing (GetApiKeys, GetUsagePlans,
 * GetUsagePlanKeys), page after page. A position that comes back again, or a listing past
 * MAX_LISTING_PAGES, fails with `fail(failure)`: stopping there would act on part of the listing
 * without a word.
 */
export const readWholeListing = async <Item>(
  page: (position: string | undefined) => Promise<{ items?: Item[]; position?: string }>,
  fail: (failure: ListingFailure) => Error,
): Promise<Item[]> => {
  const items: Item[] = []
  const seen = new Set<string>()
  let position: string | undefined
  for (let count = 1; count <= MAX_LISTING_PAGES; count += 1) {
    const result = await page(position)
    items.push(...(result.items ?? []))
    if (!result.position) return items
    if (seen.has(result.position)) throw fail({ kind: 'repeated-position', page: count })
    seen.add(result.position)
    position = result.position
  }
  throw fail({ kind: 'endless', pages: MAX_LISTING_PAGES })
}
