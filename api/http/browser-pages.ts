// The pages of people's browsers, marked where their routes are declared. The OpenAPI document
// (api/schema/openapi.ts) describes the API that programs call; a page a person's browser shows,
// its forms, its assets and the JSON its own script asks for are left out of it, and the test
// that holds the document to the routes (test/unit/schema/openapi.test.ts) must know which are
// which. A route that does not mark its page is one the document must describe.

/** Every path marked with `browserPage`, once the routers that declare them are built. */
const pages = new Set<string>();

/** `path`, as it was, noted as a page of people's browsers: `router.get(browserPage('/auth/sign-in'), …)`. */
export function browserPage<Path extends string>(path: Path): Path {
  pages.add(path);
  return path;
}

/** The paths marked so far (route paths: `/auth/upstream/:id`). */
export function browserPages(): ReadonlySet<string> {
  return pages;
}
