/**
 * A JSON answer's body as the tests read it. Tests read answers loosely on purpose: each test states the value it
 * expects (`expect(res.body["license"].id).toBe(…)`), so a wrong shape fails that assertion; typing every answer here
 * would copy the route schemas (src/routes/*) into the tests. Type-only: workerd and Node tests both import it.
 */
// biome-ignore lint/suspicious/noExplicitAny: the one loose type of the tests, for the reason above.
export type JsonBody = Record<string, any>;
